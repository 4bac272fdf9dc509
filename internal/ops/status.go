package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/cutover/cutover/eventlog"
	"github.com/cutover/cutover/events"
)

// StatusRequest is `cutover migrate status`: one migration's state, or the
// recent migrations.
type StatusRequest struct {
	// NATS is the deployment's URL (several comma separated).
	NATS string
	// ID is the migration to show, unless List.
	ID string
	// List lists the recent migrations instead, newest first.
	List bool
	// Limit is how many recent migrations List lists; 0 lists all.
	Limit int
	// Active makes List list only the migrations that have not ended.
	Active bool
	// JSON prints JSON.
	JSON bool
	// Follow prints migration ID's events as they happen, every one, until
	// it ends; After resumes after that stream sequence (the "seq" of the
	// last event printed), 0 from the first.
	Follow bool
	After  uint64
	// Timeout bounds Follow (0: none; the migration goes on).
	Timeout time.Duration
}

// Status prints migration r.ID's state (waiting up to 2 s for a
// just-started one), or with r.List a table of the recent migrations. It
// returns an error wrapping ErrUsage for a malformed id or a negative
// limit, before connecting; any other error when the deployment cannot be
// reached or the migration is unknown. A migration that has rolled back
// shows it: its status says it is retrying and how many attempts rolled
// back, and one row (JSON: rollbacks) per rolled-back attempt gives its
// phase and reason. Any goroutine may call it.
func Status(ctx context.Context, r StatusRequest, stdout io.Writer) error {
	if !r.List {
		if err := parseMigrationID(r.ID); err != nil {
			return err
		}
	}
	if r.Limit < 0 {
		return fmt.Errorf("%w: --limit must be >= 0", ErrUsage)
	}
	if r.Follow && r.List {
		return fmt.Errorf("%w: --follow needs a migration ID", ErrUsage)
	}
	o, err := dial(ctx, r.NATS)
	if err != nil {
		return err
	}
	defer o.Close()
	if r.Follow {
		return follow(ctx, o, r, stdout)
	}
	if !r.List {
		st, seq, err := awaitMigration(ctx, o, r.ID, 2*time.Second)
		if err != nil {
			return err
		}
		var rbs []RollbackJSON
		if st.Attempt > 1 || st.Phase == events.PhaseRolledBack || st.Status.Terminal() {
			h, err := o.orch.History(ctx, r.ID)
			if err != nil {
				return err
			}
			rbs = rollbacksOf(h)
		}
		if r.JSON {
			j := toStateJSON(st, seq)
			j.Rollbacks = rbs
			return writeJSON(stdout, j)
		}
		printState(stdout, st)
		printRollbacks(stdout, rbs)
		return nil
	}
	lasts, err := lastEvents(ctx, o.js)
	if err != nil {
		return err
	}
	var rows []eventlog.Entry
	for _, l := range lasts {
		if l.Event.State == nil || l.Event.MigrationID == "" || (r.Active && l.Event.State.Status.Terminal()) || adminAudit(l.Event) {
			continue
		}
		rows = append(rows, l)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Event.Time.After(rows[j].Event.Time) })
	if r.Limit > 0 && len(rows) > r.Limit {
		rows = rows[:r.Limit]
	}
	if r.JSON {
		out := make([]StateJSON, 0, len(rows))
		for _, row := range rows {
			out = append(out, toStateJSON(row.Event.State, row.Seq))
		}
		return writeJSON(stdout, out)
	}
	if len(rows) == 0 {
		fmt.Fprintln(stdout, "no migrations")
		return nil
	}
	fmt.Fprintf(stdout, "%-32s  %-28s  %-20s  %-18s  %-9s  %-14s  %s\n", "ID", "RESOURCE", "ROUTE", "PHASE", "STATUS", "UPDATED", "REASON")
	for _, row := range rows {
		st := row.Event.State
		what := st.Resource
		if st.Fanout != nil {
			what = fmt.Sprintf("tenant %s (%d/%d)", st.Fanout.Tenant, st.Fanout.Finished(), len(st.Fanout.Resources))
		}
		fmt.Fprintf(stdout, "%-32s  %-28s  %-20s  %-18s  %-9s  %-14s  %s\n", st.ID, what, route(st), st.Phase, statusWord(st),
			row.Event.Time.UTC().Format("01-02 15:04:05"), st.Reason)
	}
	return nil
}

// adminAudit reports whether e is the one event of a two-person command's
// admin aggregate (its audit event or its refusal): not a migration, never
// listed as one (`cutover history RESOURCE` shows it).
func adminAudit(e *events.Envelope) bool {
	if e.State == nil || e.State.Resource != "" {
		return false
	}
	switch e.Body.(type) {
	case events.ForceReleased, events.FenceForceCleared, events.AdminRefused:
		return true
	}
	return false
}

// follow is `migrate status ID --follow`: every event of the migration after
// r.After as it happens (a JSON line each with its "seq", or a line of
// text), until the migration ends, r.Timeout passes, or the NATS
// connection is lost (an error, never a hang). Anyone may follow any
// migration, however it was started.
func follow(ctx context.Context, o *conn, r StatusRequest, stdout io.Writer) error {
	st, seq, err := awaitMigration(ctx, o, r.ID, 2*time.Second)
	if err != nil {
		return err
	}
	if st.Status.Terminal() && seq <= r.After { // nothing after it: it has ended
		if !r.JSON {
			fmt.Fprintln(stdout, summaryLine(st))
		}
		return nil
	}
	ctx, cancel := withTimeout(ctx, r.Timeout)
	defer cancel()
	var last *events.State
	var t0 time.Time
	err = followEvents(ctx, o, r.ID, r.After, io.Discard, func(seq uint64, e *events.Envelope) bool {
		if t0.IsZero() {
			t0 = e.Time
		}
		if r.JSON {
			_ = writeJSONLine(stdout, toEventJSON(seq, e))
		} else {
			fmt.Fprintf(stdout, "%6d  %s\n", seq, eventLine(e, t0))
		}
		if e.State != nil {
			last = e.State
		}
		return last != nil && last.Status.Terminal() && e.State != nil
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("migration %s still running after %s; it goes on", r.ID, r.Timeout)
		}
		return err
	}
	if !r.JSON && last != nil {
		fmt.Fprintln(stdout, summaryLine(last))
	}
	return nil
}

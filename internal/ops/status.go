package ops

import (
	"context"
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
	o, err := dial(ctx, r.NATS)
	if err != nil {
		return err
	}
	defer o.Close()
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

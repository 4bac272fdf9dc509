package ops

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
)

// How the operator commands show events, states and routing documents as
// text. Tokens are always redacted.

// route is "source → target" ("?" before the source is known).
func route(st *events.State) string {
	src := st.Source
	if src == "" {
		src = "?"
	}
	return src + " → " + st.Target
}

// eventLine is one row of a timeline.
func eventLine(e *events.Envelope, t0 time.Time) string {
	phase := ""
	if e.State != nil {
		phase = string(e.State.Phase)
	}
	return fmt.Sprintf("%-12s  %+8.3fs  %-18s  %-18s  %s", e.Time.UTC().Format("15:04:05.000"), e.Time.Sub(t0).Seconds(), e.Type, phase, describe(e))
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

func ms(v int64) string { return (time.Duration(v) * time.Millisecond).String() }

// describe gives an event's key fields in a few words; tokens are redacted.
func describe(e *events.Envelope) string {
	switch b := e.Body.(type) {
	case events.Requested:
		s := fmt.Sprintf("%s → %s, attempt %d/%d, token %s", b.Resource, b.Target, b.Attempt, b.MaxAttempts, kvrouting.Token(b.Token).Redacted())
		if b.MaxWriteBlock > 0 {
			s += ", write-block budget " + b.MaxWriteBlock.String()
		}
		return s
	case events.PreLocked:
		return fmt.Sprintf("source %s; converged after %s; lease until %s", b.Source, clock(b.WaitUntil), b.Expiry.UTC().Format(time.RFC3339))
	case events.Dropped:
		return b.Reason
	case events.HardDeleteLocked:
		line := "deletes become tombstones; lease until " + clock(b.Expiry)
		if len(b.Services) > 0 {
			line += "; historical copy of " + strings.Join(b.Services, ",")
		}
		return line
	case events.PageCopied:
		return pageLine(b.Service, b.Count, b.Cursor, b.Next, b.More, b.Dependents)
	case events.Renewed:
		return "lease until " + clock(b.Expiry)
	case events.WriteLocked:
		return "writes get 423 until swap; lease until " + clock(b.Expiry)
	case events.DeltaCopied:
		return pageLine(b.Service, b.Count, b.Cursor, b.Next, b.More, b.Dependents)
	case events.PagesCopied:
		return describePages(e, b.Pages)
	case events.DeltasCopied:
		return describePages(e, b.Pages)
	case events.Validated:
		if b.OK {
			return fmt.Sprintf("ok: %d slices in %s", b.Slices, b.Duration.Round(time.Microsecond))
		}
		return "FAILED: " + b.Detail
	case events.Swapped:
		var parts []string
		if n := len(b.Deltas); n > 0 {
			recs := 0
			for _, d := range b.Deltas {
				recs += d.Count
			}
			parts = append(parts, fmt.Sprintf("last delta: %d records in %d pages", recs, n))
		}
		if v := b.Validation; v != nil {
			parts = append(parts, fmt.Sprintf("validated %d slices in %s", v.Slices, v.Duration.Round(time.Microsecond)))
		}
		if e.State != nil {
			parts = append(parts, "primary is now "+e.State.Target)
		}
		if !b.CleanupAt.IsZero() {
			parts = append(parts, "source cleanup at "+b.CleanupAt.UTC().Format(time.RFC3339))
		}
		if len(parts) > 0 {
			return strings.Join(parts, "; ")
		}
	case events.CleanupScheduled:
		return "source cleanup at " + b.At.UTC().Format(time.RFC3339)
	case events.Completed:
		return figuresLine(b.Figures)
	case events.CleanedUp:
		return fmt.Sprintf("%d source records deleted", b.Records)
	case events.StepFailed:
		return string(b.Phase) + ": " + b.Error
	case events.RolledBack:
		return fmt.Sprintf("%s (in %s)", b.Reason, b.Phase)
	case events.Rescheduled:
		return fmt.Sprintf("attempt %d at %s, token %s", b.Attempt, clock(b.At), kvrouting.Token(b.Token).Redacted())
	case events.Failed:
		return b.Reason
	case events.ChildStarted:
		return b.Resource + " as " + b.MigrationID
	case events.CancelRequested:
		return b.Reason
	case events.Paused:
		s := "paused"
		if b.ByParent {
			s += " by its tenant move"
		}
		if b.Reason != "" {
			s += ": " + b.Reason
		}
		if st := e.State; st != nil && (st.Phase == events.PhaseDelta || st.Phase == events.PhaseValidated) {
			s += " (takes effect after the swap or the rollback)"
		}
		return s
	case events.Resumed:
		if e.State != nil && e.State.PausedFor > 0 {
			return "resumed; paused " + e.State.PausedFor.Round(time.Millisecond).String() + " in all"
		}
		return "resumed"
	case events.Throttled:
		s := ""
		if b.Concurrency > 0 {
			s = fmt.Sprintf("concurrency %d, ", b.Concurrency)
		}
		if b.Rate > 0 {
			s += fmt.Sprintf("rate %d records/s", b.Rate)
		} else {
			s += "no rate cap"
		}
		if b.Auto {
			s = "brake: " + s + " (" + b.Reason + ")"
		}
		return s
	case events.TenantStarted:
		return fmt.Sprintf("tenant %s → %s: %d resources, concurrency %d", b.Tenant, b.Target, len(b.Resources), b.Concurrency)
	case events.TenantProgress:
		var parts []string
		if b.Finished != "" {
			parts = append(parts, fmt.Sprintf("%s %s", b.Finished, b.Outcome))
		}
		if b.Started != "" {
			parts = append(parts, fmt.Sprintf("started %s as %s", b.Started, b.StartedID))
		}
		return strings.Join(parts, "; ")
	case events.ForceReleased:
		return fmt.Sprintf("%s released by %s: %s", b.Resource, approvedBy(b.Approvers, b.ApprovalIDs), b.Reason)
	case events.FenceForceCleared:
		s := fmt.Sprintf("%s authority repaired at %s (%s; %s → %s) by %s: %s", b.Resource, b.Region, strings.Join(b.Services, ", "), b.Previous, b.Repaired, approvedBy(b.Approvers, b.ApprovalIDs), b.Reason)
		if b.Failed != "" {
			s += "; stopped: " + b.Failed
		}
		if b.Note != "" {
			s += "; " + b.Note
		}
		return s
	case events.AdminRefused:
		return fmt.Sprintf("%s of %s refused (%s): %s", b.Command, b.Resource, b.Code, b.Refusal)
	}
	return ""
}

func pageLine(svc string, n int, from, to uint64, more bool, deps []string) string {
	s := fmt.Sprintf("%s: %d records, cursor %d → %d", svc, n, from, to)
	if !more {
		s += ", done"
	}
	if len(deps) > 0 {
		s += ", dependents " + strings.Join(deps, ",")
	}
	return s
}

func figuresLine(f events.Figures) string {
	s := fmt.Sprintf("total %s: pre-lock %s, historical %s, write lock %s, cutover %s; %d records, %d attempt(s)",
		ms(f.TotalMs), ms(f.PreLockMs), ms(f.HistoricalMs), ms(f.WriteLockMs), ms(f.CutoverMs), f.Records, f.Attempts)
	if f.WriteBlockedMs != f.WriteLockMs && f.WriteBlockedMs > 0 { // rolled-back attempts blocked writes too
		s += fmt.Sprintf("; writes blocked %s in all", ms(f.WriteBlockedMs))
	}
	return s
}

// summaryLine is the last line of a followed migration.
func summaryLine(st *events.State) string {
	switch st.Status {
	case events.StatusCompleted:
		if st.Figures != nil {
			return "completed: " + figuresLine(*st.Figures)
		}
		return "completed"
	case events.StatusDropped:
		return "dropped: " + st.Reason
	}
	return fmt.Sprintf("%s: %s", st.Status, st.Reason)
}

func printState(w io.Writer, st *events.State) {
	row := func(k, format string, args ...any) { fmt.Fprintf(w, "%-11s %s\n", k, fmt.Sprintf(format, args...)) }
	row("migration", "%s", st.ID)
	if f := st.Fanout; f != nil {
		row("tenant", "%s → %s", f.Tenant, f.Target)
		row("status", "%s", st.Status)
		row("progress", "%d/%d finished: %d completed, %d failed, %d dropped; %d active (concurrency %d)",
			f.Finished(), len(f.Resources), f.Completed, f.Failed, f.Dropped, len(f.Active), f.Concurrency)
		pausedRow(row, st)
		if f.Rate > 0 || f.Brakes > 0 || f.MaxWriteLockP99 > 0 || f.MaxSourceLatency > 0 {
			line := throttleText(st)
			if f.MaxWriteLockP99 > 0 {
				line += fmt.Sprintf("; brake at write-lock p99 %s", f.MaxWriteLockP99)
			}
			if f.MaxSourceLatency > 0 {
				line += fmt.Sprintf("; brake at source latency %s", f.MaxSourceLatency)
			}
			if f.Brakes > 0 {
				line += fmt.Sprintf("; braked %d time(s), last: %s", f.Brakes, f.BrakeReason)
			}
			row("throttle", "%s", line)
		}
		for _, c := range f.Active {
			row("active", "%s (%s)", c.Resource, c.MigrationID)
		}
	} else {
		row("resource", "%s  %s", st.Resource, route(st))
		status := string(st.Status)
		if n := rolledBack(st); n > 0 {
			status += fmt.Sprintf(" (retrying: %d attempt(s) rolled back)", n)
		}
		row("status", "%s, phase %s, attempt %d/%d", status, st.Phase, st.Attempt, st.MaxAttempts)
		if st.Tenant != "" || st.Parent != "" {
			row("parent", "%s (tenant %q)", st.Parent, st.Tenant)
		}
		if !st.Status.Terminal() {
			if !st.LockExpiry.IsZero() {
				row("lock", "token %s, lease until %s", kvrouting.Token(st.Token).Redacted(), st.LockExpiry.UTC().Format(time.RFC3339Nano))
			}
			if !st.WaitUntil.IsZero() && st.WaitUntil.After(time.Now()) {
				row("waiting", "until %s", st.WaitUntil.UTC().Format(time.RFC3339Nano))
			}
			if st.Abort != "" {
				row("aborting", "%s", st.Abort)
			}
			pausedRow(row, st)
			if st.Rate > 0 {
				row("throttle", "%s", throttleText(st))
			}
		}
		if st.WriteBlocked > 0 || st.MaxWriteBlock > 0 {
			budget := "the write lease"
			if st.MaxWriteBlock > 0 {
				budget = st.MaxWriteBlock.String()
			}
			row("blocked", "writes blocked %s (budget %s)", st.WriteBlocked.Round(time.Millisecond), budget)
		}
		for _, s := range st.Services {
			row("service", "%-14s %d pages, %d records (historical done %v, delta done %v)", s.Service, s.Pages, s.Records, s.HistoricalDone, s.DeltaDone)
		}
		if len(st.Children) > 0 {
			row("children", "%s", strings.Join(st.Children, ", "))
		}
		if st.Figures != nil {
			row("figures", "%s", figuresLine(*st.Figures))
		}
	}
	if st.Reason != "" {
		row("reason", "%s", st.Reason)
	}
	row("requested", "%s", st.RequestedAt.UTC().Format(time.RFC3339Nano))
	if !st.EndedAt.IsZero() {
		row("ended", "%s (after %s)", st.EndedAt.UTC().Format(time.RFC3339Nano), st.EndedAt.Sub(st.RequestedAt).Round(time.Millisecond))
	}
	row("events", "%d", st.Events)
}

// pausedRow prints a paused migration's or tenant move's pause.
func pausedRow(row func(k, format string, args ...any), st *events.State) {
	if !st.Paused {
		return
	}
	line := "since " + st.PausedAt.UTC().Format(time.RFC3339)
	if st.PausedByParent {
		line += ", by its tenant move"
	}
	if st.PauseReason != "" {
		line += ": " + st.PauseReason
	}
	if st.Phase == events.PhaseDelta || st.Phase == events.PhaseValidated {
		line += " (takes effect after the swap or the rollback)"
	}
	row("paused", "%s", line)
}

// rolledBack is how many attempts of an active migration have rolled back
// (0 for an ended one): its current attempt when it is in the rolled-back
// phase, and every attempt before the current one (a fresh attempt follows
// only a rollback). A migration retrying after a rollback is not simply
// "active".
func rolledBack(st *events.State) int {
	if st.Status.Terminal() || st.Fanout != nil {
		return 0
	}
	n := max(st.Attempt-1, 0)
	if st.Phase == events.PhaseRolledBack {
		n++
	}
	return n
}

// statusWord is the STATUS column of the migration list: "retrying" for
// an active migration that has rolled back.
func statusWord(st *events.State) string {
	if rolledBack(st) > 0 {
		return "retrying"
	}
	return string(st.Status)
}

// rollbacksOf lists the rolled-back attempts in a migration's history.
func rollbacksOf(h []*events.Envelope) []RollbackJSON {
	var out []RollbackJSON
	for _, e := range h {
		if b, ok := e.Body.(events.RolledBack); ok && e.State != nil {
			out = append(out, RollbackJSON{Attempt: e.State.Attempt, Phase: string(b.Phase), Reason: b.Reason, Time: rfc(e.Time)})
		}
	}
	return out
}

// printRollbacks prints one row per rolled-back attempt.
func printRollbacks(w io.Writer, rbs []RollbackJSON) {
	for _, rb := range rbs {
		fmt.Fprintf(w, "%-11s %s\n", "rolled back", fmt.Sprintf("attempt %d in %s at %s: %s", rb.Attempt, rb.Phase, rb.Time, rb.Reason))
	}
}

func lockLine(l kvrouting.Lock) string {
	if l.IsZero() {
		return "no lock"
	}
	now := time.Now()
	state := "in force"
	switch {
	case now.Before(l.NotBefore):
		state = "restricts from " + rfc(l.NotBefore)
	case !now.Before(l.Expiry):
		state = "expired"
	}
	return fmt.Sprintf("%s lock, token %s, until %s (%s)", l.Type, l.Token.Redacted(), rfc(l.Expiry), state)
}

func printRouting(w io.Writer, d *kvrouting.Document) {
	row := func(k, format string, args ...any) { fmt.Fprintf(w, "%-10s %s\n", k, fmt.Sprintf(format, args...)) }
	row("resource", "%s (revision %d, leader read)", d.Resource, d.Revision)
	row("key", "ROUTING %s", routingKey(d))
	row("primary", "%-10s %s", d.Primary.Region, lockLine(d.Primary.Lock))
	if d.Secondary != nil {
		row("secondary", "%-10s %s", d.Secondary.Region, lockLine(d.Secondary.Lock))
	}
	if d.MigrationID != "" {
		row("migration", "%s → %s (pre-lock lease until %s)", d.MigrationID, d.Target, rfc(d.PreLockExpiry))
	}
	if d.LastMigrationID != "" {
		row("last", "%s", d.LastMigrationID)
	}
	row("updated", "%s", rfc(d.UpdatedAt))
}

// routingKey is the KV key of d's resource in the ROUTING bucket (the id
// escaped: kvrouting.Resource.Key).
func routingKey(d *kvrouting.Document) string {
	res, err := kvrouting.ParseResource(d.Resource)
	if err != nil {
		return "?"
	}
	return res.Key()
}

// heldLocks lists a document's locks, e.g. "pre lock at us-east, secondary
// lock at eu-west".
func heldLocks(d *kvrouting.Document) string {
	var out []string
	for _, l := range []*kvrouting.Location{&d.Primary, d.Secondary} {
		if l != nil && !l.Lock.IsZero() {
			out = append(out, fmt.Sprintf("%s lock at %s", l.Lock.Type, l.Region))
		}
	}
	if d.MigrationID != "" {
		out = append(out, "migration "+d.MigrationID)
	}
	return strings.Join(out, ", ")
}

// describePages describes a round of pages (one per service), each as its
// single-page event would be.
func describePages[T events.Body](e *events.Envelope, pages []T) string {
	lines := make([]string, len(pages))
	for i, p := range pages {
		one := *e
		one.Body = p
		lines[i] = describe(&one)
	}
	return strings.Join(lines, "; ")
}

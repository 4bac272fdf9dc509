package orchestrator

import (
	"fmt"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
)

// action is what a step does next: one method of the phase engine. Which
// one runs follows from the folded state alone (nextAction); the method
// then does its phase's I/O and decides its own waits.
type action uint8

const (
	actFail               action = iota + 1 // record Failed
	actAck                                  // nothing left to do: acknowledge the work
	actTenant                               // a tenant fan-out's step (tenant.go)
	actCleanSource                          // line 20: delete the source once the window has passed
	actRollback                             // lines 15–16
	actPreLock                              // Phase 1, line 2
	actAwaitConvergence                     // line 3, then line 5
	actEscalateHardDelete                   // Phase 2, line 5 (the wait's step did not)
	actHistorical                           // lines 6–10, then line 12
	actDelta                                // line 13, then lines 14–19
	actSwap                                 // Phase 4, line 19, after a validation recorded on its own
	actScheduleCleanup                      // line 20, after a swap that could not schedule it
	actComplete                             // the migration's end (children started first)
	actReschedule                           // line 16: "retry the migration later with a fresh lock"
	actPaused                               // an operator's pause: hold, renewing the locks held
)

var actionNames = [...]string{
	actFail: "fail", actAck: "ack", actTenant: "tenant", actCleanSource: "clean-source",
	actRollback: "rollback", actPreLock: "pre-lock", actAwaitConvergence: "await-convergence",
	actEscalateHardDelete: "escalate-hard-delete",
	actHistorical:         "historical", actDelta: "delta", actSwap: "swap",
	actScheduleCleanup: "schedule-cleanup", actComplete: "complete", actReschedule: "reschedule",
	actPaused: "paused",
}

func (a action) String() string {
	if int(a) < len(actionNames) && actionNames[a] != "" {
		return actionNames[a]
	}
	return fmt.Sprintf("action(%d)", uint8(a))
}

// decision is the next step of a migration.
type decision struct {
	action action
	// reason is the Failed or RolledBack reason (actFail, actRollback).
	reason string
	// res is the migration's resource, parsed (every action of a
	// migration that is neither terminal nor a tenant fan-out).
	res kvrouting.Resource
}

// limits are the settings nextAction decides by.
type limits struct {
	// phaseRetries is Config.PhaseRetries.
	phaseRetries int
	// skew is the lock enforcers' clock skew: the engine treats the write
	// lock as expired that much early.
	skew time.Duration
}

// nextAction decides from the folded state which action of paper 001
// Algorithm 1 the step at now takes. The guards come first, in this order:
// a terminal migration only cleans its source (line 20) or ends; before
// the swap an abort (a cancel, a failed validation) or PhaseRetries
// transient failures in one phase roll back (§3.5, lines 15–16); in Phase 3
// a write lock at its expiry rolls back, because it is never extended
// (§4.1.3). After the swap nothing rolls back. It is pure; the cases are
// in testdata/decide.txt.
func nextAction(st *events.State, now time.Time, lim limits) decision {
	if st.Fanout != nil {
		return decision{action: actTenant}
	}
	if st.Status.Terminal() {
		if st.Status == events.StatusCompleted && !st.SourceCleaned && st.Source != "" {
			return decision{action: actCleanSource}
		}
		return decision{action: actAck}
	}
	res, err := kvrouting.ParseResource(st.Resource)
	if err != nil {
		return decision{action: actFail, reason: "invalid resource: " + err.Error()}
	}
	act := func(a action) decision { return decision{action: a, res: res} }
	rollback := func(reason string) decision { return decision{action: actRollback, reason: reason, res: res} }
	if beforeSwap(st.Phase) {
		if st.Abort != "" {
			return rollback(st.Abort)
		}
		if st.Failures >= lim.phaseRetries { // paper 001 §3.5: 3 transient failures, then roll back
			return rollback(fmt.Sprintf("%d transient failures in %s: %s", st.Failures, st.Phase, st.Reason))
		}
	}
	if st.Paused && pausable(st) {
		return act(actPaused)
	}
	switch st.Phase {
	case events.PhaseRequested:
		return act(actPreLock)
	case events.PhasePreLocked:
		return act(actAwaitConvergence)
	case events.PhaseConverged: // logs written before the escalation joined the wait's step
		return act(actEscalateHardDelete)
	case events.PhaseHistorical:
		return act(actHistorical)
	case events.PhaseDelta:
		if writeLockExpired(st, now, lim.skew) {
			return rollback("write lock expired")
		}
		if why := budgetSpent(st, now); why != "" {
			return rollback(why)
		}
		return act(actDelta)
	case events.PhaseValidated:
		if why := budgetSpent(st, now); why != "" {
			return rollback(why)
		}
		return act(actSwap)
	case events.PhaseSwapped:
		return act(actScheduleCleanup)
	case events.PhaseCleanupScheduled:
		return act(actComplete)
	case events.PhaseRolledBack:
		if st.Cancelled || st.Attempt >= st.MaxAttempts {
			return decision{action: actFail, reason: st.Reason, res: res}
		}
		return act(actReschedule)
	}
	return decision{action: actFail, reason: fmt.Sprintf("unknown phase %q", st.Phase), res: res}
}

// pausable reports whether a pause holds st now: in every phase but
// Phase 3, whose write lock is never held longer than the copy needs
// (paper 001 §4.1.3: every second is user-visible), so a pause asked there
// takes effect after the swap or the rollback; and not a rollback that
// ends the migration (cancelled, or its last attempt), which fails it.
// A child paused by its tenant move finishes the phase it is in and waits
// at the next boundary: its convergence wait ends, its historical copy
// completes (the write lock is not taken).
func pausable(st *events.State) bool {
	switch st.Phase {
	case events.PhaseDelta, events.PhaseValidated:
		return false
	case events.PhaseRolledBack:
		return !st.Cancelled && st.Attempt < st.MaxAttempts
	case events.PhasePreLocked:
		return !st.PausedByParent
	case events.PhaseHistorical:
		return !st.PausedByParent || len(st.Pending(false)) == 0
	}
	return true
}

// beforeSwap reports whether a phase may still roll back.
func beforeSwap(p events.Phase) bool {
	switch p {
	case events.PhaseSwapped, events.PhaseCleanupScheduled, events.PhaseRolledBack, events.PhaseDone, events.PhaseTenant:
		return false
	}
	return true
}

// queues reports whether step d of st at now waits for a background slot
// (Config.BackgroundSteps) before it runs. The slots bound the work of
// migrations outside Phase 3 — routing writes, exports, imports,
// cleanups — so that it cannot crowd out the write fence users feel.
// Phase 3 never waits (it goes first), nor does a step without such work:
// one that only re-arms a durable timer (the convergence wait, the
// cleanup window, not yet passed), settles its message (ack, fail), or
// records the end after the swap (complete: one append, and a pending
// child's start command). Queued behind other migrations' copies those
// would only wait: in `bench throughput` the completion waited 416 ms on
// average for a slot it then held 9 ms. (The fence bench's pre-lock
// fencing baseline re-tells the source its fence while it waits; that
// runs unbounded too.)
func queues(d decision, st *events.State, now time.Time) bool {
	if writeLocked(st.Phase) {
		return false
	}
	switch d.action {
	case actAck, actFail, actComplete:
		return false
	case actAwaitConvergence:
		return !now.Before(st.WaitUntil)
	case actCleanSource:
		return !now.Before(st.CleanupAt)
	}
	return true
}

// writeLocked reports whether a migration in phase p holds the write lock
// (Phase 3: writes at the resource are refused until the swap).
func writeLocked(p events.Phase) bool {
	switch p {
	case events.PhaseDelta, events.PhaseValidated:
		return true
	}
	return false
}

// budgetSpent says why st's writes have been blocked for its whole
// write-block budget by now ("" while not, or without a budget): Phase 3
// then rolls back rather than hold them longer (the budget is a bound the
// caller chose, below the write lease that bounds them anyway).
func budgetSpent(st *events.State, now time.Time) string {
	if st.MaxWriteBlock <= 0 || st.WriteLockedAt.IsZero() {
		return ""
	}
	held := now.Sub(st.WriteLockedAt)
	if held < st.MaxWriteBlock {
		return ""
	}
	return fmt.Sprintf("write-block budget %s spent (writes blocked %s)", st.MaxWriteBlock, held.Round(time.Millisecond))
}

// writeLockExpired reports whether st's write lock has reached its expiry
// at now, skew early (paper 001 §4.1.3: the expiry is the abort threshold).
func writeLockExpired(st *events.State, now time.Time, skew time.Duration) bool {
	return !now.Before(st.LockExpiry.Add(-skew))
}

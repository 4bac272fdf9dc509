package orchestrator

import (
	"context"
	"errors"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
)

// Failure and rollback (paper 001 §3.5, §5.3, Algorithm 1 lines 15–17):
// transient failures retry the phase, PhaseRetries of them or a lost lock
// roll back, and a rolled-back migration is retried later with a fresh
// lock.

// rollback is Algorithm 1 line 16: release the lock (token), tell both
// regions their authority by the routing document as it is now, and clean
// the target where that makes it a secondary; then record RolledBack.
// Every part is idempotent, and none depends on whose lock the document
// shows now: the source is told it is the primary again (or whatever a
// later migration made it), the target's copy goes unless the target is
// the primary or a later migration's target (which resets it before its
// own copy), so a copy is never left in a region the resource never moved
// to, whoever took the lock.
//
// A release refused because the swap already happened under our token
// means a crash separated the swap from its event: the migration moves
// forward instead (DESIGN.md "Durability and hazards"), also when other
// migrations have pre-locked or swapped the resource since (the routing
// key's history still records our swap: kvrouting.Locker.Swapped).
func (w *Worker) rollback(ctx context.Context, st *events.State, res kvrouting.Resource, reason string) outcome {
	tok := kvrouting.Token(st.Token)
	cached := w.cached(st)
	w.remember(st, nil)
	timed := w.timed(OpRoutingWrite)
	cur, err := w.cfg.Locker.Release(ctx, res, tok, cached)
	timed()
	switch {
	case err == nil:
	case errors.Is(err, kvrouting.ErrNotFound):
		return outcome{body: events.RolledBack{Reason: reason, Phase: st.Phase}}
	case errors.Is(err, kvrouting.ErrIllegalTransition), errors.Is(err, kvrouting.ErrTokenMismatch):
		// Not ours to release: our swap may be done, or another
		// migration may hold the resource now.
		if cur, err = w.cfg.Locker.Get(ctx, res); err != nil {
			return waitFor(w.cfg.RetryBackoff)
		}
	default:
		return waitFor(w.cfg.RetryBackoff)
	}
	// Release also answers "nothing held" when our swap has happened and
	// the resource has moved on since: only an attempt that never held the
	// write lock cannot have swapped.
	if !st.WriteLockedAt.IsZero() {
		if swapped, err := w.cfg.Locker.Swapped(ctx, res, st.ID, tok, cur); err != nil {
			return waitFor(w.cfg.RetryBackoff)
		} else if swapped {
			w.log.Info("rollback found the swap done: going on as swapped", "migration", st.ID)
			return outcome{body: events.Swapped{}}
		}
	}
	if st.Source != "" {
		if err := w.authorize(ctx, st, st.Source, cur); err != nil {
			w.log.Info("rollback: source authority", "migration", st.ID, "err", err)
			return waitFor(w.cfg.RetryBackoff)
		}
	}
	if st.Target != "" {
		if _, err := w.cleanup(ctx, st, st.Target, cur); err != nil {
			w.log.Info("rollback: target cleanup", "migration", st.ID, "err", err)
			return waitFor(w.cfg.RetryBackoff)
		}
	}
	return outcome{body: events.RolledBack{Reason: reason, Phase: st.Phase}}
}

// reschedule is the RolledBack phase when attempts are left: a fresh
// attempt with a fresh token, after a backoff (paper 001 §3.5, Algorithm 1
// line 16: "retry the migration later with a fresh lock").
func (w *Worker) reschedule(st *events.State, now time.Time) outcome {
	return outcome{body: events.Rescheduled{Attempt: st.Attempt + 1, Token: string(kvrouting.NewToken()), At: now.Add(w.cfg.RescheduleBackoff)}}
}

// transient records a transient failure; the phase retries after a backoff
// and rolls back after PhaseRetries of them.
func (w *Worker) transient(st *events.State, err error) outcome {
	w.log.Info("transient failure", "migration", st.ID, "phase", st.Phase, "err", err)
	// The backoff triples with each failure of the phase (1×, 3×, 9×): the
	// three tries then span a stream leader election (seconds) instead of
	// rolling back inside it (without the growth, a pre-lock fails three
	// times within 600 ms of a routing leader's crash).
	wait := w.cfg.RetryBackoff
	for range min(st.Failures, 4) {
		wait *= 3
	}
	return outcome{body: events.StepFailed{Phase: st.Phase, Error: err.Error()}, wait: wait}
}

// lockErr classifies a lock-transition error: a lost or expired lock rolls
// back, anything else is transient. bad reports that err was non-nil.
func (w *Worker) lockErr(ctx context.Context, st *events.State, res kvrouting.Resource, err error) (outcome, bool) {
	switch {
	case err == nil:
		return outcome{}, false
	case errors.Is(err, kvrouting.ErrExpired):
		reason := "lock expired"
		if writeLocked(st.Phase) {
			reason = "write lock expired"
		}
		return w.rollback(ctx, st, res, reason), true
	case errors.Is(err, kvrouting.ErrTokenMismatch), errors.Is(err, kvrouting.ErrIllegalTransition):
		return w.rollback(ctx, st, res, "lock lost: "+err.Error()), true
	}
	return w.transient(st, err), true
}

// writeExpired reports whether st's write lock has reached its expiry at
// now (writeLockExpired with the enforcers' skew).
func (w *Worker) writeExpired(st *events.State, now time.Time) bool {
	return writeLockExpired(st, now, w.skew)
}

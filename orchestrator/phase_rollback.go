package orchestrator

import (
	"context"
	"errors"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// Failure and rollback (paper 001 §3.5, §5.3, Algorithm 1 lines 15–17):
// transient failures retry the phase, PhaseRetries of them or a lost lock
// roll back, and a rolled-back migration is retried later with a fresh
// lock.

// rollback is Algorithm 1 line 16: release the lock (token), clear the
// fences at the source, clean the target, then record RolledBack. Every
// part is idempotent. A release refused because the swap already happened
// under our token means a crash separated the swap from its event: the
// migration moves forward instead (DESIGN.md "Durability and hazards"),
// also when another migration has pre-locked or swapped the resource since
// (the routing document's LastSwap and the swap chain; ownSwap).
//
// When another migration holds the lock now ("not ours"), its target is
// left alone, but the fence set under our token at the source still goes
// (issue 14 #8): fences are per token, so clearing ours cannot remove
// another's, and left in place it would refuse the next migration's fence
// ("fence held") until it lapses. Only while the resource is at our target
// is it kept: our swap may have happened and its event been lost, and
// then our fence is the post-swap fence of the old location.
func (w *Worker) rollback(ctx context.Context, st *events.State, res kvrouting.Resource, reason string) outcome {
	tok := kvrouting.Token(st.Token)
	ours := true
	cached := w.cached(st)
	w.remember(st, nil)
	doc, err := w.cfg.Locker.Release(ctx, res, tok, cached)
	if err != nil {
		switch {
		case errors.Is(err, kvrouting.ErrIllegalTransition):
			cur, gerr := w.cfg.Locker.Get(ctx, res)
			if gerr == nil && (cur.SwappedBy(st.ID, tok) || cur.Primary.Region == st.Target && cur.Secondary != nil && cur.Secondary.Lock.Token == tok) {
				return outcome{body: events.Swapped{}}
			}
			return waitFor(w.cfg.RetryBackoff)
		case errors.Is(err, kvrouting.ErrTokenMismatch):
			ours = false // another migration holds it now: touch nothing of its
		case errors.Is(err, kvrouting.ErrNotFound):
		default:
			return waitFor(w.cfg.RetryBackoff)
		}
	}
	cur := doc
	if !ours {
		if cur, err = w.cfg.Locker.Get(ctx, res); err != nil {
			return waitFor(w.cfg.RetryBackoff)
		}
	}
	// Our swap may have happened, its Swapped event lost, and another
	// migration have pre-locked or even swapped since: then this is no
	// rollback, the migration goes on as swapped (issue 14 #2).
	if swapped, err := w.ownSwap(ctx, st, cur); err != nil {
		return waitFor(w.cfg.RetryBackoff)
	} else if swapped {
		w.log.Info("rollback found the swap done: going on as swapped", "migration", st.ID)
		return outcome{body: events.Swapped{}}
	}
	unfence := ours
	if !ours {
		unfence = cur.Primary.Region != st.Target
	}
	if unfence && st.Source != "" {
		eps, err := w.cfg.Directory.Endpoints(ctx, st.Source, res.Kind)
		if err != nil {
			return waitFor(w.cfg.RetryBackoff)
		}
		for _, ep := range eps {
			if err := ep.ClearFence(ctx, st.Resource, st.Token); err != nil && contract.AsError(err).Code != contract.CodeConflict {
				return waitFor(w.cfg.RetryBackoff)
			}
		}
	}
	// No import of this attempt may land at the target from here on, or
	// after its cleanup (issue 14 #1, grant.go).
	if err := w.revokeImports(ctx, st); err != nil {
		return waitFor(w.cfg.RetryBackoff)
	}
	// Never ask a region to clean up while routing names it the primary or
	// a migration's target (contract.Participant.Cleanup; each participant
	// enforces it under its own lock, this spares the request).
	if ours && (doc == nil || (doc.Primary.Region != st.Target && doc.Target != st.Target)) {
		if _, err := w.cleanup(ctx, st, st.Target); err != nil {
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
	// rolling back inside it (found by `cutover chaos`: pre-locks that failed
	// three times within 600 ms of a routing leader kill).
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

package orchestrator

import (
	"context"
	"errors"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
)

// Phase 1: pre-lock and routing-cache convergence (paper 001 §4.1.1,
// Algorithm 1 lines 1–3).

// preLock is Algorithm 1 line 2 (the Requested phase): the pre-lock, which
// records the target as a locked secondary, and the convergence deadline:
// the pre-lock's not-before plus ConvergenceBuffer, never less than the
// replication bound (line 3). The token was persisted first (Requested),
// so a retry after an unknown outcome recognises its own lock. A fresh
// attempt first waits out its reschedule backoff (paper 001 §3.5).
func (w *Worker) preLock(ctx context.Context, st *events.State, res kvrouting.Resource, now time.Time) outcome {
	if now.Before(st.WaitUntil) { // reschedule backoff
		return waitFor(st.WaitUntil.Sub(now))
	}
	timed := w.timed(OpRoutingWrite)
	g, err := w.cfg.Locker.PreLock(ctx, res, st.Target, st.ID, kvrouting.WithToken(kvrouting.Token(st.Token)))
	timed()
	switch {
	case err == nil:
		w.remember(st, g.Doc)
		until := g.NotBefore.Add(w.cfg.ConvergenceBuffer)
		if floor := now.Add(w.cfg.ReplicationBound); until.Before(floor) {
			until = floor // never less than the replication bound
		}
		if w.cfg.Convergence == ConvergenceFence {
			// Fence-driven convergence (a departure from paper 001
			// §4.1.1): no cache is waited for. A cache still serving the
			// document from before the pre-lock routes by an older
			// revision than the authority the source's stores hold from
			// the historical export on, so they refuse it as moved and the
			// API resolves again; a router that read the locked document
			// brings the lock's authority itself. The lock's not-before
			// (plus the skew) is the only wait left.
			until = g.NotBefore
		}
		// The escalation refuses before the not-before plus the lock
		// enforcers' clock skew (kvrouting: ErrNotConverged): waking
		// earlier would cost a step and a routing read for a refusal.
		if floor := g.NotBefore.Add(w.skew); until.Before(floor) {
			until = floor
		}
		return outcome{body: events.PreLocked{Source: g.Doc.Primary.Region, NotBefore: g.NotBefore, Expiry: g.Expiry, WaitUntil: until}}
	case errors.Is(err, kvrouting.ErrAtTarget):
		return outcome{body: events.Dropped{Reason: "already at target"}}
	case errors.Is(err, kvrouting.ErrLocked):
		// Another migration holds the resource: the pre-lock is the
		// arbiter of duplicate starts (paper 000 §5.4).
		return outcome{body: events.Failed{Reason: "locked by another migration"}}
	case errors.Is(err, kvrouting.ErrNotFound), errors.Is(err, kvrouting.ErrInvalid):
		return outcome{body: events.Failed{Reason: err.Error()}}
	}
	return w.transient(st, err)
}

// awaitConvergence is Algorithm 1 line 3 (the PreLocked phase): a durable
// wait; a timer that fires early is re-armed for the remainder ("never
// less than"). When the wait has elapsed it escalates to the hard-delete
// lock in this same step (line 5): a Converged event would only record the
// passing of time, and costs a synced append (the throughput budget).
func (w *Worker) awaitConvergence(ctx context.Context, st *events.State, res kvrouting.Resource, now time.Time) outcome {
	if w.fencing.WriteFenceAtPreLock() { // bench baseline: writes refused from the pre-lock on
		d, o, bad := w.verify(ctx, st, res)
		if bad {
			return o
		}
		if err := w.authorize(ctx, st, st.Source, d); err != nil {
			return w.transient(st, err)
		}
	}
	if now.Before(st.WaitUntil) {
		return waitFor(st.WaitUntil.Sub(now))
	}
	return w.escalateHardDelete(ctx, st, res, now)
}

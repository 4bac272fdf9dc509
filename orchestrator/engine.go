package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
	"github.com/nats-io/nats.go/jetstream"
)

// outcome is what one step decided.
type outcome struct {
	// body is the event to append (nil: none).
	body events.Body
	// wait, when positive, re-arms the durable timer: the work message is
	// negatively acknowledged with this delay (never an in-memory sleep).
	wait time.Duration
	// ack ends the work: the migration needs no more steps.
	ack bool
}

func waitFor(d time.Duration) outcome { return outcome{wait: max(d, time.Millisecond)} }

// drive advances one migration as far as it can go: read the last event
// (state + sequence), take the next step, append its event conditioned on
// that sequence, repeat; until a wait (NakWithDelay) or the end (Ack).
// After its own append the worker goes on from the state and sequence it
// just wrote (the append was conditional on the sequence it read, so they
// are the current ones unless another worker advanced the migration since,
// which the next conditional append detects): one read per delivery, not
// one per step.
func (w *Worker) drive(ctx context.Context, m jetstream.Msg) {
	id, ok := events.MigrationIDFromSubject(m.Subject())
	if !ok {
		_ = m.Term()
		return
	}
	var (
		st  *events.State
		seq uint64
	)
	for {
		if ctx.Err() != nil {
			_ = m.Nak()
			return
		}
		next, nseq, stop := w.driveOnce(ctx, m, id, st, seq)
		if stop {
			return
		}
		if next != nil {
			_ = m.InProgress()
		}
		st, seq = next, nseq
	}
}

// driveOnce performs one step from st at seq (nil: load them first). stop
// reports that the message was settled (or the worker crashed on purpose);
// otherwise next is the state after the appended event and nseq its
// sequence, or nil when the next step must load again.
func (w *Worker) driveOnce(ctx context.Context, m jetstream.Msg, id string, st *events.State, seq uint64) (next *events.State, nseq uint64, stop bool) {
	sctx, cancel := context.WithTimeout(ctx, w.cfg.StepTimeout)
	defer cancel()
	if st == nil {
		var err error
		st, seq, err = Load(sctx, w.nc, id)
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalid) {
			_ = m.Ack() // a work message without a migration: nothing to drive
			return nil, 0, true
		}
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("load failed", "migration", id, "err", err)
			}
			_ = m.NakWithDelay(w.cfg.RetryBackoff)
			return nil, 0, true
		}
	}
	if !writeLocked(st.Phase) {
		// Phase 3 first: other steps take a background slot, so a
		// write-locked migration's appends never queue behind more than
		// BackgroundSteps of them (the write fence users feel).
		release, ok := w.takeBackground(ctx)
		if !ok {
			_ = m.Nak()
			return nil, 0, true
		}
		defer release()
	}
	out := w.step(sctx, st)
	if out.body != nil {
		if hook := w.cfg.BeforeAppend; hook != nil && hook(st, out.body) != nil {
			return nil, 0, true // simulated crash: the side effect happened, its event is lost
		}
		// A fresh context: a step that timed out must still record its
		// failure (it counts toward the phase's retry limit).
		actx, acancel := context.WithTimeout(ctx, w.cfg.StepTimeout)
		env, aseq, err := appendEvent(actx, w.js, st, seq, out.body, "", w.cfg.Clock())
		acancel()
		if errors.Is(err, ErrConflict) {
			return nil, 0, false // another worker advanced it: drop the step, re-read
		}
		if err != nil {
			w.log.Warn("append failed", "migration", id, "err", err)
			_ = m.NakWithDelay(w.cfg.RetryBackoff)
			return nil, 0, true
		}
		w.log.Debug("event", "migration", id, "type", env.Type, "phase", env.State.Phase)
		if hook := w.cfg.AfterAppend; hook != nil && hook(env) != nil {
			return nil, 0, true // simulated crash: settle nothing, AckWait redelivers
		}
		next, nseq = env.State, aseq
	}
	switch {
	case out.ack:
		_ = m.Ack()
		return nil, 0, true
	case out.wait > 0:
		_ = m.NakWithDelay(out.wait)
		return nil, 0, true
	}
	return next, nseq, false // next nil (no event): the next step re-reads
}

// backgroundLease is the longest a step holds its background slot. A step
// that takes longer (stuck on a partitioned request until its timeout)
// gives the slot back and runs on unbounded: the bound shapes the queue in
// front of Phase 3 under load, and must not let a few stuck steps stop
// every other migration (found by `cutover chaos`: with 8 slots held by
// steps waiting out a partition, 51 migrations in 3 minutes instead of 439).
const backgroundLease = 250 * time.Millisecond

// takeBackground waits for a background slot; release gives it back (at
// the latest after backgroundLease). ok is false when ctx ended first.
func (w *Worker) takeBackground(ctx context.Context) (release func(), ok bool) {
	select {
	case w.background <- struct{}{}:
	case <-ctx.Done():
		return nil, false
	}
	var once sync.Once
	give := func() { once.Do(func() { <-w.background }) }
	t := time.AfterFunc(backgroundLease, give)
	return func() { t.Stop(); give() }, true
}

// writeLocked reports whether a migration in phase p holds the write lock
// (Phase 3: writes at the resource are refused until the swap).
func writeLocked(p events.Phase) bool {
	switch p {
	case events.PhaseWriteLocked, events.PhaseDelta, events.PhaseValidated:
		return true
	}
	return false
}

// beforeSwap reports whether a phase may still roll back.
func beforeSwap(p events.Phase) bool {
	switch p {
	case events.PhaseSwapped, events.PhaseCleanupScheduled, events.PhaseRolledBack, events.PhaseDone, events.PhaseTenant:
		return false
	}
	return true
}

// step decides and performs the next step of st (paper 001 Algorithm 1).
// Every side effect is idempotent, so a step replayed after a crash or a
// lost race is harmless.
func (w *Worker) step(ctx context.Context, st *events.State) outcome {
	now := w.cfg.Clock()
	if st.Fanout != nil {
		return w.tenantStep(ctx, st, now)
	}
	if st.Status.Terminal() {
		if st.Status == events.StatusCompleted && !st.SourceCleaned && st.Source != "" {
			if now.Before(st.CleanupAt) {
				return waitFor(st.CleanupAt.Sub(now))
			}
			// Never clean up a region the resource has come back to (or is
			// moving back to): its data there is live again.
			res, _ := kvrouting.ParseResource(st.Resource)
			doc, err := w.cfg.Locker.Get(ctx, res)
			if err != nil {
				return waitFor(w.cfg.RetryBackoff)
			}
			if doc.Primary.Region == st.Source || doc.Target == st.Source {
				w.log.Info("source cleanup skipped: the resource is back at its old source", "migration", st.ID, "region", st.Source)
				return outcome{body: events.CleanedUp{Records: 0}}
			}
			n, err := w.cleanup(ctx, st, st.Source)
			if err != nil {
				return waitFor(w.cfg.RetryBackoff)
			}
			return outcome{body: events.CleanedUp{Records: n}}
		}
		return outcome{ack: true}
	}
	res, err := kvrouting.ParseResource(st.Resource)
	if err != nil {
		return outcome{body: events.Failed{Reason: "invalid resource: " + err.Error()}}
	}
	tok := kvrouting.Token(st.Token)
	if beforeSwap(st.Phase) {
		if st.Abort != "" {
			return w.rollback(ctx, st, res, st.Abort)
		}
		if st.Failures >= w.cfg.PhaseRetries { // paper 001 §3.5: 3 transient failures, then roll back
			return w.rollback(ctx, st, res, fmt.Sprintf("%d transient failures in %s: %s", st.Failures, st.Phase, st.Reason))
		}
	}
	switch st.Phase {
	case events.PhaseRequested:
		if now.Before(st.WaitUntil) { // reschedule backoff
			return waitFor(st.WaitUntil.Sub(now))
		}
		// Algorithm 1 line 2. The token was persisted first, so a retry
		// after an unknown outcome recognises its own lock.
		g, err := w.cfg.Locker.PreLock(ctx, res, st.Target, st.ID, kvrouting.WithToken(tok))
		switch {
		case err == nil:
			w.remember(st, g.Doc)
			until := g.NotBefore.Add(w.cfg.ConvergenceBuffer)
			if floor := now.Add(w.cfg.ReplicationBound); until.Before(floor) {
				until = floor // never less than the replication bound
			}
			return outcome{body: events.PreLocked{Source: g.Doc.Primary.Region, NotBefore: g.NotBefore, Expiry: g.Expiry, WaitUntil: until, Previous: g.Doc.LastMigrationID}}
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

	case events.PhasePreLocked:
		// Algorithm 1 line 3: a durable wait; a timer that fires early is
		// re-armed for the remainder ("never less than").
		if w.cfg.Fencing == FencingReadOnly { // bench baseline: writes refused from the pre-lock on
			if _, err := w.fence(ctx, st, contract.FenceWrite, st.LockExpiry); err != nil {
				return w.transient(st, err)
			}
		}
		if now.Before(st.WaitUntil) {
			return waitFor(st.WaitUntil.Sub(now))
		}
		// The wait has elapsed: escalate in this same step. A Converged
		// event would only record the passing of time, and costs a synced
		// append (issue 7's budget).
		return w.escalateHardDelete(ctx, st, res, tok, now)

	case events.PhaseConverged: // logs written before the escalation joined the wait's step
		return w.escalateHardDelete(ctx, st, res, tok, now)

	case events.PhaseHardDeleteLocked:
		// The backstop: the hard-delete fence at every source endpoint
		// before the historical export starts (DESIGN.md "Two layers"). A
		// bench baseline strategy may set the write fence here instead; the
		// event still records the Phase 2 fence (it starts the historical copy).
		if o, bad := w.verify(ctx, st, res); bad {
			return o
		}
		names, err := w.fence(ctx, st, w.phase2Fence(), st.LockExpiry)
		if err != nil {
			return w.transient(st, err)
		}
		return outcome{body: events.Fenced{Level: contract.FenceHardDelete, Services: names}}

	case events.PhaseHistorical:
		if o, ok := w.startChild(ctx, st); ok {
			return o
		}
		// The margin never exceeds a third of the lease: a margin longer than
		// the lease would renew on every step.
		margin := min(w.cfg.RenewMargin, w.cfg.Locker.Config().HardDeleteLease/3)
		if st.LockExpiry.Sub(now) < margin {
			// paper 001 §5.2: extend the hard-delete lock (and the pre-lock)
			// before it expires; the fence follows it.
			d, err := w.cfg.Locker.Renew(ctx, res, tok, w.cached(st))
			if o, bad := w.lockErr(ctx, st, res, err); bad {
				return o
			}
			w.remember(st, d)
			if exp := d.Primary.Lock.Expiry; exp.After(st.LockExpiry) {
				if _, err := w.fence(ctx, st, w.phase2Fence(), exp); err != nil {
					return w.transient(st, err)
				}
				return outcome{body: events.Renewed{Expiry: exp}}
			}
		}
		if pending := st.Pending(false); len(pending) > 0 {
			if o, bad := w.verify(ctx, st, res); bad {
				return o
			}
			return w.copyPages(ctx, st, contract.Historical, pending)
		}
		at := w.cfg.Clock()
		d, err := w.cfg.Locker.EscalateWrite(ctx, res, tok, w.cached(st)) // line 12
		if o, bad := w.lockErr(ctx, st, res, err); bad {
			return o
		}
		w.remember(st, d)
		ev := events.WriteLocked{Expiry: d.Primary.Lock.Expiry, At: at}
		// The write fence at the source in the same step: the delta can
		// start after ONE synced append, and the write-blocked window
		// users feel is a step shorter. If it fails, the WriteLocked
		// phase sets it (and counts the failure).
		if names, err := w.fence(ctx, st, contract.FenceWrite, ev.Expiry); err == nil {
			ev.Fenced, ev.Services = true, names
		} else {
			w.log.Info("write fence deferred to its own step", "migration", st.ID, "err", err)
		}
		return outcome{body: ev}

	case events.PhaseWriteLocked:
		if w.writeExpired(st, now) {
			return w.rollback(ctx, st, res, "write lock expired")
		}
		if o, bad := w.verify(ctx, st, res); bad {
			return o
		}
		names, err := w.fence(ctx, st, contract.FenceWrite, st.LockExpiry)
		if err != nil {
			return w.transient(st, err)
		}
		return outcome{body: events.Fenced{Level: contract.FenceWrite, Services: names}}

	case events.PhaseDelta:
		// paper 001 §4.1.3: the write lock is never extended; reaching its
		// expiry aborts the attempt.
		if w.writeExpired(st, now) {
			return w.rollback(ctx, st, res, "write lock expired")
		}
		if pending := st.Pending(true); len(pending) > 0 {
			if o, bad := w.verify(ctx, st, res); bad {
				return o
			}
			o := w.copyPages(ctx, st, contract.Delta, pending)
			return w.swapAfterDeltas(ctx, st, res, tok, o)
		}
		return w.validateAndSwap(ctx, st, res, tok)

	case events.PhaseValidated: // the swap after a validation recorded on its own
		return w.swap(ctx, st, res, tok, nil)

	case events.PhaseSwapped:
		// The old location is already write-fenced (locked secondary) until
		// the source is cleaned up: the fence went up before the swap.
		// Moving back: the previous migration left its post-swap fence at
		// what is now our primary. Our swap made that region authoritative,
		// so the fence must go, or users would get 423 there until it lapses.
		if err := w.clearPreviousFence(ctx, st); err != nil {
			return w.transient(st, err)
		}
		return outcome{body: events.CleanupScheduled{At: st.SwappedAt.Add(w.cfg.CleanupWindow)}} // line 20

	case events.PhaseCleanupScheduled:
		if o, ok := w.startChild(ctx, st); ok {
			return o
		}
		return outcome{body: events.Completed{Figures: figures(st, now)}}

	case events.PhaseRolledBack:
		if st.Cancelled || st.Attempt >= st.MaxAttempts {
			return outcome{body: events.Failed{Reason: st.Reason}}
		}
		// A fresh attempt with a fresh token, after a backoff (paper 001 §3.5).
		return outcome{body: events.Rescheduled{Attempt: st.Attempt + 1, Token: string(kvrouting.NewToken()), At: now.Add(w.cfg.RescheduleBackoff)}}
	}
	return outcome{body: events.Failed{Reason: fmt.Sprintf("unknown phase %q", st.Phase)}}
}

// escalateHardDelete takes the hard-delete lock once the pre-lock has
// converged (Algorithm 1 line 5) and, in the same step, sets the
// hard-delete fence at every source endpoint: HardDeleteLocked then records
// both, and the historical copy starts after one synced append. If the
// fence fails, the event records the lock alone and the HardDeleteLocked
// phase sets the fence (counting its failures).
func (w *Worker) escalateHardDelete(ctx context.Context, st *events.State, res kvrouting.Resource, tok kvrouting.Token, now time.Time) outcome {
	// Re-read the location: drop a resource already at the target. The
	// holder's cached document stands in for the read: the escalation's
	// conditional write proves it current (paper 000 §8).
	doc := w.cached(st)
	if doc == nil {
		d, err := w.cfg.Locker.Get(ctx, res)
		if err != nil {
			return w.transient(st, err)
		}
		doc = d
	}
	if doc.Primary.Region == st.Target {
		return outcome{body: events.Dropped{Reason: "already at target"}}
	}
	if doc.Primary.Lock.Token != tok {
		return w.rollback(ctx, st, res, "pre-lock lost")
	}
	at := w.cfg.Clock()
	d, err := w.cfg.Locker.EscalateHardDelete(ctx, res, tok, doc) // line 5
	if errors.Is(err, kvrouting.ErrNotConverged) {
		return waitFor(doc.Primary.Lock.NotBefore.Add(w.skew).Sub(now))
	}
	if o, bad := w.lockErr(ctx, st, res, err); bad {
		return o
	}
	w.remember(st, d)
	ev := events.HardDeleteLocked{Expiry: d.Primary.Lock.Expiry, At: at}
	// The backstop fence before the historical export starts (DESIGN.md
	// "Two layers"); a bench baseline strategy may set the write fence.
	if names, err := w.fence(ctx, st, w.phase2Fence(), ev.Expiry); err == nil {
		ev.Fenced, ev.Services = true, names
	} else {
		w.log.Info("hard-delete fence deferred to its own step", "migration", st.ID, "err", err)
	}
	return outcome{body: ev}
}

// validateAndSwap validates (Algorithm 1 line 14) and, when the copy is
// valid, swaps in the same step: Swapped records the validation.
func (w *Worker) validateAndSwap(ctx context.Context, st *events.State, res kvrouting.Resource, tok kvrouting.Token) outcome {
	if o, bad := w.verify(ctx, st, res); bad {
		return o
	}
	v := w.validate(ctx, st)
	if w.writeExpired(st, w.cfg.Clock()) && v.OK {
		return w.rollback(ctx, st, res, "write lock expired")
	}
	if !v.OK {
		return outcome{body: v}
	}
	return w.swap(ctx, st, res, tok, &v)
}

// swapAfterDeltas goes on from a delta copy step whose pages (o) finished
// the delta of every service: it validates and swaps in the same step, and
// the Swapped event checkpoints the pages too. The write-blocked window is
// then two synced appends (write lock with its fence; deltas, validation
// and swap) instead of three. Anything short of a swap records the pages
// alone (a rollback records itself), and the next step validates again.
func (w *Worker) swapAfterDeltas(ctx context.Context, st *events.State, res kvrouting.Resource, tok kvrouting.Token, o outcome) outcome {
	var deltas []events.DeltaCopied
	switch b := o.body.(type) {
	case events.DeltaCopied:
		deltas = []events.DeltaCopied{b}
	case events.DeltasCopied:
		deltas = b.Pages
	default:
		return o // a failure: nothing copied
	}
	after := st.Clone()
	for _, d := range deltas {
		applyDelta(after, d)
	}
	if len(after.Pending(true)) > 0 || w.writeExpired(st, w.cfg.Clock()) {
		return o
	}
	tail := w.validateAndSwap(ctx, after, res, tok)
	switch b := tail.body.(type) {
	case events.Swapped:
		b.Deltas = deltas
		return outcome{body: b}
	case events.RolledBack:
		return tail
	}
	return o
}

// swap fences the old location for after the swap and swaps (Algorithm 1
// line 19). v is the validation this step has just passed, recorded in the
// Swapped event (nil when a Validated event recorded it). A transient
// failure after such a validation records the validation (the Validated
// phase then retries the swap and counts its failures); a lost or expired
// lock rolls back.
//
// When the swap is done the step also clears the previous migration's
// post-swap fence at the new primary and schedules the cleanup, so one
// Swapped event records all of it; if the clear fails, the Swapped phase
// retries it.
func (w *Worker) swap(ctx context.Context, st *events.State, res kvrouting.Resource, tok kvrouting.Token, v *events.Validated) outcome {
	fail := func(o outcome) outcome {
		if _, transient := o.body.(events.StepFailed); transient && v != nil {
			return outcome{body: *v}
		}
		return o
	}
	// The old location's post-swap fence goes up BEFORE the swap: the
	// write fence of Phase 3 ends with the write lock, and a post-swap
	// fence set in a later step left a gap after a slow swap in which a
	// stale cache could land a write at the old location (found by
	// `cutover chaos`: an acknowledged write lost). If the swap then
	// fails, the rollback clears it (and retires the token, so a late
	// copy of this request cannot fence the source again).
	if o, bad := w.verify(ctx, st, res); bad {
		return fail(o)
	}
	if _, err := w.fence(ctx, st, contract.FenceWrite, w.cfg.Clock().Add(w.cfg.Locker.Config().SecondaryLease)); err != nil {
		return fail(w.transient(st, err))
	}
	// Line 19: ONE conditional write. A swap replayed after a crash is
	// recognised by kvrouting (our token on the old location).
	_, err := w.cfg.Locker.Swap(ctx, res, tok, w.cached(st))
	if o, bad := w.lockErr(ctx, st, res, err); bad {
		return fail(o)
	}
	w.remember(st, nil) // the lock is gone: nothing more to cache
	ev := events.Swapped{Validation: v}
	if err := w.clearPreviousFence(ctx, st); err == nil {
		ev.CleanupAt = w.cfg.Clock().Add(w.cfg.CleanupWindow) // line 20
	} else {
		w.log.Info("previous fence clear deferred to its own step", "migration", st.ID, "err", err)
	}
	return outcome{body: ev}
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
		if st.Phase == events.PhaseDelta || st.Phase == events.PhaseValidated || st.Phase == events.PhaseWriteLocked {
			reason = "write lock expired"
		}
		return w.rollback(ctx, st, res, reason), true
	case errors.Is(err, kvrouting.ErrTokenMismatch), errors.Is(err, kvrouting.ErrIllegalTransition):
		return w.rollback(ctx, st, res, "lock lost: "+err.Error()), true
	}
	return w.transient(st, err), true
}

func (w *Worker) writeExpired(st *events.State, now time.Time) bool {
	return !now.Before(st.LockExpiry.Add(-w.skew))
}

// rollback is Algorithm 1 line 16: release the lock (token), clear the
// fences at the source, clean the target, then record RolledBack. Every
// part is idempotent. A release refused because the swap already happened
// under our token means a crash separated the swap from its event: the
// migration moves forward instead (DESIGN.md "Durability and hazards").
func (w *Worker) rollback(ctx context.Context, st *events.State, res kvrouting.Resource, reason string) outcome {
	tok := kvrouting.Token(st.Token)
	ours := true
	cached := w.cached(st)
	w.remember(st, nil)
	if _, err := w.cfg.Locker.Release(ctx, res, tok, cached); err != nil {
		switch {
		case errors.Is(err, kvrouting.ErrIllegalTransition):
			doc, gerr := w.cfg.Locker.Get(ctx, res)
			if gerr == nil && doc.Primary.Region == st.Target && doc.Secondary != nil && doc.Secondary.Lock.Token == tok {
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
	if ours && st.Source != "" {
		eps, err := w.cfg.Directory.Endpoints(ctx, st.Source, res.Kind)
		if err != nil {
			return waitFor(w.cfg.RetryBackoff)
		}
		for _, ep := range eps {
			if err := ep.ClearFence(ctx, st.Resource, st.Token); err != nil && contract.AsError(err).Code != contract.CodeConflict {
				return waitFor(w.cfg.RetryBackoff)
			}
		}
		if _, err := w.cleanup(ctx, st, st.Target); err != nil {
			return waitFor(w.cfg.RetryBackoff)
		}
	}
	return outcome{body: events.RolledBack{Reason: reason, Phase: st.Phase}}
}

// fence sets a fence of level, expiring at the lock's expiry plus the
// enforcers' skew, at every source endpoint; it returns their services.
func (w *Worker) fence(ctx context.Context, st *events.State, level contract.FenceLevel, expiry time.Time) ([]string, error) {
	res, _ := kvrouting.ParseResource(st.Resource)
	eps, err := w.cfg.Directory.Endpoints(ctx, st.Source, res.Kind)
	if err != nil {
		return nil, err
	}
	f := contract.FenceFor(level, st.Token, expiry, w.skew)
	// Every service's fence at once: the step (and in Phase 3 the write
	// fence users feel) waits for the slowest, not for their sum.
	errs := make([]error, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() {
			if err := ep.SetFence(ctx, st.Resource, f); err != nil {
				errs[i] = fmt.Errorf("fence %s at %s/%s: %w", level, ep.Region(), ep.Service(), err)
			}
		})
	}
	wg.Wait()
	names := make([]string, 0, len(eps))
	for i, ep := range eps {
		if errs[i] != nil {
			return nil, errs[i]
		}
		names = append(names, ep.Service())
	}
	return names, nil
}

// clearPreviousFence clears, at st.Target (our new primary), the post-swap
// fence left there by the last migration that moved the resource away from
// st.Target. That migration is found by walking back the chain of previous
// migrations (each records the one before it; rolled-back ones and moves
// between other regions are stepped over); its token is in its state.
func (w *Worker) clearPreviousFence(ctx context.Context, st *events.State) error {
	id, seen := st.Previous, map[string]bool{st.ID: true}
	var prev *events.State
	for depth := 0; id != "" && !seen[id] && depth < 32; depth++ {
		seen[id] = true
		p, _, err := Load(ctx, w.nc, id)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		// Swapped is enough: the swap is the commit point, and the
		// migration's Completed can come well after it (its worker killed
		// after the swap, or its next step still queued) while this move
		// back has already swapped. Requiring Completed left the fence up
		// for its whole hour (found by `cutover chaos`: a fence "held by
		// another token" at a primary, three times in a row).
		swapped := p.Status == events.StatusCompleted || !p.SwappedAt.IsZero()
		if p.Source == st.Target && swapped && p.Token != "" {
			prev = p
			break
		}
		id = p.Previous
	}
	if prev == nil {
		return nil
	}
	res, _ := kvrouting.ParseResource(st.Resource)
	eps, err := w.cfg.Directory.Endpoints(ctx, st.Target, res.Kind)
	if err != nil {
		return err
	}
	for _, ep := range eps {
		if err := ep.ClearFence(ctx, st.Resource, prev.Token); err != nil {
			if contract.AsError(err).Code == contract.CodeConflict {
				continue // a fence of another token: not the previous migration's to clear
			}
			return fmt.Errorf("clear previous fence at %s/%s: %w", ep.Region(), ep.Service(), err)
		}
	}
	return nil
}

// cleanup deletes the resource at every endpoint of region.
func (w *Worker) cleanup(ctx context.Context, st *events.State, region string) (int, error) {
	res, _ := kvrouting.ParseResource(st.Resource)
	eps, err := w.cfg.Directory.Endpoints(ctx, region, res.Kind)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, ep := range eps {
		n, err := ep.Cleanup(ctx, st.Resource)
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// endpointPair returns the source and target endpoints of one service.
func (w *Worker) endpointPair(ctx context.Context, st *events.State, service string) (src, tgt Endpoint, err error) {
	res, _ := kvrouting.ParseResource(st.Resource)
	find := func(region string) (Endpoint, error) {
		eps, err := w.cfg.Directory.Endpoints(ctx, region, res.Kind)
		if err != nil {
			return nil, err
		}
		for _, ep := range eps {
			if ep.Service() == service {
				return ep, nil
			}
		}
		return nil, fmt.Errorf("%w: service %s at %s", ErrNotFound, service, region)
	}
	if src, err = find(st.Source); err != nil {
		return nil, nil, err
	}
	if tgt, err = find(st.Target); err != nil {
		return nil, nil, err
	}
	return src, tgt, nil
}

// copiedPage is one page exported and imported: the request and what the
// export reported.
type copiedPage struct {
	req contract.ExportRequest
	pi  PageInfo
}

// copyRun copies up to w.cfg.PagesPerStep consecutive pages of one service,
// starting at req. Exports (a read of the source store and a synced
// publish) run ahead of the imports by up to two pages while the target
// imports them one after another, in order; so a run costs about its
// imports plus one export, and one checkpoint event for all of it. It
// returns the pages copied, in order; an error ends the run, and the pages
// before it stand (the next step resumes after them). No new export starts
// once pageRunBudget has passed, so a run never holds a step for long.
func (w *Worker) copyRun(ctx context.Context, st *events.State, service string, req contract.ExportRequest) ([]copiedPage, error) {
	src, tgt, err := w.endpointPair(ctx, st, service)
	if err != nil {
		return nil, err
	}
	type exported struct {
		req contract.ExportRequest
		pi  PageInfo
		err error
	}
	start := time.Now()
	pages, stop := make(chan exported, 2), make(chan struct{})
	defer close(stop) // an export still running finishes into nothing: re-exported next time
	go func() {
		defer close(pages)
		r := req
		for n := 0; n < w.cfg.PagesPerStep; n++ {
			if n > 0 && time.Since(start) >= pageRunBudget {
				return
			}
			pi, err := src.Export(ctx, st.ID, r)
			select {
			case pages <- exported{r, pi, err}:
			case <-stop:
				return
			}
			if err != nil || !pi.More {
				return
			}
			r.Cursor = pi.Next
			if r.Mode == contract.Historical {
				r.SyncToken = pi.SyncToken // the snapshot the first page fixed
			}
		}
	}()
	var out []copiedPage
	for e := range pages {
		if e.err != nil {
			return out, fmt.Errorf("export %s: %w", service, e.err)
		}
		if e.pi.Count > 0 {
			if _, err := tgt.Import(ctx, st.ID, e.pi); err != nil {
				return out, fmt.Errorf("import %s: %w", service, err)
			}
		}
		out = append(out, copiedPage{e.req, e.pi})
	}
	return out, nil
}

// pageRunBudget is how long a copy run keeps starting pages.
const pageRunBudget = 500 * time.Millisecond

// copyPages copies a run of pages of every pending service concurrently and
// checkpoints them in one event (one synced append instead of one per page
// and service; still one checkpoint entry per page, Algorithm 1 lines 8 and
// 13). Pages that failed are not recorded: their services retry in the
// next step; only when no page at all was copied does the step count a
// transient failure.
func (w *Worker) copyPages(ctx context.Context, st *events.State, mode contract.ExportMode, pending []events.ServiceProgress) outcome {
	type result struct {
		pages []copiedPage
		err   error
	}
	rs := make([]result, len(pending))
	var wg sync.WaitGroup
	for i, p := range pending {
		req := contract.ExportRequest{Resource: st.Resource, Mode: mode, SyncToken: p.SyncToken, Cursor: p.Cursor, Limit: w.cfg.PageLimit}
		if mode == contract.Delta {
			req.Cursor = p.DeltaCursor
		}
		wg.Go(func() { rs[i].pages, rs[i].err = w.copyRun(ctx, st, p.Service, req) })
	}
	wg.Wait()
	var (
		hist  []events.PageCopied
		delta []events.DeltaCopied
		first error
	)
	for i, r := range rs {
		if r.err != nil {
			first = cmp.Or(first, r.err)
			if len(r.pages) > 0 {
				w.log.Info("copy run ended early", "migration", st.ID, "service", pending[i].Service, "pages", len(r.pages), "err", r.err)
			}
		}
		svc := pending[i].Service
		for _, c := range r.pages {
			pi := c.pi
			if mode == contract.Delta {
				delta = append(delta, events.DeltaCopied{Service: svc, Cursor: c.req.Cursor, Next: pi.Next, Count: pi.Count, More: pi.More, Dependents: pi.Dependents})
			} else {
				hist = append(hist, events.PageCopied{Service: svc, Mode: uint8(contract.Historical), Cursor: c.req.Cursor,
					Next: pi.Next, SyncToken: pi.SyncToken, Count: pi.Count, More: pi.More, Dependents: pi.Dependents})
			}
		}
	}
	switch {
	case len(hist) == 1:
		return outcome{body: hist[0]}
	case len(hist) > 1:
		return outcome{body: events.PagesCopied{Pages: hist}}
	case len(delta) == 1:
		return outcome{body: delta[0]}
	case len(delta) > 1:
		return outcome{body: events.DeltasCopied{Pages: delta}}
	}
	return w.transient(st, first)
}

// startChild starts the first pending child migration, if any (Algorithm 1
// line 9). The command's Msg-Id and the child's derived id make a replay
// harmless.
func (w *Worker) startChild(ctx context.Context, st *events.State) (outcome, bool) {
	if len(st.PendingChildren) == 0 {
		return outcome{}, false
	}
	child := st.PendingChildren[0]
	cmd := events.Start{Resource: child, Target: st.Target, Parent: st.ID, Tenant: st.Tenant}
	cmd.MigrationID = startID("", cmd)
	if err := sendCommand(ctx, w.js, DeriveID("child-cmd", st.ID, child, st.Token), st.ID, cmd); err != nil {
		return w.transient(st, err), true
	}
	return outcome{body: events.ChildStarted{Resource: child, MigrationID: cmd.MigrationID}}, true
}

// figures computes the Completed event's measurements (paper 001 §6.2).
func figures(st *events.State, now time.Time) events.Figures {
	ms := func(a, b time.Time) int64 {
		if a.IsZero() || b.IsZero() {
			return 0
		}
		return b.Sub(a).Milliseconds()
	}
	recs := 0
	for _, p := range st.Services {
		recs += p.Records
	}
	return events.Figures{
		PreLockMs: ms(st.AttemptAt, st.ConvergedAt), HistoricalMs: ms(st.HardDeleteAt, st.WriteLockedAt),
		WriteLockMs: ms(st.WriteLockedAt, st.SwappedAt), CutoverMs: ms(st.SwappedAt, now),
		TotalMs: ms(st.RequestedAt, now), Attempts: st.Attempt, Records: recs,
	}
}

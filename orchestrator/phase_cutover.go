package orchestrator

import (
	"context"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// The end of Phase 3 and Phase 4: pre-cutover validation, atomic cutover,
// source cleanup (paper 001 §4.1.4, §5.3, Algorithm 1 lines 14–20).

// cutover is the only way to the swap, Algorithm 1 lines 14–19: validate
// the copy (line 14), abort on a failed validation or an expired write
// lock (lines 15–17), swap (line 19). It is reached from the Delta phase
// when no delta page is left, from the step that copied the last delta
// pages (lastDeltaValidateSwap, with the target digests their imports
// answered), and from the Validated phase, whose validation a Validated
// event already recorded: that one swaps at once.
//
// A digests read that fails is a transient failure (the next step reads
// again); a failed validation is recorded (Validated, not OK): it sets the
// abort, and the next step rolls back (line 16).
func (w *Worker) cutover(ctx context.Context, st *events.State, res kvrouting.Resource, digests map[string][]contract.SliceDigest) outcome {
	if st.Phase == events.PhaseValidated {
		return w.swap(ctx, st, res, nil)
	}
	d, o, bad := w.verify(ctx, st, res)
	if bad {
		return o
	}
	v, err := w.validate(ctx, st, d, digests)
	if err != nil {
		return w.transient(st, err)
	}
	if w.writeExpired(st, w.cfg.Clock()) && v.OK {
		return w.rollback(ctx, st, res, "write lock expired")
	}
	if why := budgetSpent(st, w.cfg.Clock()); why != "" && v.OK {
		return w.rollback(ctx, st, res, why)
	}
	if !v.OK {
		return outcome{body: v}
	}
	return w.swap(ctx, st, res, &v)
}

// lastDeltaValidateSwap is a fused step, "last delta + validate + swap":
// it goes on from a delta copy step whose pages (o) finished the delta of
// every service, and validates and swaps in the same step (cutover) with
// the target digests the last imports answered; the Swapped event
// checkpoints the pages too. The write-blocked window is then two synced
// appends (write lock; deltas, validation and swap) instead of three.
// Pages that leave some delta to copy, or a write lock at its expiry, are
// recorded alone; so is anything short of a swap (a rollback records
// itself), and the next step validates.
func (w *Worker) lastDeltaValidateSwap(ctx context.Context, st *events.State, res kvrouting.Resource, o outcome, digests map[string][]contract.SliceDigest) outcome {
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
	tail := w.cutover(ctx, after, res, digests)
	switch b := tail.body.(type) {
	case events.Swapped:
		b.Deltas = deltas
		return outcome{body: b}
	case events.RolledBack:
		return tail
	}
	return o
}

// swap swaps (Algorithm 1 line 19) and tells both regions their authority
// at the swap's revision; only cutover calls it. v is the validation this
// step has just passed, recorded in the Swapped event (nil when a
// Validated event recorded it). A transient failure after such a
// validation records the validation (the Validated phase then retries the
// swap and counts its failures); a lost or expired lock rolls back.
//
// Until the old source hears of the swap it is exporting under the write
// lock: it refuses writes until the lock's expiry, and requests routed by
// an older revision; the authorities go out in this same step, right after
// the swap commits, long before that. When both regions have taken them
// the step schedules the cleanup too; otherwise the Swapped phase tells
// them again (scheduleCleanup) before anything else happens.
func (w *Worker) swap(ctx context.Context, st *events.State, res kvrouting.Resource, v *events.Validated) outcome {
	fail := func(o outcome) outcome {
		if _, transient := o.body.(events.StepFailed); transient && v != nil {
			return outcome{body: *v}
		}
		return o
	}
	if _, o, bad := w.verify(ctx, st, res); bad {
		return fail(o)
	}
	// Line 19: ONE conditional write. A swap replayed after a crash is
	// recognised by kvrouting (the document's LastSwap names our token).
	timed := w.timed(OpRoutingWrite)
	d, err := w.cfg.Locker.Swap(ctx, res, kvrouting.Token(st.Token), w.cached(st))
	timed()
	if o, bad := w.lockErr(ctx, st, res, err); bad {
		return fail(o)
	}
	committed := w.cfg.Clock() // the write-blocked window ends here
	w.remember(st, nil)        // the lock is gone: nothing more to cache
	ev := events.Swapped{Validation: v, At: committed}
	if d.Primary.Region != st.Source {
		ev.Rev = d.Revision
	}
	if err := w.authorizeBoth(ctx, st, d); err != nil {
		w.log.Warn("authority after the swap left to the next step", "migration", st.ID, "err", err)
		return outcome{body: ev}
	}
	ev.CleanupAt = w.cfg.Clock().Add(w.cfg.CleanupWindow) // line 20
	return outcome{body: ev}
}

// scheduleCleanup is the Swapped phase, a swap recorded without a cleanup
// schedule (its step could not tell both regions their authority, or a
// rollback found the swap done): tell them by the current document, then
// schedule the source cleanup (Algorithm 1 line 20). The current document
// may be a later migration's; its authorities are as right as the swap's.
func (w *Worker) scheduleCleanup(ctx context.Context, st *events.State) outcome {
	res, _ := kvrouting.ParseResource(st.Resource)
	d, err := w.cfg.Locker.Get(ctx, res)
	if err != nil {
		return w.transient(st, err)
	}
	if err := w.authorizeBoth(ctx, st, d); err != nil {
		return w.transient(st, err)
	}
	return outcome{body: events.CleanupScheduled{At: st.SwappedAt.Add(w.cfg.CleanupWindow)}} // line 20
}

// complete is the CleanupScheduled phase: the migration completes once
// every child migration it discovered has been started (line 9).
func (w *Worker) complete(ctx context.Context, st *events.State, now time.Time) outcome {
	if o, ok := w.startChild(ctx, st); ok {
		return o
	}
	return outcome{body: events.Completed{Figures: figures(st, now)}}
}

// cleanSource deletes the data at the source of a completed migration once
// the cleanup window has passed (paper 001 §4.1.4, Algorithm 1 line 20),
// stamped with the source's authority by the current routing document:
// each store removes its records only where that makes it a secondary, so
// a region the resource has come back to (or is moving back to) keeps its
// data, however late the request.
func (w *Worker) cleanSource(ctx context.Context, st *events.State, now time.Time) outcome {
	if now.Before(st.CleanupAt) {
		return waitFor(st.CleanupAt.Sub(now))
	}
	// The holder knows the revision its swap wrote (paper 000 §8): the
	// source is a secondary there, and a store told of anything newer since
	// refuses that stamp as stale. Only then is the document read.
	cleaned := 0
	if w.holders != nil && st.SwapRev > 0 {
		n, refused, err := w.cleanupAs(ctx, st, st.Source, contract.Authority{Rev: st.SwapRev, Role: contract.RoleSecondary})
		if err != nil {
			return waitFor(w.cfg.RetryBackoff)
		}
		if !refused {
			return outcome{body: events.CleanedUp{Records: n}}
		}
		cleaned = n
	}
	res, _ := kvrouting.ParseResource(st.Resource)
	doc, err := w.cfg.Locker.Get(ctx, res)
	if err != nil {
		return waitFor(w.cfg.RetryBackoff)
	}
	n, err := w.cleanup(ctx, st, st.Source, doc)
	if err != nil {
		return waitFor(w.cfg.RetryBackoff)
	}
	return outcome{body: events.CleanedUp{Records: cleaned + n}}
}

// cleanup removes st's resource at every endpoint of region, stamped with
// region's authority by d. A store that refuses (not a secondary by d, or
// holding a newer authority) keeps its records, which is what the refusal
// is for: it counts 0.
func (w *Worker) cleanup(ctx context.Context, st *events.State, region string, d *kvrouting.Document) (int, error) {
	n, _, err := w.cleanupAs(ctx, st, region, w.authorityAt(st, d, region))
	return n, err
}

// cleanupAs removes st's resource at every endpoint of region, stamped
// with a; refused reports that a store refused (its records stay).
func (w *Worker) cleanupAs(ctx context.Context, st *events.State, region string, a contract.Authority) (total int, refused bool, err error) {
	res, _ := kvrouting.ParseResource(st.Resource)
	eps, err := w.endpoints(ctx, region, res.Kind)
	if err != nil {
		return 0, false, err
	}
	for _, ep := range eps {
		n, err := ep.Cleanup(ctx, st.Resource, a)
		if err != nil && contract.AsError(err).Code == contract.CodeConflict {
			w.log.Info("cleanup refused: the records stay", "migration", st.ID, "region", region, "service", ep.Service(), "authority", a.String(), "err", err)
			refused = true
			continue
		}
		if err != nil {
			return total, refused, err
		}
		total += n
	}
	return total, refused, nil
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
		WriteBlockedMs: st.WriteBlocked.Milliseconds(),
	}
}

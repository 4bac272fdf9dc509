package orchestrator

import (
	"context"
	"errors"
	"fmt"
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
// pages (lastDeltaValidateSwap, with the seals its imports made), and from
// the Validated phase, whose validation a Validated event already
// recorded: that one swaps at once.
//
// The copy is over: every service not sealed yet is sealed at the target
// now (its import grant revoked, so no late import lands between
// validation and the swap, or after it: issue 14 #1, grant.go), and the
// seals' digests are what validation compares with the source's. A seal
// that fails is a transient failure (the next step seals again); a failed
// validation is recorded (Validated, not OK): it sets the abort, and the
// next step rolls back (line 16).
func (w *Worker) cutover(ctx context.Context, st *events.State, res kvrouting.Resource, seals map[string]sealed) outcome {
	if st.Phase == events.PhaseValidated {
		return w.swap(ctx, st, res, nil)
	}
	if o, bad := w.verify(ctx, st, res); bad {
		return o
	}
	v, err := w.validate(ctx, st, seals)
	if err != nil {
		return w.transient(st, err)
	}
	if w.writeExpired(st, w.cfg.Clock()) && v.OK {
		return w.rollback(ctx, st, res, "write lock expired")
	}
	if !v.OK {
		return outcome{body: v}
	}
	return w.swap(ctx, st, res, &v)
}

// lastDeltaValidateSwap is a fused step, "last delta + validate + swap":
// it goes on from a delta copy step whose pages (o) finished the delta of
// every service, or whose imports sealed every service still pending
// (seals), and validates and swaps in the same step (cutover); the Swapped
// event checkpoints the pages too. The write-blocked window is then two
// synced appends (write lock with its fence; deltas, validation and swap)
// instead of three. Pages that leave some delta to copy, or a write lock
// at its expiry, are recorded alone; so is anything short of a swap (a
// rollback records itself), and the next step seals (again: a seal is
// idempotent) and validates.
func (w *Worker) lastDeltaValidateSwap(ctx context.Context, st *events.State, res kvrouting.Resource, o outcome, seals map[string]sealed) outcome {
	var deltas []events.DeltaCopied
	switch b := o.body.(type) {
	case events.DeltaCopied:
		deltas = []events.DeltaCopied{b}
	case events.DeltasCopied:
		deltas = b.Pages
	case nil:
		if len(seals) == 0 {
			return o // nothing copied, nothing sealed
		}
	default:
		return o // a failure: nothing copied
	}
	after := st.Clone()
	for _, d := range deltas {
		applyDelta(after, d)
	}
	for _, p := range after.Pending(true) {
		if _, ok := seals[p.Service]; !ok {
			if o.body == nil {
				return w.transient(st, fmt.Errorf("delta of %s neither copied nor sealed", p.Service))
			}
			return o
		}
	}
	if w.writeExpired(st, w.cfg.Clock()) {
		return o
	}
	tail := w.cutover(ctx, after, res, seals)
	switch b := tail.body.(type) {
	case events.Swapped:
		b.Deltas = deltas
		return outcome{body: b}
	case events.RolledBack:
		return tail
	}
	if o.body == nil {
		return tail
	}
	return o
}

// swap fences the source and swaps (Algorithm 1 line 19), then keeps the
// old location fenced for as long as it is the locked secondary; only
// cutover calls it. v is the validation this step has just passed,
// recorded in the Swapped event (nil when a Validated event recorded it).
// A transient failure after such a validation records the validation (the
// Validated phase then retries the swap and counts its failures); a lost
// or expired lock rolls back.
//
// When the swap is done the step also clears the previous migration's
// post-swap fence at the new primary and schedules the cleanup, so one
// Swapped event records all of it; if the post-swap fence or the clear
// fails, the Swapped phase retries them.
func (w *Worker) swap(ctx context.Context, st *events.State, res kvrouting.Resource, v *events.Validated) outcome {
	fail := func(o outcome) outcome {
		if _, transient := o.body.(events.StepFailed); transient && v != nil {
			return outcome{body: *v}
		}
		return o
	}
	// The source's write fence of Phase 3 is up (the delta starts only
	// after it) and expires with the write lock. Until the swap commits
	// the source is the primary, and a fence may outlive the write lock
	// only once the swap is committed: a migration that stalls here must
	// not refuse users at the primary for the secondary lease, long after
	// the routing lock lapsed (issue 14 #3). If the swap fails, the
	// rollback clears the fence (and retires the token, so a late fence
	// request of this attempt cannot fence the source again).
	if o, bad := w.verify(ctx, st, res); bad {
		return fail(o)
	}
	// Line 19: ONE conditional write. A swap replayed after a crash is
	// recognised by kvrouting (the document's LastSwap names our token).
	d, err := w.cfg.Locker.Swap(ctx, res, kvrouting.Token(st.Token), w.cached(st))
	if o, bad := w.lockErr(ctx, st, res, err); bad {
		return fail(o)
	}
	committed := w.cfg.Clock() // the write-blocked window ends here
	w.remember(st, nil)        // the lock is gone: nothing more to cache
	// Committed: the old location's post-swap fence goes up in this same
	// step, before the write fence lapses with the write lock. A post-swap
	// fence set only in a later step left a gap after a slow swap in which
	// a stale cache could land a write at the old location (found by
	// `cutover chaos`: an acknowledged write lost).
	ev := events.Swapped{Validation: v, At: committed}
	// A replayed swap (its CAS reply lost) may find that a later migration
	// has pre-locked the old location since: that location is its target
	// now, and ours to fence no more (issue 14 #2). (Fencing it anyway
	// closes a hole that only caches older than the convergence wait can
	// reach — fence-driven convergence with long caches — but left fences
	// at primaries whose next migration did not clear them: chaos, session
	// 6; docs/chaos.md.)
	if !holdsOldLocation(d, st) {
		w.log.Info("post-swap fence skipped: the old location has moved on", "migration", st.ID)
		w.raiseOldWatermark(ctx, st, d)
	} else if err := w.fencePostSwap(ctx, st, d); err != nil {
		w.log.Warn("post-swap fence deferred to its own step", "migration", st.ID, "err", err)
		return outcome{body: ev}
	}
	if err := w.clearPreviousFence(ctx, st, d); err == nil {
		ev.CleanupAt = w.cfg.Clock().Add(w.cfg.CleanupWindow) // line 20
	} else {
		w.log.Info("previous fence clear deferred to its own step", "migration", st.ID, "err", err)
	}
	return outcome{body: ev}
}

// fencePostSwap keeps the old location (st.Source) write-fenced for as
// long as it is the locked secondary of the swapped document d (nil: the
// secondary lease from now). Only a committed swap may do so (issue 14 #3).
// The fence carries d's revision (at or after the swap, before any later
// swap: d still shows our token on the old location): it yields to writes
// decided on a later revision naming the old location primary, so when a
// later migration moves the resource back, its users are not refused by
// this fence while that migration has yet to clear it (found by chaos's
// refusals_without_lock: 423s at a new primary right after a move back).
func (w *Worker) fencePostSwap(ctx context.Context, st *events.State, d *kvrouting.Document) error {
	expiry := w.cfg.Clock().Add(w.cfg.Locker.Config().SecondaryLease)
	var rev uint64
	if d != nil {
		rev = d.Revision
		if holdsOldLocation(d, st) && !d.Secondary.Lock.Expiry.IsZero() {
			expiry = d.Secondary.Lock.Expiry
		}
	}
	_, err := w.fenceAt(ctx, st, contract.FenceWrite, expiry, rev, rev)
	return err
}

// raiseOldWatermark raises the old location's routing watermark to d's
// revision when the post-swap fence is skipped and the old location is not
// the primary at d: routing older than d is stale there (it predates a
// later migration's pre-lock of it), so a read or write it routed, delivered
// late, is refused as moved instead of served by a store that is no longer
// authoritative (store.checkRouted; the freshness model's skipped post-swap
// fence). Best effort: the write fence of Phase 3 already raised it to the
// write lock's revision.
func (w *Worker) raiseOldWatermark(ctx context.Context, st *events.State, d *kvrouting.Document) {
	if d == nil || d.Primary.Region == st.Source {
		return
	}
	if _, err := w.fenceAt(ctx, st, contract.FenceNone, w.cfg.Clock(), 0, d.Revision); err != nil {
		w.log.Info("old location's watermark not raised", "migration", st.ID, "err", err)
	}
}

// scheduleCleanup is the Swapped phase, a swap recorded without a cleanup
// schedule (its step could not set the post-swap fence or clear the
// previous migration's, or a rollback found the swap done): fence the old
// location as the locked secondary it now is, clear the previous fence,
// then schedule the source cleanup (Algorithm 1 line 20). The post-swap
// fence is set only while the routing document still shows our token on
// the old location: once that lock has moved on, so has the resource.
// Moving back: the previous migration left its post-swap fence at what is
// now our primary. Our swap made that region authoritative, so the fence
// must go, or users would get 423 there until it lapses.
func (w *Worker) scheduleCleanup(ctx context.Context, st *events.State) outcome {
	res, _ := kvrouting.ParseResource(st.Resource)
	d, err := w.cfg.Locker.Get(ctx, res)
	if err != nil && !errors.Is(err, kvrouting.ErrNotFound) {
		return w.transient(st, err)
	}
	if err == nil && holdsOldLocation(d, st) {
		if err := w.fencePostSwap(ctx, st, d); err != nil {
			return w.transient(st, err)
		}
	} else if err == nil {
		w.raiseOldWatermark(ctx, st, d)
	}
	if err := w.clearPreviousFence(ctx, st, d); err != nil {
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
// the cleanup window has passed (paper 001 §4.1.4, Algorithm 1 line 20).
// Never a region the resource has come back to (or is moving back to): its
// data there is live again.
func (w *Worker) cleanSource(ctx context.Context, st *events.State, now time.Time) outcome {
	if now.Before(st.CleanupAt) {
		return waitFor(st.CleanupAt.Sub(now))
	}
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

// clearPreviousFence clears, at st.Target (our new primary), the post-swap
// fence left there by the last migration that moved the resource away from
// st.Target. That migration is found by walking back the chain of previous
// migrations (each records the one before it; rolled-back ones and moves
// between other regions are stepped over); its token is in its state.
func (w *Worker) clearPreviousFence(ctx context.Context, st *events.State, d *kvrouting.Document) error {
	if err := w.noticeSwapIn(ctx, st, d); err != nil {
		return err
	}
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
		// The routing document's last swap at our pre-lock is a swap even
		// if its migration's log does not show it yet (its Swapped event
		// lost), and its token is the fence's: a later attempt of that
		// migration may have replaced the token in its state (issue 14 #2).
		if p.ID == st.PreviousSwap && st.PreviousSwapToken != "" {
			p = p.Clone()
			swapped, p.Token = true, st.PreviousSwapToken
		}
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
	return onEach(eps, func(ep Endpoint) error {
		err := ep.ClearFence(ctx, st.Resource, prev.Token)
		if err == nil || contract.AsError(err).Code == contract.CodeConflict {
			return nil // a fence of another token: not the previous migration's to clear
		}
		return fmt.Errorf("clear previous fence at %s/%s: %w", ep.Region(), ep.Service(), err)
	})
}

// noticeSwapIn tells every endpoint at st.Target (our new primary) a
// routing revision at which it is the primary (a swap-in notice: a
// FenceNone request with SwapRev, store.SetFence): a post-swap fence there
// of an older swap is cleared whatever its token, and a late request for
// one is refused. The token-by-token clear below depends on finding the
// migration (and the attempt's token) that set the fence; chaos found it
// missed (a 1-hour fence at a primary that blocked the next migration's
// fences, "fence held by another token"). The revision is read now, and
// only a document that names st.Target primary is used: a later migration
// may have moved the resource on, and then the notice is its to send. d is
// a document just read (the swap's, or the Swapped phase's read); nil
// reads one.
func (w *Worker) noticeSwapIn(ctx context.Context, st *events.State, d *kvrouting.Document) error {
	res, _ := kvrouting.ParseResource(st.Resource)
	if d == nil {
		var err error
		if d, err = w.cfg.Locker.Get(ctx, res); err != nil {
			if errors.Is(err, kvrouting.ErrNotFound) {
				return nil
			}
			return err
		}
	}
	if d.Primary.Region != st.Target {
		return nil
	}
	eps, err := w.cfg.Directory.Endpoints(ctx, st.Target, res.Kind)
	if err != nil {
		return err
	}
	f := contract.Fence{Level: contract.FenceNone, Token: st.Token, SwapRev: d.Revision}
	return onEach(eps, func(ep Endpoint) error {
		if err := ep.SetFence(ctx, st.Resource, f); err != nil {
			return fmt.Errorf("swap-in notice at %s/%s: %w", ep.Region(), ep.Service(), err)
		}
		return nil
	})
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

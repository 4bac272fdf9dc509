package orchestrator

import (
	"context"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// Phase 3: write lock and delta catch-up (paper 001 §4.1.3, Algorithm 1
// lines 11–13; the validation and the swap that end it are in
// phase_cutover.go). The write lock is never extended: reaching its expiry
// rolls back (nextAction).

// escalateWriteAndFence is a fused step, "escalation + fence": it takes
// the write lock (Algorithm 1 line 12) when the historical copy is done
// and, in the same step, sets the write fence at the source: the delta can
// start after ONE synced append, and the write-blocked window users feel
// is a step shorter. If the fence fails, WriteLocked records the lock
// alone and the WriteLocked phase sets it (fenceWrite, counting the
// failure).
func (w *Worker) escalateWriteAndFence(ctx context.Context, st *events.State, res kvrouting.Resource) outcome {
	at := w.cfg.Clock()
	d, err := w.cfg.Locker.EscalateWrite(ctx, res, kvrouting.Token(st.Token), w.cached(st)) // line 12
	if o, bad := w.lockErr(ctx, st, res, err); bad {
		return o
	}
	w.remember(st, d)
	ev := events.WriteLocked{Expiry: d.Primary.Lock.Expiry, At: at}
	// Reads routed by a document older than this write lock are refused at
	// the source from now on (Fence.ReadRev): they resolve again, through
	// to the leader while the lock is in force, so no stale cache keeps
	// reading the source once the swap has made the target primary.
	//
	// The same request exports each service's first delta page, once the
	// fence is set (carry.go): the delta step imports it without asking
	// the source again.
	exports := map[string]contract.ExportRequest{}
	for _, p := range st.Services {
		exports[p.Service] = w.deltaRequest(st, p)
	}
	if names, pages, err := w.fenceExporting(ctx, st, contract.FenceWrite, ev.Expiry, 0, d.Revision, exports); err == nil {
		ev.Fenced, ev.Services = true, names
		carry(st, pages)
	} else {
		w.log.Info("write fence deferred to its own step", "migration", st.ID, "err", err)
	}
	return outcome{body: ev}
}

// fenceWrite is the WriteLocked phase: the write fence at the source
// (services return the retriable HTTP 423, Algorithm 1 line 12), when the
// escalation's step could not set it.
func (w *Worker) fenceWrite(ctx context.Context, st *events.State, res kvrouting.Resource) outcome {
	if o, bad := w.verify(ctx, st, res); bad {
		return o
	}
	// The fence's ReadRev must be set before the swap can happen (it is
	// what refuses a stale cache's reads at the source from then on): from
	// this worker's cached document, or a leader read when another worker
	// took the lock (chaos found a stale read after a swap whose write fence
	// a second worker had set without it).
	d := w.cached(st)
	if d == nil || d.Primary.Lock.Type != kvrouting.LockWrite || string(d.Primary.Lock.Token) != st.Token {
		var err error
		if d, err = w.cfg.Locker.Get(ctx, res); err != nil {
			return w.transient(st, err)
		}
	}
	var readRev uint64
	if d.Primary.Lock.Type == kvrouting.LockWrite && string(d.Primary.Lock.Token) == st.Token {
		readRev = d.Revision
	}
	names, err := w.fenceAt(ctx, st, contract.FenceWrite, st.LockExpiry, 0, readRev)
	if err != nil {
		return w.transient(st, err)
	}
	return outcome{body: events.Fenced{Level: contract.FenceWrite, Services: names}}
}

// delta is the Delta phase, Algorithm 1 line 13: copy the next delta pages
// (export from the source with the historical sync token, import at the
// target) of every service not done, sealing each service's copy at the
// target with its last page (copyRun). When this step's pages finish the
// delta, it validates and swaps too (lastDeltaValidateSwap); when no page
// is left, the step seals, validates and swaps (lines 14–19, cutover).
//
// The write-blocked window is then, with the source in the orchestrators'
// region: the escalation's step (a routing write, the source's fence, one
// synced append), the source's inline export, ONE round trip to the target
// (grant, last page, seal and digests in one request per service, all
// services at once), the source's digests, the swap's routing write: the
// physical bound of DESIGN.md "Regions for real" plus local work.
func (w *Worker) delta(ctx context.Context, st *events.State, res kvrouting.Resource) outcome {
	pending := st.Pending(true)
	if len(pending) == 0 {
		return w.cutover(ctx, st, res, nil)
	}
	if o, bad := w.verify(ctx, st, res); bad {
		return o
	}
	o, seals := w.copyPages(ctx, st, contract.Delta, pending, true)
	return w.lastDeltaValidateSwap(ctx, st, res, o, seals)
}

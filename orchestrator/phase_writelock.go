package orchestrator

import (
	"context"
	"sync"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// Phase 3: write lock and delta catch-up (paper 001 §4.1.3, Algorithm 1
// lines 11–13; the validation and the swap that end it are in
// phase_cutover.go). The write lock is never extended: reaching its expiry
// rolls back (nextAction).

// escalateWrite takes the write lock (Algorithm 1 line 12) when the
// historical copy is done, and in the same step asks every source service
// for its first delta page, stamped with the write lock: each installs the
// write fence (exporting: updates, new writes and deletes refused,
// HTTP 423) before it reads, so the page is final (carry.go). Requests
// routed by an older revision are refused as moved from then on, so no
// stale cache keeps reading the source once the swap has made the target
// primary. An export that fails is repeated by the delta step, which
// installs the fence the same way before it reads.
func (w *Worker) escalateWrite(ctx context.Context, st *events.State, res kvrouting.Resource) outcome {
	at := w.cfg.Clock()
	timed := w.timed(OpRoutingWrite)
	d, err := w.cfg.Locker.EscalateWrite(ctx, res, kvrouting.Token(st.Token), w.cached(st)) // line 12
	timed()
	if o, bad := w.lockErr(ctx, st, res, err); bad {
		return o
	}
	w.remember(st, d)
	auth := w.authorityAt(st, d, st.Source)
	// The exports run alongside the WriteLocked append (the engine waits
	// for both before the delta step): the event records the lock, not
	// the fences, and a fence the step did not install is installed by
	// the delta step's export, as when this step's export fails.
	exports := func(ctx context.Context) {
		pages := map[string]carriedPage{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, p := range st.Services {
			wg.Go(func() {
				src, _, err := w.endpointPair(ctx, st, p.Service)
				if err != nil {
					return
				}
				req := w.deltaRequest(st, p)
				req.Authority = auth
				pi, err := src.Export(ctx, st.ID, req)
				if err != nil {
					w.log.Info("first delta page left to the delta step", "migration", st.ID, "service", p.Service, "err", err)
					return
				}
				mu.Lock()
				pages[p.Service] = carriedPage{req: req, pi: pi}
				mu.Unlock()
			})
		}
		wg.Wait()
		carry(st, pages)
	}
	return outcome{body: events.WriteLocked{Expiry: d.Primary.Lock.Expiry, At: at}, alongside: exports}
}

// delta is the Delta phase, Algorithm 1 line 13: copy the next delta pages
// (export from the source with the historical sync token, import at the
// target) of every service not done, the import of each service's last
// page answering the target's digests (copyRun). When this step's pages
// finish the delta, it validates and swaps too (lastDeltaValidateSwap);
// when no page is left, the step validates and swaps (lines 14–19,
// cutover).
//
// The write-blocked window is then, with the source in the orchestrators'
// region: the escalation's step (a routing write, then the source's first
// delta page with the fence installed beside one synced append), ONE
// round trip to the target (the last page and its digests in one request
// per service, all services at once), the source's digests, the swap's
// routing write: the physical bound of DESIGN.md "Regions for real" plus
// local work.
func (w *Worker) delta(ctx context.Context, st *events.State, res kvrouting.Resource) outcome {
	pending := st.Pending(true)
	if len(pending) == 0 {
		return w.cutover(ctx, st, res, nil)
	}
	d, o, bad := w.verify(ctx, st, res)
	if bad {
		return o
	}
	o, digests := w.copyPages(ctx, st, d, contract.Delta, pending)
	return w.lastDeltaValidateSwap(ctx, st, res, o, digests)
}

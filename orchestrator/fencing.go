package orchestrator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// FencePolicy decides the store fences a worker sets at the source before
// Phase 3 (paper 001 Table 4). The protocol's policy (ProtocolFencing) is
// the default; other policies exist so that `cutover bench fence` can
// migrate one workload each way and measure what the paper could only
// infer (paper 001 §6.5); they live with the bench (package bench), and a
// worker is given one with WithFencePolicy. Phase 3's write fence and the
// post-swap fence are the protocol's in every policy. Implementations must
// be safe for concurrent use.
type FencePolicy interface {
	// WriteFenceAtPreLock reports whether the source is write fenced from
	// the pre-lock on: set on the first step after the PreLocked event,
	// before the convergence wait (the routing lock cannot be a write lock
	// before convergence, paper 000 §4.1, so the store fence alone carries
	// the block). The protocol: false (paper 001 §4.1.1).
	WriteFenceAtPreLock() bool
	// Phase2Fence is the fence level set at the source for the historical
	// copy, with the hard-delete lock and each renewal of it. The event
	// still records the hard-delete fence (it starts the historical copy).
	// The protocol: contract.FenceHardDelete, deletes become tombstones and
	// writes flow (paper 001 §4.1.2, §4.3).
	Phase2Fence() contract.FenceLevel
}

// ProtocolFencing returns the protocol's fence policy, the default: the
// source is hard-delete fenced in Phase 2 and write fenced only in Phase 3
// (paper 001 Algorithm 1).
func ProtocolFencing() FencePolicy { return protocolFencing{} }

type protocolFencing struct{}

var _ FencePolicy = protocolFencing{}

func (protocolFencing) WriteFenceAtPreLock() bool        { return false }
func (protocolFencing) Phase2Fence() contract.FenceLevel { return contract.FenceHardDelete }

// fence sets a fence of level, expiring at the lock's expiry plus the
// enforcers' skew, at every source endpoint; it returns their services.
func (w *Worker) fence(ctx context.Context, st *events.State, level contract.FenceLevel, expiry time.Time) ([]string, error) {
	return w.fenceAt(ctx, st, level, expiry, 0, 0)
}

// fenceAt is fence with the fence's SwapRev (the routing revision of the
// committed swap a post-swap fence keeps; 0 for any other fence) and
// ReadRev (reads decided on an older routing are refused as moved: the
// write lock's revision for the write fence of Phase 3, the swap's for a
// post-swap fence; issue 15 #3).
func (w *Worker) fenceAt(ctx context.Context, st *events.State, level contract.FenceLevel, expiry time.Time, swapRev, readRev uint64) ([]string, error) {
	names, _, err := w.fenceExporting(ctx, st, level, expiry, swapRev, readRev, nil)
	return names, err
}

// fenceExporting is fenceAt where a service with an export request in
// exports also exports that page in its fence request, once the fence is
// set (carry.go); the pages exported come back by service.
func (w *Worker) fenceExporting(ctx context.Context, st *events.State, level contract.FenceLevel, expiry time.Time, swapRev, readRev uint64,
	exports map[string]contract.ExportRequest) ([]string, map[string]carriedPage, error) {
	res, _ := kvrouting.ParseResource(st.Resource)
	eps, err := w.cfg.Directory.Endpoints(ctx, st.Source, res.Kind)
	if err != nil {
		return nil, nil, err
	}
	f := contract.FenceFor(level, st.Token, expiry, w.skew)
	f.SwapRev, f.ReadRev = swapRev, readRev
	// Every service's fence at once: the step (and in Phase 3 the write
	// fence users feel) waits for the slowest, not for their sum.
	errs := make([]error, len(eps))
	pages := make([]*carriedPage, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() {
			var exp *contract.ExportRequest
			if r, ok := exports[ep.Service()]; ok {
				exp = &r
			}
			pi, exported, err := setFence(ctx, st, ep, f, exp)
			if err != nil && swapRev == 0 && contract.AsError(err).Code == contract.CodeConflict {
				// Another token's fence: a post-swap fence of an older swap
				// that its move back did not clear goes on a notice that
				// this region is the primary at our lock's revision; then
				// once more.
				if w.noticeSourcePrimary(ctx, st, ep) {
					pi, exported, err = setFence(ctx, st, ep, f, exp)
				}
			}
			if err != nil {
				errs[i] = fmt.Errorf("fence %s at %s/%s: %w", level, ep.Region(), ep.Service(), err)
			} else if exported {
				pages[i] = &carriedPage{req: *exp, pi: pi}
			}
		})
	}
	wg.Wait()
	names := make([]string, 0, len(eps))
	var out map[string]carriedPage
	for i, ep := range eps {
		if errs[i] != nil {
			return nil, nil, errs[i]
		}
		names = append(names, ep.Service())
		if pages[i] != nil {
			if out == nil {
				out = map[string]carriedPage{}
			}
			out[ep.Service()] = *pages[i]
		}
	}
	return names, out, nil
}

// noticeSourcePrimary sends ep (at st.Source) a notice that the source is
// the primary at the revision of our lock (store.SetFence with FenceNone
// and SwapRev): a post-swap fence there of an older swap — left by a move
// away whose move back did not clear it — goes, whatever its token. It
// reports whether the notice was sent (our lock is on the source, as the
// routing document shows).
func (w *Worker) noticeSourcePrimary(ctx context.Context, st *events.State, ep Endpoint) bool {
	d := w.cached(st)
	if d == nil {
		res, _ := kvrouting.ParseResource(st.Resource)
		var err error
		if d, err = w.cfg.Locker.Get(ctx, res); err != nil {
			return false
		}
	}
	if d.Primary.Region != st.Source || string(d.Primary.Lock.Token) != st.Token {
		return false
	}
	n := contract.Fence{Level: contract.FenceNone, Token: st.Token, SwapRev: d.Revision}
	if err := ep.SetFence(ctx, st.Resource, n); err != nil {
		return false
	}
	w.log.Info("a stale post-swap fence at the source superseded", "migration", st.ID, "service", ep.Service())
	return true
}

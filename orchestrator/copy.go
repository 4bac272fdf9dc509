package orchestrator

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// The paginated copy of Phases 2 and 3 (paper 001 Algorithm 1 lines 6–8
// and 13): runs of pages exported at the source and imported at the
// target, checkpointed in one event per step.

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

// sealed is a service's copy sealed at the target (contract.ApplyImport):
// the target's digests after its grant was revoked, and whether the seal
// found the grant no longer in force (Refused).
type sealed struct {
	digests []contract.SliceDigest
	refused bool
}

// copyRun copies up to w.cfg.PagesPerStep consecutive pages of one service,
// starting at req. Exports (a read of the source store and a synced
// publish) run ahead of the imports by up to two pages while the target
// imports them one after another, in order; so a run costs about its
// imports plus one export, and one checkpoint event for all of it. It
// returns the pages copied, in order; an error ends the run, and the pages
// before it stand (the next step resumes after them). No new export starts
// once pageRunBudget has passed, so a run never holds a step for long.
//
// Every import carries the attempt's grant (PageInfo.GrantUntil): granting
// and importing are one request, not two round trips; only the attempt's
// first historical run grants on its own, before it resets the target.
//
// A delta run (Phase 3, the source write-fenced) asks for its pages inline
// (ExportRequest.Inline: the import request carries them, one cross-region
// round trip a page instead of two) and, with seal, seals the service's
// copy at the target in the request that imports its last page, or in a
// request of its own when that page is empty (contract.ApplyImport; the
// digests come back in the reply). An import refused because the attempt's
// token is retired (an earlier seal of this attempt whose step was lost)
// seals at once: what the target holds is then for validation to judge.
func (w *Worker) copyRun(ctx context.Context, st *events.State, service string, req contract.ExportRequest, seal bool) ([]copiedPage, *sealed, error) {
	src, tgt, err := w.endpointPair(ctx, st, service)
	if err != nil {
		return nil, nil, err
	}
	_, gated := tgt.(contract.ImportGate)
	gated = gated && st.Token != ""
	grantUntil := w.cfg.Clock().Add(w.cfg.Locker.Config().HardDeleteLease)
	if gated && req.Mode == contract.Historical && req.Cursor == 0 && req.SyncToken == 0 {
		// The attempt's first page: the target may still hold an older copy
		// (a move back within the cleanup window) with records the source
		// no longer has; the copy starts from an empty target (issue 14
		// #16), under a grant of its own. A redelivered first run resets
		// again: nothing of it was recorded, and it re-exports from the
		// start.
		if _, err := w.grantImport(ctx, st, tgt); err != nil {
			return nil, nil, err
		}
		if _, err := tgt.(contract.ImportGate).ResetForCopy(ctx, st.Resource, st.Token); err != nil {
			return nil, nil, fmt.Errorf("reset %s at %s: %w", service, st.Target, err)
		}
	}
	if req.Mode == contract.Delta {
		req.Inline = true
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
			pi, ok := carried(st, service, r) // exported by the write fence's request (carry.go)
			var err error
			if !ok {
				pi, err = src.Export(ctx, st.ID, r)
			}
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
			return out, nil, fmt.Errorf("export %s: %w", service, e.err)
		}
		last := seal && !e.pi.More
		if e.pi.Count > 0 || last {
			e.pi.Resource = st.Resource
			if gated {
				e.pi.Grant, e.pi.GrantUntil = st.Token, grantUntil
			}
			e.pi.Seal = last
			r, err := w.importPage(ctx, st, tgt, e.pi)
			if err != nil && seal && contract.AsError(err).Code == contract.CodeConflict {
				s, serr := w.sealAt(ctx, st, tgt)
				if serr != nil {
					return out, nil, serr
				}
				s.refused = true
				return out, s, nil
			}
			if err != nil {
				return out, nil, fmt.Errorf("import %s: %w", service, err)
			}
			if last {
				s, err := w.sealedBy(ctx, st, tgt, r)
				if err != nil {
					return out, nil, err
				}
				out = append(out, copiedPage{e.req, e.pi})
				return out, s, nil
			}
		}
		out = append(out, copiedPage{e.req, e.pi})
	}
	return out, nil, nil
}

// importPage imports pi at tgt. A transport that predates grants in import
// requests refuses a page whose grant it did not record (CodeConflict): the
// page is then granted on its own and imported once more, and a retired
// token stays refused by the grant.
func (w *Worker) importPage(ctx context.Context, st *events.State, tgt Endpoint, pi PageInfo) (contract.ImportResult, error) {
	r, err := tgt.Import(ctx, st.ID, pi)
	if err == nil || pi.GrantUntil.IsZero() || pi.Seal || contract.AsError(err).Code != contract.CodeConflict {
		return r, err
	}
	if _, gerr := w.grantImport(ctx, st, tgt); gerr != nil {
		return r, gerr
	}
	return tgt.Import(ctx, st.ID, pi)
}

// pageRunBudget is how long a copy run keeps starting pages.
const pageRunBudget = 500 * time.Millisecond

// copyPages copies a run of pages of every pending service concurrently and
// checkpoints them in one event (one synced append instead of one per page
// and service; still one checkpoint entry per page, Algorithm 1 lines 8 and
// 13). Pages that failed are not recorded: their services retry in the
// next step; only when no page at all was copied does the step count a
// transient failure. With seal (delta runs of Phase 3), the services whose
// copy a run sealed at the target come back in seals.
func (w *Worker) copyPages(ctx context.Context, st *events.State, mode contract.ExportMode, pending []events.ServiceProgress, seal bool) (o outcome, seals map[string]sealed) {
	type result struct {
		pages []copiedPage
		seal  *sealed
		err   error
	}
	rs := make([]result, len(pending))
	var wg sync.WaitGroup
	for i, p := range pending {
		req := contract.ExportRequest{Resource: st.Resource, Mode: mode, SyncToken: p.SyncToken, Cursor: p.Cursor, Limit: w.cfg.PageLimit, Attempt: uint32(max(st.Attempt, 0))}
		if mode == contract.Delta {
			req = w.deltaRequest(st, p)
		}
		wg.Go(func() { rs[i].pages, rs[i].seal, rs[i].err = w.copyRun(ctx, st, p.Service, req, seal) })
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
		if r.seal != nil {
			if seals == nil {
				seals = map[string]sealed{}
			}
			seals[svc] = *r.seal
		}
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
		return outcome{body: hist[0]}, seals
	case len(hist) > 1:
		return outcome{body: events.PagesCopied{Pages: hist}}, seals
	case len(delta) == 1:
		return outcome{body: delta[0]}, seals
	case len(delta) > 1:
		return outcome{body: events.DeltasCopied{Pages: delta}}, seals
	}
	if len(seals) > 0 && first == nil {
		return outcome{}, seals // sealed, nothing new to record: validation decides
	}
	return w.transient(st, first), seals
}

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
	granted, err := w.grantImport(ctx, st, tgt)
	if err != nil {
		return nil, err
	}
	if granted && req.Mode == contract.Historical && req.Cursor == 0 && req.SyncToken == 0 {
		// The attempt's first page: the target may still hold an older copy
		// (a move back within the cleanup window) with records the source
		// no longer has; the copy starts from an empty target (issue 14
		// #16). A redelivered first run resets again: nothing of it was
		// recorded, and it re-exports from the start.
		if _, err := tgt.(contract.ImportGate).ResetForCopy(ctx, st.Resource, st.Token); err != nil {
			return nil, fmt.Errorf("reset %s at %s: %w", service, st.Target, err)
		}
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
			if granted {
				e.pi.Grant = st.Token
			}
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
		req := contract.ExportRequest{Resource: st.Resource, Mode: mode, SyncToken: p.SyncToken, Cursor: p.Cursor, Limit: w.cfg.PageLimit, Attempt: uint32(max(st.Attempt, 0))}
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

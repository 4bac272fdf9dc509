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
		eps, err := w.endpoints(ctx, region, res.Kind)
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
	req  contract.ExportRequest
	pi   PageInfo
	took time.Duration // the export's round trip
	// tseq is the target's change sequence its import answered (a delta
	// run's last page).
	tseq uint64
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
// Every request is stamped by d, the document the step holds: the exports
// with the source's authority (installed before the export reads: the
// tombstoning primary of Phase 2, whose first page issues the sync token;
// the exporting store of Phase 3), the imports with the target's
// (importing). The attempt's first historical page resets the target
// (ImportRequest.Reset): a target that still holds an older copy (a move
// back within the cleanup window) keeps nothing the source no longer has
// (a second driver's reset at the same revision removes nothing, so it
// cannot undo this run's pages: docs/participant.md "Import") —
// unless since is above 0: a move back within the reverse window
// (reverse.go), whose target still holds exactly what it held at the
// earlier swap, copies only the records changed after since, without a
// reset. Its first page (which issues the sync token and cannot start at
// a cursor) asks for one record; the next start after since.
//
// Every run asks for its pages inline (ExportRequest.Inline: the export's
// reply carries the page and the import request takes it to the target,
// one cross-region round trip a page instead of two, and no synced
// publish; a page too large for a message still goes through PAGES). In
// a delta run (Phase 3, the source exporting) the import of the service's
// last page asks for the target's digests (ImportRequest.Digests; a request
// without a page when that page is empty): validation compares them with
// the source's, and the target is reached once in Phase 3. The historical
// run's last import asks for them too, kept for an empty delta, which
// imports nothing: the target is then not reached in Phase 3 at all
// (carry.go).
func (w *Worker) copyRun(ctx context.Context, st *events.State, d *kvrouting.Document, service string, req contract.ExportRequest, since uint64) ([]copiedPage, []contract.SliceDigest, error) {
	src, tgt, err := w.endpointPair(ctx, st, service)
	if err != nil {
		return nil, nil, err
	}
	req.Authority = w.authorityAt(st, d, st.Source)
	into := w.authorityAt(st, d, st.Target)
	reset := req.Mode == contract.Historical && req.Cursor == 0 && req.SyncToken == 0 && since == 0
	limit := req.Limit
	if req.Mode == contract.Historical && since > 0 {
		if req.SyncToken == 0 {
			req.Limit = 1 // paper 001 (A2): the token first; the pages after since next
		} else {
			req.Cursor = max(req.Cursor, since)
		}
	}
	req.Inline = true
	type exported struct {
		req  contract.ExportRequest
		pi   PageInfo
		err  error
		took time.Duration // the export's round trip (0: carried)
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
			pi, ok := carried(st, service, r) // exported by the write lock's step (carry.go)
			var err error
			var took time.Duration
			if !ok {
				t0 := time.Now()
				pi, err = src.Export(ctx, st.ID, r)
				took = time.Since(t0)
			}
			select {
			case pages <- exported{r, pi, err, took}:
			case <-stop:
				return
			}
			if err != nil || !pi.More {
				return
			}
			r.Cursor = pi.Next
			if r.Mode == contract.Historical {
				r.SyncToken = pi.SyncToken // the snapshot the first page fixed
				r.Cursor, r.Limit = max(r.Cursor, since), limit
			}
		}
	}()
	// Imports run up to importDepth at a time: a page's transfer and
	// decoding overlap the previous page's write at the target, which
	// serialises them under the resource's lock. Imports of distinct pages
	// commute (paper 001 (A3): the import rule converges in any order), so
	// only these pages wait for every import before them: the attempt's
	// first (its reset must not remove a later page's records) and the
	// historical and delta runs' last (the digests they read must include
	// every page).
	var (
		out      []copiedPage
		digests  []contract.SliceDigest
		inflight []*importSlot
		failed   error
	)
	settle := func(n int) { // completes the oldest slots, in order, until n remain
		for len(inflight) > n {
			sl := inflight[0]
			inflight = inflight[1:]
			<-sl.done
			if failed == nil && sl.err != nil {
				failed = fmt.Errorf("import %s: %w", service, sl.err)
			}
			if failed == nil {
				out = append(out, sl.page)
			}
		}
	}
	for e := range pages {
		if e.err != nil {
			settle(0)
			return out, nil, cmp.Or(failed, fmt.Errorf("export %s: %w", service, e.err))
		}
		last := e.req.Mode == contract.Delta && !e.pi.More
		if last && e.req.Cursor == 0 && e.pi.Count == 0 {
			// An empty delta (its first page, read under the write fence,
			// has nothing and no more): nothing to import. Validation
			// compares the target's copy as its last historical import
			// answered it (carry.go; without it, validation reads the
			// target). The target is not told the write lock's revision;
			// the swap's authority follows in the same step.
			settle(0)
			if failed != nil {
				return out, nil, failed
			}
			page := copiedPage{req: e.req, pi: e.pi, took: e.took}
			tc, ok := takeTargetCopy(st, service)
			if !ok {
				return append(out, page), nil, nil
			}
			page.tseq = tc.seq
			return append(out, page), tc.digests, nil
		}
		// The last historical page's import answers the target's copy (an
		// empty page too: a request without a page), kept for an empty
		// delta (carry.go).
		histLast := e.req.Mode == contract.Historical && !e.pi.More
		sl := &importSlot{page: copiedPage{req: e.req, pi: e.pi, took: e.took}, done: make(chan struct{})}
		if e.pi.Count == 0 && !last && !reset && !histLast {
			close(sl.done) // nothing to import
			inflight = append(inflight, sl)
			continue
		}
		e.pi.Resource, e.pi.Authority, e.pi.Reset, e.pi.Digests = st.Resource, into, reset, last || histLast
		if e.pi.Count == 0 {
			e.pi.Seq, e.pi.Page = 0, nil
		}
		sl.page.pi = e.pi
		first := reset
		if first || last || histLast {
			settle(0)
		} else {
			settle(importDepth - 1)
		}
		if failed != nil {
			settle(0)
			return out, nil, failed
		}
		reset = false
		inflight = append(inflight, sl)
		go func() {
			defer close(sl.done)
			var r contract.ImportResult
			r, sl.err = tgt.Import(ctx, st.ID, e.pi)
			if last {
				digests = nonNil(r.Digests) // read after settle(0) below
				sl.page.tseq = r.Seq
			}
			if histLast && sl.err == nil {
				keepTargetCopy(st, service, r) // for an empty delta
			}
		}()
		if first || last {
			settle(0)
			if failed != nil {
				return out, nil, failed
			}
			if last {
				return out, digests, nil
			}
		}
	}
	settle(0)
	return out, nil, failed
}

// importSlot is one page's import in flight.
type importSlot struct {
	page copiedPage
	err  error
	done chan struct{}
}

// importDepth is how many imports of one copy run are in flight at once.
const importDepth = 2

// nonNil returns d, or an empty non-nil slice: "digests read, none" differs
// from "not read".
func nonNil(d []contract.SliceDigest) []contract.SliceDigest {
	if d == nil {
		return []contract.SliceDigest{}
	}
	return d
}

// pageRunBudget is how long a copy run keeps starting pages.
const pageRunBudget = 500 * time.Millisecond

// copyPages copies a run of pages of every pending service concurrently,
// stamped by d (copyRun), and checkpoints them in one event (one synced
// append instead of one per page and service; still one checkpoint entry
// per page, Algorithm 1 lines 8 and 13). Pages that failed are not
// recorded: their services retry in the next step; only when no page at
// all was copied does the step count a transient failure. The target
// digests that delta runs read with their last page come back by service.
func (w *Worker) copyPages(ctx context.Context, st *events.State, d *kvrouting.Document, mode contract.ExportMode, pending []events.ServiceProgress) (o outcome, digests map[string][]contract.SliceDigest) {
	type result struct {
		pages   []copiedPage
		digests []contract.SliceDigest
		err     error
	}
	rs := make([]result, len(pending))
	var wg sync.WaitGroup
	for i, p := range pending {
		req := contract.ExportRequest{Resource: st.Resource, Mode: mode, SyncToken: p.SyncToken, Cursor: p.Cursor, Limit: w.cfg.PageLimit, Attempt: uint32(max(st.Attempt, 0))}
		if mode == contract.Delta {
			req = w.deltaRequest(st, p)
		}
		wg.Go(func() { rs[i].pages, rs[i].digests, rs[i].err = w.copyRun(ctx, st, d, p.Service, req, p.Since) })
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
		if r.digests != nil {
			if digests == nil {
				digests = map[string][]contract.SliceDigest{}
			}
			digests[svc] = r.digests
		}
		for _, c := range r.pages {
			pi := c.pi
			if mode == contract.Delta {
				dc := events.DeltaCopied{Service: svc, Cursor: c.req.Cursor, Next: pi.Next, Count: pi.Count, More: pi.More, Dependents: pi.Dependents}
				if !pi.More && r.digests != nil && c.tseq != 0 {
					dc.TargetSeq, dc.TargetSum = c.tseq, digestSum(r.digests) // the copy validation will compare
				}
				delta = append(delta, dc)
			} else {
				hist = append(hist, events.PageCopied{Service: svc, Mode: uint8(contract.Historical), Cursor: c.req.Cursor,
					Next: pi.Next, SyncToken: pi.SyncToken, Count: pi.Count, More: pi.More, Dependents: pi.Dependents, ExportMs: c.took.Milliseconds()})
			}
		}
	}
	switch {
	case len(hist) == 1:
		return outcome{body: hist[0]}, digests
	case len(hist) > 1:
		return outcome{body: events.PagesCopied{Pages: hist}}, digests
	case len(delta) == 1:
		return outcome{body: delta[0]}, digests
	case len(delta) > 1:
		return outcome{body: events.DeltasCopied{Pages: delta}}, digests
	}
	return w.transient(st, first), digests
}

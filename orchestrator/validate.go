package orchestrator

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// validate compares source and target before the swap (paper 001 §5.3):
// per-slice digests (count + content hash of every record) of every
// service, read through the user read path at both regions, all services
// and both regions in parallel, within ValidationBudget. Exceeding the
// budget fails validation.
//
// The reads are stamped by d, the document the step holds: the source's
// (exporting: the write fence is installed at every service before its
// digests are read) and the target's. The target's digests are those its
// last delta import answered (copyRun) where there is one. A read that
// fails (a region unreachable, a stale stamp) is returned as err, a
// transient failure of the step, not a failed validation: the copy is not
// known to differ.
func (w *Worker) validate(ctx context.Context, st *events.State, d *kvrouting.Document, digests map[string][]contract.SliceDigest) (events.Validated, error) {
	start := w.cfg.Clock()
	ctx, cancel := context.WithTimeout(ctx, w.cfg.ValidationBudget)
	defer cancel()
	type result struct {
		service string
		slices  int
		diff    string
		err     error // fails the step
	}
	from, into := w.authorityAt(st, d, st.Source), w.authorityAt(st, d, st.Target)
	results := make([]result, len(st.Services))
	var wg sync.WaitGroup
	for i, p := range st.Services {
		wg.Go(func() {
			results[i] = result{service: p.Service}
			src, tgt, err := w.endpointPair(ctx, st, p.Service)
			if err != nil {
				results[i].err = err
				return
			}
			var s []contract.SliceDigest
			var serr error
			var inner sync.WaitGroup
			inner.Go(func() { s, serr = src.Digests(ctx, st.Resource, from) })
			t, ok := digests[p.Service]
			if !ok {
				if t, err = tgt.Digests(ctx, st.Resource, into); err != nil {
					inner.Wait()
					results[i].err = fmt.Errorf("digests at the target: %w", err)
					return
				}
			}
			inner.Wait()
			if serr != nil {
				results[i].err = fmt.Errorf("digests at the source: %w", serr)
				return
			}
			results[i].slices, results[i].diff = compareDigests(s, t)
		})
	}
	wg.Wait()
	v := events.Validated{OK: true, Duration: w.cfg.Clock().Sub(start)}
	var bad []string
	for _, r := range results {
		if r.err != nil && ctx.Err() == nil {
			return v, fmt.Errorf("%s: %w", r.service, r.err)
		}
		v.Slices += r.slices
		if r.diff != "" {
			bad = append(bad, r.service+": "+r.diff)
		}
	}
	if ctx.Err() != nil {
		bad = append(bad, fmt.Sprintf("validation budget %s exceeded", w.cfg.ValidationBudget))
	}
	if len(bad) > 0 {
		v.OK, v.Detail = false, strings.Join(bad, "; ")
	}
	return v, nil
}

// compareDigests compares two slice-digest lists; diff describes the first
// mismatching slices ("" when equal).
func compareDigests(src, tgt []contract.SliceDigest) (slices int, diff string) {
	m := make(map[int64]contract.SliceDigest, len(tgt))
	for _, d := range tgt {
		m[d.Slice] = d
	}
	var bad []string
	for _, d := range src {
		t, ok := m[d.Slice]
		delete(m, d.Slice)
		switch {
		case !ok && d.Count > 0:
			bad = append(bad, fmt.Sprintf("slice %s: %d records missing at target", sliceName(d.Slice), d.Count))
		case ok && t.Count != d.Count:
			bad = append(bad, fmt.Sprintf("slice %s: count %d at source, %d at target", sliceName(d.Slice), d.Count, t.Count))
		case ok && t.Hash != d.Hash:
			bad = append(bad, fmt.Sprintf("slice %s: content differs", sliceName(d.Slice)))
		}
	}
	for _, t := range m {
		if t.Count > 0 {
			bad = append(bad, fmt.Sprintf("slice %s: %d extra records at target", sliceName(t.Slice), t.Count))
		}
	}
	if len(bad) > 3 {
		bad = append(bad[:3], fmt.Sprintf("and %d more", len(bad)-3))
	}
	return len(src), strings.Join(bad, ", ")
}

func sliceName(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339) }

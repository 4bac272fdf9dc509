package contracttest

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/cutover/cutover/services/contract"
)

// testCleanup: cleanup removes the resource at the target (rollback of a
// migration) and is harmless when repeated; the source is untouched.
func testCleanup(t *testing.T, f Factory) {
	k := newKit(t, f, "cleanup")
	k.fence(contract.FenceHardDelete, "kit-hd")
	ids := k.writeN("r", 5)
	k.del(ids[4])
	hist, _ := k.historical(2)
	k.importAll(hist)
	k.converged()
	src := k.digests(k.h.Source)
	// A rollback: the source is the primary, no migration in flight.
	k.route(k.h.SourceRegion, "")

	n, err := k.h.Target.Cleanup(k.ctx, k.res)
	if err != nil {
		t.Fatalf("Cleanup at the target: %v", err)
	}
	if n < 4 {
		t.Fatalf("Cleanup at the target removed %d records, want at least the 4 live ones", n)
	}
	if d := k.digests(k.h.Target); len(d) != 0 {
		t.Fatalf("target digests after Cleanup: %v", d)
	}
	for _, id := range ids {
		if _, found := k.read(id); found {
			t.Fatalf("Read(%q) at the target after Cleanup: found", id)
		}
	}
	if left := k.targetRecords(); len(left) != 0 {
		t.Fatalf("target exports %q after Cleanup", sortedKeys(left))
	}
	if n, err := k.h.Target.Cleanup(k.ctx, k.res); err != nil || n != 0 {
		t.Fatalf("Cleanup again = %d, %v; want 0, nil", n, err)
	}
	if after := k.digests(k.h.Source); !slices.Equal(after, src) {
		t.Fatalf("Cleanup at the target changed the source")
	}
}

// testCleanupSpares: Cleanup deletes nothing, and returns 0, at a region
// that the resource's routing names the primary or the target of a
// migration in flight (contract.Participant.Cleanup): a rollback or a late
// source cleanup must never delete live data, however the request got
// there (issue 14 #4). At a region that is neither, it deletes.
func testCleanupSpares(t *testing.T, f Factory) {
	k := newKit(t, f, "spare")
	k.fence(contract.FenceHardDelete, "kit-hd")
	k.writeN("r", 5)
	hist, _ := k.historical(0)
	k.importAll(hist)
	k.converged()
	src, dst := k.h.SourceRegion, k.h.TargetRegion
	for _, c := range []struct {
		what            string
		at              contract.Participant
		primary, target string
	}{
		{"at the target, the primary after the swap", k.h.Target, dst, ""},
		{"at the target of a migration in flight", k.h.Target, src, dst},
		{"at the source, the primary during a migration", k.h.Source, src, dst},
		{"at the source, the primary", k.h.Source, src, ""},
		{"at the source, the target of a move back", k.h.Source, dst, src},
	} {
		k.route(c.primary, c.target)
		before := k.digests(c.at)
		n, err := c.at.Cleanup(k.ctx, k.res)
		if err != nil || n != 0 {
			t.Fatalf("Cleanup %s = %d, %v; want 0, nil", c.what, n, err)
		}
		if after := k.digests(c.at); !slices.Equal(after, before) {
			t.Fatalf("Cleanup %s changed its digests:\nbefore %v\nafter  %v", c.what, before, after)
		}
	}
	// The source after the swap, once the window has passed: cleaned.
	k.route(dst, "")
	target := k.digests(k.h.Target)
	n, err := k.h.Source.Cleanup(k.ctx, k.res)
	if err != nil || n < 5 {
		t.Fatalf("Cleanup at the old source = %d, %v; want the 5 records", n, err)
	}
	if d := k.digests(k.h.Source); len(d) != 0 {
		t.Fatalf("source digests after its Cleanup: %v", d)
	}
	if after := k.digests(k.h.Target); !slices.Equal(after, target) {
		t.Fatalf("Cleanup at the old source changed the primary")
	}
}

// testEmptyResource: a resource never written exports one empty final page
// and has no digests.
func testEmptyResource(t *testing.T, f Factory) {
	k := newKit(t, f, "empty")
	pages := k.export(k.h.Source, contract.ExportRequest{Resource: k.res, Mode: contract.Historical})
	if len(pages) != 1 || len(pages[0].Records) != 0 {
		t.Fatalf("historical export of an empty resource: %d pages, %d records", len(pages), len(idsOf(pages)))
	}
	if ids := idsOf(k.delta(pages[0].SyncToken, 0)); len(ids) != 0 {
		t.Fatalf("delta of an empty resource: %q", ids)
	}
	if d := k.digests(k.h.Source); len(d) != 0 {
		t.Fatalf("digests of an empty resource: %v", d)
	}
	recs, err := k.h.Source.ReadSlice(k.ctx, k.res, 0, math.MaxInt64)
	if err != nil || len(recs) != 0 {
		t.Fatalf("ReadSlice of an empty resource = %d records, %v", len(recs), err)
	}
}

// testBadRequests: malformed requests fail with CodeInvalid and change
// nothing at either region.
func testBadRequests(t *testing.T, f Factory) {
	k := newKit(t, f, "bad")
	k.writeN("r", 3)
	hist, tok := k.historical(0)
	k.importAll(hist)
	src, dst := k.digests(k.h.Source), k.digests(k.h.Target)
	targetBefore := k.targetRecords()

	s, tg := k.h.Source, k.h.Target
	for _, mode := range []contract.ExportMode{0, 3, 255} {
		_, err := s.Export(k.ctx, contract.ExportRequest{Resource: k.res, Mode: mode})
		k.mustCode("Export with mode "+mode.String(), err, contract.CodeInvalid)
	}
	for _, mode := range []contract.ExportMode{contract.Historical, contract.Delta} {
		_, err := s.Export(k.ctx, contract.ExportRequest{Mode: mode})
		k.mustCode(mode.String()+" Export of an empty resource name", err, contract.CodeInvalid)
	}
	// A record that would change the target if it were applied.
	rec := hist[0].Records[0]
	rec.Version += 10
	rec.Data = []byte("must not land")
	svc := s.Service()
	for _, c := range []struct {
		what string
		page contract.Page
	}{
		{"Import into an empty resource name", contract.Page{Service: svc, Mode: contract.Historical, Records: []contract.Record{rec}}},
		{"Import of another service's page", contract.Page{Service: svc + "-other", Resource: k.res, Mode: contract.Historical, Records: []contract.Record{rec}}},
		{"Import of a record without id", contract.Page{Service: svc, Resource: k.res, Mode: contract.Historical, Records: []contract.Record{rec, {Version: 1, Data: []byte("x")}}}},
	} {
		_, err := tg.Import(k.ctx, c.page)
		k.mustCode(c.what, err, contract.CodeInvalid)
	}
	_, err := s.Digests(k.ctx, "")
	k.mustCode("Digests of an empty resource name", err, contract.CodeInvalid)
	_, err = s.ReadSlice(k.ctx, "", 0, 1)
	k.mustCode("ReadSlice of an empty resource name", err, contract.CodeInvalid)
	k.mustCode("SetFence on an empty resource name",
		s.SetFence(k.ctx, "", contract.FenceFor(contract.FenceWrite, "kit-t", time.Now().Add(time.Hour), 0)), contract.CodeInvalid)
	k.mustCode("SetFence without a token",
		s.SetFence(k.ctx, k.res, contract.FenceFor(contract.FenceWrite, "", time.Now().Add(time.Hour), 0)), contract.CodeInvalid)
	k.mustCode("ClearFence without a token", s.ClearFence(k.ctx, k.res, ""), contract.CodeInvalid)
	_, err = tg.Cleanup(k.ctx, "")
	k.mustCode("Cleanup of an empty resource name", err, contract.CodeInvalid)

	k.unchangedSince(tok, src)
	if after := k.digests(k.h.Target); !slices.Equal(after, dst) {
		t.Fatalf("bad requests changed the target digests")
	}
	after := k.targetRecords()
	for id, r := range targetBefore {
		if a, ok := after[id]; !ok || a.Version != r.Version || sameContent(a, r) != nil {
			t.Fatalf("bad requests changed the target's %q", id)
		}
	}
	// No fence was set by the refused SetFence calls.
	if _, err := k.tryWrite("r000", false); err != nil {
		t.Fatalf("Write after refused SetFence calls: %v", err)
	}
}

package conformance

import (
	"math"
	"slices"

	"github.com/cutover/cutover/services/contract"
)

// testCleanup: a cleanup under a secondary's authority removes the
// resource (the target after a rollback, the source after the window) and
// is harmless when repeated; at a primary, or at the target of a migration
// in flight, or under a stale authority, it removes nothing however it got
// there (contract.Participant.Cleanup).
func testCleanup(t T, f Factory) {
	k := newKit(t, f, "cleanup")
	k.hardDelete()
	ids := k.writeN("r", 5)
	k.del(ids[4])
	hist, _ := k.historical(2)
	k.importAll(hist)
	k.converged()
	src, dst := k.digests(k.h.Source), k.digests(k.h.Target)

	// Refused, nothing removed: the target while it imports, the source
	// while it is the primary, either under an authority older than the
	// one it holds.
	for _, c := range []struct {
		what string
		at   contract.Participant
		a    contract.Authority
	}{
		{"at the target of a migration in flight", k.h.Target, k.tgt},
		{"at the source, the primary", k.h.Source, contract.Authority{Rev: k.rev, Role: contract.RolePrimary}},
		{"at the target, by a stale secondary authority", k.h.Target, contract.Authority{Rev: k.rev - 1, Role: contract.RoleSecondary}},
	} {
		before := k.digests(c.at)
		n, err := c.at.Cleanup(k.ctx, k.res, c.a)
		k.mustCode("Cleanup "+c.what, err, contract.CodeConflict)
		if n != 0 {
			t.Fatalf("Cleanup %s removed %d records", c.what, n)
		}
		if after := k.digests(c.at); !slices.Equal(after, before) {
			t.Fatalf("Cleanup %s changed its digests:\nbefore %v\nafter  %v", c.what, before, after)
		}
	}

	// A rollback: the target is a secondary now.
	gone := k.next(contract.RoleSecondary)
	n, err := k.h.Target.Cleanup(k.ctx, k.res, gone)
	if err != nil {
		t.Fatalf("Cleanup at the rolled-back target: %v", err)
	}
	if n < 4 {
		t.Fatalf("Cleanup at the target removed %d records, want at least the 4 live ones", n)
	}
	if d := k.digests(k.h.Target); len(d) != 0 {
		t.Fatalf("target digests after Cleanup: %v", d)
	}
	recs, err := k.h.Target.ReadSlice(k.ctx, k.res, 0, math.MaxInt64)
	if err != nil || len(recs) != 0 {
		t.Fatalf("ReadSlice at the target after Cleanup = %d records, %v", len(recs), err)
	}
	if got := k.held(k.h.Target, k.res); got != gone {
		t.Fatalf("target holds %s after Cleanup, want %s", got, gone)
	}
	if n, err := k.h.Target.Cleanup(k.ctx, k.res, gone); err != nil || n != 0 {
		t.Fatalf("Cleanup again = %d, %v; want 0, nil", n, err)
	}
	if after := k.digests(k.h.Source); !slices.Equal(after, src) {
		t.Fatalf("Cleanup at the target changed the source")
	}
	_ = dst
}

// testEmptyResource: a resource never written exports one empty final page
// and has no digests.
func testEmptyResource(t T, f Factory) {
	k := newKit(t, f, "empty")
	k.hardDelete()
	pages := k.export(k.h.Source, contract.ExportRequest{Resource: k.res, Mode: contract.Historical})
	if len(pages) != 1 || len(pages[0].Records) != 0 {
		t.Fatalf("historical export of an empty resource: %d pages, %d records", len(pages), len(idsOf(pages)))
	}
	k.writeLock()
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
func testBadRequests(t T, f Factory) {
	k := newKit(t, f, "bad")
	k.writeN("r", 3)
	k.hardDelete()
	hist, tok := k.historical(0)
	k.importAll(hist)
	src, dst := k.digests(k.h.Source), k.digests(k.h.Target)
	heldSrc, heldDst := k.held(k.h.Source, k.res), k.held(k.h.Target, k.res)

	s, tg := k.h.Source, k.h.Target
	for _, mode := range []contract.ExportMode{0, 3, 255} {
		_, err := s.Export(k.ctx, contract.ExportRequest{Resource: k.res, Mode: mode, Authority: k.src})
		k.mustCode("Export with mode "+mode.String(), err, contract.CodeInvalid)
	}
	for _, mode := range []contract.ExportMode{contract.Historical, contract.Delta} {
		_, err := s.Export(k.ctx, contract.ExportRequest{Mode: mode, Authority: k.src})
		k.mustCode(mode.String()+" Export of an empty resource name", err, contract.CodeInvalid)
		_, err = s.Export(k.ctx, contract.ExportRequest{Resource: k.res, Mode: mode})
		k.mustCode(mode.String()+" Export without an authority", err, contract.CodeInvalid)
	}
	// A record that would change the target if it were applied.
	rec := hist[0].Records[0]
	rec.Version += 10
	rec.Data = []byte("must not land")
	svc := s.Service()
	page := func(p contract.Page) *contract.Page { return &p }
	for _, c := range []struct {
		what string
		req  contract.ImportRequest
	}{
		{"Import into an empty resource name", contract.ImportRequest{Authority: k.tgt, Page: page(contract.Page{Service: svc, Mode: contract.Historical, Records: []contract.Record{rec}})}},
		{"Import of another service's page", contract.ImportRequest{Resource: k.res, Authority: k.tgt, Page: page(contract.Page{Service: svc + "-other", Resource: k.res, Mode: contract.Historical, Records: []contract.Record{rec}})}},
		{"Import of another resource's page", contract.ImportRequest{Resource: k.res, Authority: k.tgt, Page: page(contract.Page{Service: svc, Resource: k.res + "-other", Mode: contract.Historical, Records: []contract.Record{rec}})}},
		{"Import of a record without id", contract.ImportRequest{Resource: k.res, Authority: k.tgt, Page: page(contract.Page{Service: svc, Resource: k.res, Mode: contract.Historical, Records: []contract.Record{rec, {Version: 1, Data: []byte("x")}}})}},
		{"Import without an authority", contract.ImportRequest{Resource: k.res, Page: page(contract.Page{Service: svc, Resource: k.res, Mode: contract.Historical, Records: []contract.Record{rec}})}},
		{"Import under a malformed authority", contract.ImportRequest{Resource: k.res, Authority: contract.Authority{Rev: k.rev + 5, Role: "owner"}, Page: page(contract.Page{Service: svc, Resource: k.res, Mode: contract.Historical, Records: []contract.Record{rec}})}},
	} {
		_, err := tg.Import(k.ctx, c.req)
		k.mustCode(c.what, err, contract.CodeInvalid)
	}
	_, err := s.Digests(k.ctx, "", contract.Authority{})
	k.mustCode("Digests of an empty resource name", err, contract.CodeInvalid)
	_, err = s.ReadSlice(k.ctx, "", 0, 1)
	k.mustCode("ReadSlice of an empty resource name", err, contract.CodeInvalid)
	_, err = s.Authorize(k.ctx, "", k.src)
	k.mustCode("Authorize of an empty resource name", err, contract.CodeInvalid)
	for _, a := range []contract.Authority{
		{Rev: k.rev + 5, Role: contract.RoleExporting},                       // no until
		{Rev: k.rev + 5, Role: contract.RoleSecondary, Until: hour()},        // an until it does not end
		{Rev: k.rev + 5, Role: contract.RoleImporting, Deletes: "tombstone"}, // tombstones off a primary
		{Rev: k.rev + 5, Role: "owner"},
	} {
		_, err = s.Authorize(k.ctx, k.res, a)
		k.mustCode("Authorize of a malformed "+a.String(), err, contract.CodeInvalid)
	}
	_, err = tg.Cleanup(k.ctx, "", k.next(contract.RoleSecondary))
	k.mustCode("Cleanup of an empty resource name", err, contract.CodeInvalid)
	_, err = tg.Cleanup(k.ctx, k.res, contract.Authority{})
	k.mustCode("Cleanup without an authority", err, contract.CodeInvalid)

	if got := k.held(k.h.Source, k.res); got != heldSrc {
		t.Fatalf("bad requests changed the source's authority: %s, was %s", got, heldSrc)
	}
	if got := k.held(k.h.Target, k.res); got != heldDst {
		t.Fatalf("bad requests changed the target's authority: %s, was %s", got, heldDst)
	}
	if after := k.digests(k.h.Target); !slices.Equal(after, dst) {
		t.Fatalf("bad requests changed the target digests")
	}
	k.unchangedSince(tok, src)
}

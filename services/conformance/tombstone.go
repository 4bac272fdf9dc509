package conformance

import (
	"slices"

	"github.com/cutover/cutover/services/contract"
)

// checkTargetTombstone checks that the target holds id as a tombstone
// without content (paper 001 §4.3).
func (k *kit) checkTargetTombstone(id string) {
	k.t.Helper()
	r, ok := k.targetRecords()[id]
	switch {
	case !ok:
		k.t.Fatalf("target holds nothing for %q, want its tombstone", id)
	case !r.Deleted:
		k.t.Fatalf("target holds a live %q (%q), want its tombstone", id, r.Data)
	case len(r.Data) != 0 || len(r.Refs) != 0:
		k.t.Fatalf("target tombstone %q carries data %q refs %q", id, r.Data, r.Refs)
	}
}

// testTombstoneAfterLiveCopy is paper 001 §4.3's resurrection scenario: a
// record copied live, then deleted at the source under the hard-delete
// fence; the delta carries the tombstone and the target stops serving it.
func testTombstoneAfterLiveCopy(t T, f Factory) {
	k := newKit(t, f, "tomb")
	ids := k.writeN("r", 4) // r000 has a ref
	k.hardDelete()
	hist, tok := k.historical(0)
	k.importAll(hist)
	k.converged()
	if _, found := k.read(ids[0]); !found {
		t.Fatalf("Read(%q) at the target after the copy: not found", ids[0])
	}

	k.del(ids[0])
	k.writeLock()
	delta := k.delta(tok, 0)
	if r, ok := recordsOf(delta)[ids[0]]; !ok || !r.Deleted {
		t.Fatalf("delta from %d holds %+v for the deleted %q, want its tombstone", tok, r, ids[0])
	}
	k.importAll(delta)
	k.converged() // the target's user path no longer finds ids[0]
	k.checkTargetTombstone(ids[0])
}

// testTombstoneBeatsOlderLive: an old live copy imported after the
// tombstone does not bring the record back (paper 001 §4.3, (A3)).
func testTombstoneBeatsOlderLive(t T, f Factory) {
	k := newKit(t, f, "resurrect")
	k.writeN("r", 3)
	k.hardDelete()
	hist, tok := k.historical(0)
	k.del("r001")
	k.writeLock()
	delta := k.delta(tok, 0)

	k.importAll(delta) // the tombstone first: the target never saw r001 live
	k.importAll(hist)  // then the older live copy
	k.converged()
	k.checkTargetTombstone("r001")
	k.importAll(delta)
	k.importAll(hist)
	k.converged()
	k.checkTargetTombstone("r001")
}

// testTombstoneStrippedAtSource: the source's tombstone already has no
// Data and no Refs, and its refs are no longer reported as dependents
// (paper 001 §4.3: content and PII are stripped immediately).
func testTombstoneStrippedAtSource(t T, f Factory) {
	k := newKit(t, f, "strip")
	k.write("r000", true)
	k.write("r001", true)
	k.hardDelete()
	k.del("r000")
	for _, req := range []contract.ExportRequest{
		{Resource: k.res, Mode: contract.Historical},
		{Resource: k.res, Mode: contract.Delta},
	} {
		if req.Mode == contract.Delta {
			k.writeLock()
		}
		pages := k.export(k.h.Source, req) // checkPage rejects a tombstone with content
		r, ok := recordsOf(pages)["r000"]
		if !ok || !r.Deleted {
			t.Fatalf("%s export holds %+v for the deleted r000, want its tombstone", req.Mode, r)
		}
		for _, p := range pages {
			if slices.Contains(p.Dependents, refFor("r000")) {
				t.Fatalf("%s export reports %q, a ref of the tombstone r000, as a dependent", req.Mode, refFor("r000"))
			}
		}
	}
}

// testDependents: every ref of a live record of a page is one of the
// page's dependents, each named once (paper 001 §5.1: dependency
// discovery starts child migrations).
func testDependents(t T, f Factory) {
	k := newKit(t, f, "deps")
	k.writeN("r", 7) // refs on r000, r003, r006
	for _, id := range []string{"s000", "s001"} {
		rec, err := k.h.SourceUser.Write(k.res, id, []byte("shared "+id), []string{"media/kit-shared", refFor(id)}, contract.Authority{})
		if err != nil {
			t.Fatalf("Write(%q): %v", id, err)
		}
		k.mu.Lock()
		k.mu.live[id] = rec
		k.mu.Unlock()
	}
	k.hardDelete()
	pages, _ := k.historical(2)
	all := map[string]bool{}
	for i, p := range pages {
		if d := slices.Compact(slices.Sorted(slices.Values(p.Dependents))); len(d) != len(p.Dependents) {
			t.Fatalf("page %d names a dependent twice: %q", i, p.Dependents)
		}
		for _, r := range p.Records {
			for _, ref := range r.Refs {
				if !slices.Contains(p.Dependents, ref) {
					t.Fatalf("page %d: record %q refs %q, missing from dependents %q", i, r.ID, ref, p.Dependents)
				}
			}
		}
		for _, d := range p.Dependents {
			all[d] = true
		}
	}
	for _, want := range []string{refFor("r000"), refFor("r003"), refFor("r006"), "media/kit-shared", refFor("s000"), refFor("s001")} {
		if !all[want] {
			t.Fatalf("no page reports dependent %q; got %q", want, sortedKeys(all))
		}
	}
	k.importAll(pages)
	k.converged()
}

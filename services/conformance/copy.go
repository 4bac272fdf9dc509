package conformance

import (
	"fmt"
	"slices"

	"github.com/cutover/cutover/services/contract"
)

// testHistoricalCopy: a historical export in pages of any size, imported
// at the target, converges (paper 001 (A2), (A3)). Tombstones written
// under the hard-delete fence before the token travel with it (§4.6).
func testHistoricalCopy(t T, f Factory) {
	for _, limit := range []int{1, 2, 7, 0} {
		name := fmt.Sprintf("limit=%d", limit)
		if limit == 0 {
			name = "limit=default"
		}
		t.Run(name, func(t T) {
			k := newKit(t, f, "hist")
			// Deleted without a fence: gone before the migration, whether the
			// service removes it or keeps a tombstone.
			k.write("x000", true)
			k.del("x000")
			k.hardDelete()
			ids := k.writeN("r", 23)
			for _, id := range ids[:5] {
				k.write(id, true)
			}
			k.del(ids[5])
			k.del(ids[6])

			pages, tok := k.historical(limit)
			if tok == 0 {
				t.Fatalf("historical export of a written resource issued sync token 0")
			}
			if limit > 0 && len(pages) < (len(ids)+limit-1)/limit {
				t.Fatalf("%d records in %d pages of at most %d", len(ids), len(pages), limit)
			}
			got := idsOf(pages)
			seen := map[string]bool{}
			for _, id := range got {
				if seen[id] {
					t.Fatalf("record %q exported twice", id)
				}
				seen[id] = true
			}
			for _, id := range ids {
				if !seen[id] {
					t.Fatalf("record %q not exported; got %q", id, got)
				}
			}
			if len(got) > len(ids)+1 {
				t.Fatalf("exported %q, want %q (and maybe the tombstone of x000)", got, ids)
			}
			k.importAll(pages)
			k.converged()
			tr := k.targetRecords()
			for _, id := range ids[5:7] {
				if r, ok := tr[id]; !ok || !r.Deleted {
					t.Fatalf("target holds %+v for %q, want its tombstone", r, id)
				}
			}
		})
	}
}

// replaySetup writes, exports historically, changes things after the
// token (updates, tombstones, creates) and exports the delta: the pages of
// a whole migration, oldest first.
func replaySetup(t T, f Factory) (*kit, []contract.Page) {
	k := newKit(t, f, "replay")
	k.hardDelete()
	ids := k.writeN("r", 12)
	hist, tok := k.historical(3)
	for _, id := range ids[:4] {
		k.write(id, false)
	}
	k.del(ids[0]) // updated, then deleted
	k.del(ids[4])
	k.del(ids[5])
	k.writeN("n", 3)
	k.writeLock()
	delta := k.delta(tok, 3)
	return k, append(hist, delta...)
}

// testReplayedPages: pages imported twice, or in reverse order, converge
// (paper 001 (A3), §5.1: "replay ... converge on the same target state").
func testReplayedPages(t T, f Factory) {
	t.Run("twice", func(t T) {
		k, pages := replaySetup(t, f)
		for i, p := range pages {
			k.importAll([]contract.Page{p})
			res := k.importAll([]contract.Page{p})
			if res[0].Applied != 0 {
				t.Fatalf("page %d imported again applied %d records, want 0", i, res[0].Applied)
			}
		}
		k.converged()
	})
	t.Run("reverse", func(t T) {
		k, pages := replaySetup(t, f)
		rev := slices.Clone(pages)
		slices.Reverse(rev)
		k.importAll(rev)
		k.converged()
		// Newest first means every older copy that follows is stale.
		for i, res := range k.importAll(pages) {
			if res.Applied != 0 {
				t.Fatalf("page %d imported after newer ones applied %d records, want 0", i, res.Applied)
			}
		}
		k.converged()
	})
}

// testDeltaFromToken: the delta from t returns every record created,
// updated or tombstoned after t, and nothing committed before it (paper
// 001 (A2)).
func testDeltaFromToken(t T, f Factory) {
	k := newKit(t, f, "delta")
	k.hardDelete()
	a := k.writeN("a", 6)
	before := k.write("a001", true) // the last state before the token
	_, tok := k.historical(0)

	updated := k.write(a[1], true)
	k.del(a[2])
	k.write(a[3], false)
	k.del(a[3])
	b := k.writeN("b", 3)
	k.write("c000", false)
	k.del("c000")

	k.writeLock()
	pages := k.delta(tok, 2)
	ids := idsOf(pages)
	got := recordsOf(pages)
	if len(ids) != len(got) {
		t.Fatalf("delta without concurrent writes returned a record twice: %q", ids)
	}
	want := append([]string{a[1], a[2], a[3], "c000"}, b...)
	slices.Sort(want)
	if keys := sortedKeys(got); !slices.Equal(keys, want) {
		t.Fatalf("delta from %d returned %q, want %q", tok, keys, want)
	}
	if err := sameContent(got[a[1]], updated); err != nil {
		t.Fatalf("delta record %q: %v", a[1], err)
	}
	if got[a[1]].Version <= before.Version {
		t.Fatalf("updated record %q: version %d, not above %d", a[1], got[a[1]].Version, before.Version)
	}
	for _, id := range []string{a[2], a[3], "c000"} {
		if !got[id].Deleted {
			t.Fatalf("delta record %q: %+v, want a tombstone", id, got[id])
		}
	}
	k.mu.Lock()
	live := k.mu.live
	for _, id := range b {
		if err := sameContent(got[id], live[id]); err != nil {
			k.mu.Unlock()
			t.Fatalf("delta record %q: %v", id, err)
		}
	}
	k.mu.Unlock()

	// A token issued after every change has nothing after it.
	_, tok2 := k.historical(0)
	if late := idsOf(k.delta(tok2, 0)); len(late) != 0 {
		t.Fatalf("delta from the latest token %d returned %q", tok2, late)
	}
}

// testPageBoundaries: with writes between the pages of the historical
// export and a writer running during it, no record is lost or exported
// twice within a pass, and the copy converges once the write fence stops
// the writes and the delta runs (paper 001 (A2), §4.6).
func testPageBoundaries(t T, f Factory) {
	k := newKit(t, f, "bounds")
	k.hardDelete()
	seed := k.writeN("s", 30)

	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 150 {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("w%04d", i)
			if _, err := k.tryWrite(id, i%4 == 0); err != nil {
				t.Errorf("concurrent Write(%q): %v", id, err)
				return
			}
			if i%3 == 1 {
				if _, err := k.tryWrite(id, false); err != nil {
					t.Errorf("concurrent update of %q: %v", id, err)
					return
				}
			}
			if i%5 == 2 {
				if err := k.tryDelete(id); err != nil {
					t.Errorf("concurrent Delete(%q): %v", id, err)
					return
				}
			}
		}
	}()
	stopWriter := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-done
	}
	defer stopWriter()

	// Between pages: a new record, an update of an early record (likely
	// exported already) and of a late one (likely not yet), a tombstone.
	gaps := 0
	between := func(i int) {
		gaps++
		k.write(fmt.Sprintf("g%03d", i), i%2 == 0)
		if i < 10 {
			k.write(seed[i], false)
			k.write(seed[29-i], false)
		}
		if i < 5 {
			k.del(seed[10+i])
		}
	}
	hist, err := k.tryExport(k.h.Source, contract.ExportRequest{Resource: k.res, Mode: contract.Historical, Limit: 4}, between)
	if err != nil {
		t.Fatal(err)
	}
	if gaps == 0 {
		t.Fatalf("historical export of 30+ records in pages of 4 came in one page")
	}
	tok := hist[0].SyncToken
	stopWriter()
	if t.Failed() {
		t.FailNow()
	}
	k.writeLock() // no more writes: the delta can finish
	delta := k.delta(tok, 4)

	for _, pass := range []struct {
		name  string
		pages []contract.Page
	}{{"historical", hist}, {"delta", delta}} {
		seen := map[string]bool{}
		for _, p := range pass.pages {
			for _, r := range p.Records {
				if seen[r.ID] {
					t.Fatalf("%s export returned %q twice", pass.name, r.ID)
				}
				seen[r.ID] = true
			}
		}
	}
	exported := recordsOf(append(slices.Clone(hist), delta...))
	k.mu.Lock()
	all := append(sortedKeys(k.mu.live), sortedKeys(k.mu.gone)...)
	k.mu.Unlock()
	for _, id := range all {
		if _, ok := exported[id]; !ok {
			t.Fatalf("record %q exists at the source but neither the historical nor the delta export returned it", id)
		}
	}
	k.importAll(hist)
	k.importAll(delta)
	k.converged()
}

package store

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cutover/cutover/internal/testutil"
	"github.com/cutover/cutover/services/contract"
)

// swappedIn is the stamp of a read routed to a target after its swap: a
// read does not install it, so the target stays an importing one.
var swappedIn = role(1000, contract.RolePrimary)

// copyChanges exports Changes(afterSeq, uptoSeq] from src page by page and
// imports each page into dst, as the orchestrator does.
func copyChanges(tb testing.TB, src, dst *Store, r string, afterSeq, uptoSeq uint64, page int) (pages [][]Record) {
	tb.Helper()
	cursor := afterSeq
	for {
		recs, last, more, err := src.Changes(r, cursor, uptoSeq, page)
		if err != nil {
			tb.Fatalf("export: %v", err)
		}
		if len(recs) > 0 {
			if _, _, err := dst.Import(r, importing(1), false, recs); err != nil {
				tb.Fatalf("import: %v", err)
			}
			pages = append(pages, recs)
		}
		if !more {
			return pages
		}
		cursor = last
	}
}

func TestChangesHistoricalDeltaSplit(t *testing.T) {
	clock := testutil.NewClock()
	s := MustOpenMem(t, clock)
	for i := 1; i <= 5; i++ {
		MustPut(t, s, res, rec(name(i), "message", "v1"), true)
	}
	MustAuthorize(t, s, res, tombstoning(1, clock.Now().Add(time.Hour)))
	token := MustToken(t, s, res)
	assertEqual(t, "token", token, uint64(5))

	// After the token: an update, a tombstone, a new record.
	MustPut(t, s, res, rec(name(2), "message", "v2"), false)
	MustDelete(t, s, res, name(3))
	MustPut(t, s, res, rec(name(6), "message", "v1"), true)

	hist := MustChanges(t, s, res, 0, token, 2)
	assertEqual(t, "historical", ids(hist), []string{name(1), name(4), name(5)})

	delta := MustChanges(t, s, res, token, 0, 2)
	assertEqual(t, "delta", ids(delta), []string{name(2), name(3), name(6)})
	assertEqual(t, "updated content in delta", string(delta[0].Data), "v2")
	if !delta[1].Deleted || delta[1].Data != nil {
		t.Fatalf("tombstone in delta: %+v", delta[1])
	}
	for i := 1; i < len(delta); i++ {
		if delta[i].Seq <= delta[i-1].Seq || delta[i-1].Seq <= token {
			t.Fatalf("delta not in seq order after the token: %+v", delta)
		}
	}

	t.Run("paging", func(t *testing.T) {
		recs, last, more, err := s.Changes(res, 0, token, 2)
		if err != nil || len(recs) != 2 || !more || last != recs[1].Seq {
			t.Fatalf("first page: %v %d %v %v", ids(recs), last, more, err)
		}
		recs, last2, more, err := s.Changes(res, last, token, 2)
		if err != nil || len(recs) != 1 || more || last2 != recs[0].Seq {
			t.Fatalf("last page: %v %d %v %v", ids(recs), last2, more, err)
		}
		recs, last3, more, err := s.Changes(res, last2, token, 2)
		if err != nil || len(recs) != 0 || more || last3 != last2 {
			t.Fatalf("past the end: %v %d %v %v", ids(recs), last3, more, err)
		}
		recs, _, _, err = s.Changes(res, 7, 7, 10)
		if err != nil || len(recs) != 0 {
			t.Fatalf("empty range: %v %v", recs, err)
		}
	})
}

// TestResurrectionScenario is paper 001 §4.3 through two stores: copy, delete
// at the source, delta, import. With the hard-delete fence the target ends
// with a tombstone; without it the deleted message comes back, and the
// digests show it.
func TestResurrectionScenario(t *testing.T) {
	for _, fenced := range []bool{true, false} {
		name := map[bool]string{true: "hard-delete fence", false: "no fence (the bug)"}[fenced]
		t.Run(name, func(t *testing.T) {
			clock := testutil.NewClock()
			src := MustOpenMem(t, clock)
			dst := MustOpenMem(t, clock)
			MustPut(t, src, res, rec("M", "message", "hello, personal data"), true)
			MustPut(t, src, res, rec("N", "message", "other"), true)

			if fenced {
				MustAuthorize(t, src, res, tombstoning(1, clock.Now().Add(6*time.Hour)))
			}
			token := MustToken(t, src, res)
			// 1. M is copied from source to target.
			copyChanges(t, src, dst, res, 0, token, 1)
			if _, err := dst.GetAt(res, "M", swappedIn); err != nil {
				t.Fatalf("M not copied: %v", err)
			}
			// 2-3. A user deletes M at the source while migration continues.
			dr := MustDelete(t, src, res, "M")
			assertEqual(t, "tombstoned", dr.Tombstoned, fenced)
			// Phase 3: write fence, then the delta.
			MustAuthorize(t, src, res, exporting(2, clock.Now().Add(5*time.Minute)))
			copyChanges(t, src, dst, res, token, 0, 10)

			_, err := dst.GetAt(res, "M", swappedIn)
			equal := slices.Equal(MustDigests(t, src, res), MustDigests(t, dst, res))
			if fenced {
				assertErrIs(t, "M at target", err, ErrNotFound)
				live, tomb := MustCount(t, dst, res)
				assertEqual(t, "target counts", [2]int{live, tomb}, [2]int{1, 1})
				assertEqual(t, "digests equal", equal, true)
			} else {
				if err != nil {
					t.Fatalf("expected the resurrection without a fence, got %v", err)
				}
				assertEqual(t, "validation sees the extra record", equal, false)
			}
		})
	}
}

func TestImportIdempotent(t *testing.T) {
	clock := testutil.NewClock()
	src := MustOpenMem(t, clock)
	// A history with creates, updates, a tombstone and records sharing slices.
	for i := 0; i < 40; i++ {
		MustPut(t, src, res, Record{ID: name(i), Kind: "message", Data: []byte{byte(i)}, Refs: []string{"media/" + name(i)}}, true)
		clock.Advance(10 * time.Minute)
	}
	MustAuthorize(t, src, res, tombstoning(1, clock.Now().Add(time.Hour)))
	token := MustToken(t, src, res)
	for i := 0; i < 40; i += 3 {
		MustPut(t, src, res, Record{ID: name(i), Data: []byte("updated")}, false)
	}
	for i := 0; i < 40; i += 7 {
		MustDelete(t, src, res, name(i))
	}
	// Pages as exported: historical then delta, plus stale copies of records
	// taken before they changed (what a replayed old page carries).
	var pages [][]Record
	for _, r := range [][2]uint64{{0, token}, {token, 0}} {
		cursor := r[0]
		for {
			recs, last, more, err := src.Changes(res, cursor, r[1], 6)
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, recs)
			if !more {
				break
			}
			cursor = last
		}
	}
	stale := make([]Record, 0, 40)
	for i := 0; i < 40; i++ {
		stale = append(stale, Record{ID: name(i), Kind: "message", Version: 1, Data: []byte{byte(i)},
			Refs: []string{"media/" + name(i)}, CreatedAt: 1})
	}
	// The stale copies' CreatedAt is wrong on purpose for the ones that were
	// never changed: fix it so they are the true v1.
	for _, p := range pages {
		for _, r := range p {
			if r.Version == 1 {
				stale[idx(r.ID)] = r
			}
		}
	}
	for i := range stale {
		if stale[i].CreatedAt == 1 {
			stale[i].CreatedAt = clock.Now().Add(-time.Duration(400-10*i) * time.Minute).UnixNano()
		}
	}
	pages = append(pages, stale)

	want := MustDigests(t, src, res)
	wantLive, wantTomb := MustCount(t, src, res)

	orders := [][]int{}
	n := len(pages)
	fwd, rev := make([]int, 0, 2*n), make([]int, 0, n)
	for i := 0; i < n; i++ {
		fwd = append(fwd, i, i) // every page twice
		rev = append(rev, n-1-i)
	}
	orders = append(orders, fwd, rev)
	for seed := 0; seed < 5; seed++ {
		perm := make([]int, 0, 2*n)
		for i := 0; i < 2*n; i++ {
			perm = append(perm, (i*7+seed*3)%n)
		}
		orders = append(orders, perm)
	}
	for oi, order := range orders {
		dst := MustOpenMem(t, clock)
		for _, pi := range order {
			if _, _, err := dst.Import(res, importing(1), false, pages[pi]); err != nil {
				t.Fatalf("order %d: import: %v", oi, err)
			}
		}
		assertEqual(t, "digests", MustDigests(t, dst, res), want)
		live, tomb := MustCount(t, dst, res)
		assertEqual(t, "counts", [2]int{live, tomb}, [2]int{wantLive, wantTomb})
		for i := 0; i < 40; i += 7 {
			_, err := dst.GetAt(res, name(i), swappedIn)
			assertErrIs(t, "tombstoned record", err, ErrNotFound)
		}
		// A full replay applies nothing.
		for _, p := range pages {
			if n, _, err := dst.Import(res, importing(1), false, p); err != nil || n != 0 {
				t.Fatalf("order %d: replay applied %d, %v", oi, n, err)
			}
		}
		assertEqual(t, "digests after replay", MustDigests(t, dst, res), recomputeDigests(t, dst, res))
	}
}

func idx(id string) int {
	var i int
	for _, c := range id[1:] {
		i = i*10 + int(c-'0')
	}
	return i
}

func TestImportRules(t *testing.T) {
	clock := testutil.NewClock()
	s := MustOpenMem(t, clock)
	live := func(v uint64, data string) Record {
		return Record{ID: "r", Kind: "message", Version: v, CreatedAt: 100, UpdatedAt: 200, Data: []byte(data), Refs: []string{"media/a"}}
	}
	tomb := func(v uint64) Record {
		return Record{ID: "r", Kind: "message", Version: v, CreatedAt: 100, Deleted: true, DeletedAt: 300,
			Data: []byte("the sender forgot to strip"), Refs: []string{"media/a"}}
	}
	steps := []struct {
		name    string
		in      Record
		applied int
		deleted bool
		version uint64
	}{
		{"first copy", live(2, "a"), 1, false, 2},
		{"older live ignored", live(1, "old"), 0, false, 2},
		{"same live ignored", live(2, "a"), 0, false, 2},
		{"equal-version tombstone wins", tomb(2), 1, true, 2},
		{"equal-version live never overwrites a tombstone", live(2, "a"), 0, true, 2},
		{"older live never overwrites a tombstone", live(1, "a"), 0, true, 2},
		{"tombstone replay", tomb(2), 0, true, 2},
		{"newer tombstone", tomb(3), 1, true, 3},
	}
	for _, st := range steps {
		n, _, err := s.Import(res, importing(1), false, []Record{st.in})
		if err != nil || n != st.applied {
			t.Fatalf("%s: Import = %d, %v; want %d", st.name, n, err, st.applied)
		}
		got := MustChanges(t, s, res, 0, 0, 10)
		if len(got) != 1 || got[0].Deleted != st.deleted || got[0].Version != st.version {
			t.Fatalf("%s: stored %+v", st.name, got)
		}
		if got[0].Deleted && (got[0].Data != nil || got[0].Refs != nil) {
			t.Fatalf("%s: tombstone kept content: %+v", st.name, got[0])
		}
		if !got[0].Deleted && (got[0].UpdatedAt != 200 || got[0].CreatedAt != 100) {
			t.Fatalf("%s: timestamps not kept: %+v", st.name, got[0])
		}
	}
	_, err := s.GetAt(res, "r", swappedIn)
	assertErrIs(t, "Get", err, ErrNotFound)
	live2, tomb2 := MustCount(t, s, res)
	assertEqual(t, "counts", [2]int{live2, tomb2}, [2]int{0, 1})

	t.Run("duplicates within a page", func(t *testing.T) {
		page := []Record{
			{ID: "d", Version: 1, CreatedAt: 5, Data: []byte("1")},
			{ID: "d", Version: 3, CreatedAt: 5, Data: []byte("3")},
			{ID: "d", Version: 2, CreatedAt: 5, Data: []byte("2")},
			{ID: "d", Version: 3, CreatedAt: 5, Data: []byte("3")},
		}
		n, _, err := s.Import("conv/dup", importing(1), false, page)
		if err != nil || n != 2 {
			t.Fatalf("Import = %d, %v", n, err)
		}
		r, err := s.GetAt("conv/dup", "d", swappedIn)
		if err != nil || string(r.Data) != "3" || r.Version != 3 || r.Seq != 2 {
			t.Fatalf("Get = %+v, %v", r, err)
		}
		assertEqual(t, "one change entry", len(MustChanges(t, s, "conv/dup", 0, 0, 10)), 1)
		assertEqual(t, "digests", MustDigests(t, s, "conv/dup"), recomputeDigests(t, s, "conv/dup"))
	})

	t.Run("invalid page changes nothing", func(t *testing.T) {
		_, _, err := s.Import("conv/bad", importing(1), false, []Record{{ID: "ok", Version: 1}, {ID: "bad\x00", Version: 1}})
		assertErrIs(t, "Import", err, ErrInvalid)
		assertEqual(t, "token", MustToken(t, s, "conv/bad"), uint64(0))
		if errors.Is(err, ErrCorrupt) {
			t.Fatal("wrong class")
		}
	})
}

func TestDigestsCompareStores(t *testing.T) {
	clock := testutil.NewClock()
	src := MustOpenMem(t, clock)
	for i := 0; i < 300; i++ {
		MustPut(t, src, res, Record{ID: name(i), Kind: "message", Data: []byte(name(i) + " body")}, true)
		clock.Advance(time.Minute)
	}
	// Churn: updates, kind changes, deletions, so the maintained digests have
	// had contributions removed as well as added.
	for i := 0; i < 300; i += 4 {
		MustPut(t, src, res, Record{ID: name(i), Kind: "edited", Data: []byte("v2")}, false)
	}
	for i := 1; i < 300; i += 9 {
		MustDelete(t, src, res, name(i))
	}
	srcDigests := MustDigests(t, src, res)
	assertEqual(t, "maintained = recomputed", srcDigests, recomputeDigests(t, src, res))
	if len(srcDigests) != 5 { // 300 minutes in 1h slices
		t.Fatalf("%d slices", len(srcDigests))
	}

	dst := MustOpenMem(t, clock)
	copyChanges(t, src, dst, res, 0, 0, 50)
	assertEqual(t, "after full copy", MustDigests(t, dst, res), srcDigests)

	t.Run("one record's content differs", func(t *testing.T) {
		r, err := dst.GetAt(res, name(11), swappedIn)
		if err != nil {
			t.Fatal(err)
		}
		r.Version++
		r.Data = []byte("tampered")
		if _, _, err := dst.Import(res, importing(1), false, []Record{r}); err != nil {
			t.Fatal(err)
		}
		got := MustDigests(t, dst, res)
		diff := differingSlices(srcDigests, got)
		assertEqual(t, "differing slices", diff, []int64{dst.SliceOf(r.CreatedAt)})
		for i, d := range got {
			if d.Count != srcDigests[i].Count {
				t.Fatalf("count changed by a content change: %+v", d)
			}
		}
	})
	t.Run("one record missing", func(t *testing.T) {
		dst2 := MustOpenMem(t, clock)
		copyChanges(t, src, dst2, res, 0, 0, 50)
		if _, err := dst2.DeleteAt(res, name(200), false, swappedIn); err != nil {
			t.Fatal(err)
		}
		got := MustDigests(t, dst2, res)
		diff := differingSlices(srcDigests, got)
		if len(diff) != 1 {
			t.Fatalf("differing slices %v", diff)
		}
	})
}

func differingSlices(a, b []SliceDigest) []int64 {
	m := map[int64]SliceDigest{}
	for _, d := range a {
		m[d.Slice] = d
	}
	var out []int64
	seen := map[int64]bool{}
	for _, d := range b {
		seen[d.Slice] = true
		if m[d.Slice] != d {
			out = append(out, d.Slice)
		}
	}
	for _, d := range a {
		if !seen[d.Slice] {
			out = append(out, d.Slice)
		}
	}
	return out
}

func TestSweepTombstones(t *testing.T) {
	clock := testutil.NewClock()
	s := MustOpenMem(t, clock, func(o *Options) { o.TombstoneTTL = time.Hour })
	// 600 tombstones over three resources: more than one sweep chunk.
	resources := []string{"conv/a", "conv/b", "conv/c"}
	for _, r := range resources {
		MustAuthorize(t, s, r, tombstoning(1, clock.Now().Add(24*time.Hour)))
		for i := 0; i < 201; i++ {
			MustPut(t, s, r, rec(name(i), "message", "x"), true)
		}
		for i := 0; i < 200; i++ {
			MustDelete(t, s, r, name(i))
		}
	}
	// One tombstone is re-imported later with a newer DeletedAt: its expiry
	// moves with it.
	clock.Advance(30 * time.Minute)
	ts := MustChanges(t, s, "conv/a", 0, 0, 1000)[1] // [0] is the live name(200)
	if !ts.Deleted {
		t.Fatalf("not a tombstone: %+v", ts)
	}
	ts.Version++
	ts.DeletedAt = clock.Now().UnixNano()
	// (The resource is a target again for the re-import, then the primary
	// again: an importing resource keeps its tombstones.)
	if n, _, err := s.Import("conv/a", importing(2), false, []Record{ts}); err != nil || n != 1 {
		t.Fatalf("re-import: %d, %v", n, err)
	}
	MustAuthorize(t, s, "conv/a", role(3, contract.RolePrimary))

	n, err := s.SweepTombstones(clock.Now())
	if err != nil || n != 0 {
		t.Fatalf("sweep before expiry = %d, %v", n, err)
	}
	clock.Advance(30 * time.Minute)
	n, err = s.SweepTombstones(clock.Now())
	if err != nil || n != 599 {
		t.Fatalf("sweep at expiry = %d, %v; want 599", n, err)
	}
	for _, r := range resources {
		live, tomb := MustCount(t, s, r)
		wantTomb := 0
		if r == "conv/a" {
			wantTomb = 1
		}
		assertEqual(t, r+" counts", [2]int{live, tomb}, [2]int{1, wantTomb})
		assertEqual(t, r+" changes", len(MustChanges(t, s, r, 0, 0, 1000)), 1+wantTomb)
	}
	// Swept tombstones no longer block re-creating their id.
	MustPut(t, s, "conv/b", rec(name(0), "message", "new"), true)

	clock.Advance(time.Hour)
	n, err = s.SweepTombstones(clock.Now())
	if err != nil || n != 1 {
		t.Fatalf("last sweep = %d, %v", n, err)
	}
	n, err = s.SweepTombstones(clock.Now().Add(1000 * time.Hour))
	if err != nil || n != 0 {
		t.Fatalf("empty sweep = %d, %v", n, err)
	}
}

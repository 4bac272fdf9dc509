package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/internal/testutil"
	"github.com/cutover/cutover/services/contract"
)

// TestWriteFenceIsABarrier: writers race the install of the write fence
// (an exporting authority); once the install has returned, no mutation
// commits. The change sequence at fence time is the last one, so a delta
// export started after the fence is final (paper 001 §4.6, DESIGN.md "Two
// layers of enforcement").
func TestWriteFenceIsABarrier(t *testing.T) {
	clock := testutil.NewClock()
	s := MustOpenMem(t, clock)
	const writers = 8
	var (
		fenced    atomic.Bool // set once SetFence has returned
		stop      atomic.Bool
		refusals  atomic.Int64
		violation atomic.Value
		wg        sync.WaitGroup
	)
	maxSeq := make([]uint64, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				wasFenced := fenced.Load()
				id := fmt.Sprintf("w%d-%d", w, i)
				var seq uint64
				var err error
				switch i % 4 {
				case 0, 1:
					var r Record
					r, err = s.Put(res, rec(id, "message", "x"), true)
					seq = r.Seq
				case 2:
					var r Record
					r, err = s.Put(res, rec(fmt.Sprintf("w%d-%d", w, i-1), "message", "y"), false)
					seq = r.Seq
				case 3:
					_, err = s.Delete(res, fmt.Sprintf("w%d-%d", w, i-3))
				}
				switch {
				case err == nil && wasFenced:
					violation.Store(fmt.Sprintf("writer %d op %d committed after the write fence was installed", w, i))
					return
				case err == nil:
					maxSeq[w] = max(maxSeq[w], seq)
				case contract.AsError(err).Lock == contract.LockWriteFence:
					refusals.Add(1)
				default:
					violation.Store(fmt.Sprintf("writer %d op %d: %v", w, i, err))
					return
				}
			}
		}(w)
	}
	testutil.WaitFor(t, "200 committed changes", func() bool { return MustToken(t, s, res) >= 200 })
	MustAuthorize(t, s, res, exporting(2, clock.Now().Add(5*time.Minute)))
	fenced.Store(true)
	atFence := MustToken(t, s, res)
	digests := MustDigests(t, s, res)
	live, tomb := MustCount(t, s, res)

	testutil.WaitFor(t, "200 refusals", func() bool { return refusals.Load() >= 200 })
	stop.Store(true)
	wg.Wait()
	if v := violation.Load(); v != nil {
		t.Fatal(v)
	}
	for w, m := range maxSeq {
		if m > atFence {
			t.Fatalf("writer %d committed seq %d > %d at fence time", w, m, atFence)
		}
	}
	assertEqual(t, "token", MustToken(t, s, res), atFence)
	assertEqual(t, "delta after the fence", len(MustChanges(t, s, res, atFence, 0, 10)), 0)
	assertEqual(t, "digests", MustDigests(t, s, res), digests)
	l, tb := MustCount(t, s, res)
	assertEqual(t, "counts", [2]int{l, tb}, [2]int{live, tomb})
	assertEqual(t, "maintained = recomputed", digests, recomputeDigests(t, s, res))
}

// TestConcurrentResourcesAndSweep runs writers on several resources (some
// sharing lock stripes) and importers on others, together with sweeps, and
// checks the indexes stay consistent: the tombstones of written resources
// are swept, those of importing ones kept.
func TestConcurrentResourcesAndSweep(t *testing.T) {
	clock := testutil.NewClock()
	s := MustOpenMem(t, clock, func(o *Options) { o.TombstoneTTL = time.Millisecond })
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := fmt.Sprintf("conv/%d", w%3)
			imp := fmt.Sprintf("conv/imp-%d", w%3)
			if _, err := s.Admit(r, contract.OpAuthorize, tombstoning(1, clock.Now().Add(time.Hour))); err != nil {
				errc <- err
				return
			}
			for i := 0; i < 150; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, err := s.Put(r, rec(id, "message", id), true); err != nil {
					errc <- err
					return
				}
				if i%3 == 0 {
					if _, err := s.Delete(r, id); err != nil {
						errc <- err
						return
					}
				}
				if i%10 == 0 {
					page := []Record{{ID: "imp-" + id, Version: 1, CreatedAt: int64(i)}, {ID: "del-" + id, Version: 2, CreatedAt: int64(i), Deleted: true, DeletedAt: 1}}
					if _, _, err := s.Import(imp, importing(1), false, page); err != nil {
						errc <- err
						return
					}
				}
			}
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			if _, err := s.SweepTombstones(time.Now().Add(time.Hour)); err != nil {
				errc <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if _, err := s.SweepTombstones(time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		r := fmt.Sprintf("conv/%d", i)
		live, tomb := MustCount(t, s, r)
		assertEqual(t, r+" counts", [2]int{live, tomb}, [2]int{2 * 100, 0})
		assertEqual(t, r+" changes", len(MustChanges(t, s, r, 0, 0, 1000)), live)
		assertEqual(t, r+" digests", MustDigests(t, s, r), recomputeDigests(t, s, r))
		imp := fmt.Sprintf("conv/imp-%d", i)
		live, tomb = MustCount(t, s, imp)
		assertEqual(t, imp+" counts", [2]int{live, tomb}, [2]int{2 * 15, 2 * 15})
		assertEqual(t, imp+" digests", MustDigests(t, s, imp), recomputeDigests(t, s, imp))
	}
}

package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestHardDeleteFenceTombstones(t *testing.T) {
	clock := newFakeClock()
	s := MustOpenMem(t, clock)
	MustPut(t, s, res, Record{ID: "m1", Kind: "message", Data: []byte("secret"), Refs: []string{"media/p1"}}, true)
	MustPut(t, s, res, rec("m2", "message", "keep"), true)
	MustSetFence(t, s, res, fence(FenceHardDelete, "tok", clock.Now().Add(time.Hour)))

	clock.Advance(time.Second)
	dr := MustDelete(t, s, res, "m1")
	ts := dr.Tombstone
	if !dr.Tombstoned || !ts.Deleted || ts.Data != nil || ts.Refs != nil || ts.Version != 2 ||
		ts.Seq != 3 || ts.DeletedAt != clock.Now().UnixNano() || ts.Kind != "message" {
		t.Fatalf("tombstone %+v", dr)
	}
	_, err := s.Get(res, "m1")
	assertErrIs(t, "Get tombstone", err, ErrNotFound)
	live, tomb := MustCount(t, s, res)
	assertEqual(t, "counts", [2]int{live, tomb}, [2]int{1, 1})

	// The export sees the tombstone, stripped.
	recs := MustChanges(t, s, res, 0, 0, 10)
	assertEqual(t, "changes", ids(recs), []string{"m2", "m1"})
	assertEqual(t, "exported tombstone", recs[1], ts)

	// Users see it nowhere and cannot bring it back.
	l, err := s.List(res, "message", 0, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	assertEqual(t, "list", ids(l), []string{"m2"})
	assertEqual(t, "digests skip tombstones", MustDigests(t, s, res), recomputeDigests(t, s, res))
	_, err = s.Put(res, rec("m1", "message", "back"), true)
	assertErrIs(t, "recreate", err, ErrDeleted)
	_, err = s.Put(res, rec("m1", "message", "back"), false)
	assertErrIs(t, "update tombstone", err, ErrNotFound)
	_, err = s.Delete(res, "m1")
	assertErrIs(t, "delete tombstone", err, ErrNotFound)

	// Writes and updates pass a hard-delete fence.
	MustPut(t, s, res, rec("m3", "message", "new"), true)
	MustPut(t, s, res, rec("m2", "message", "changed"), false)
}

func TestWriteFenceRefusesAndChangesNothing(t *testing.T) {
	clock := newFakeClock()
	s := MustOpenMem(t, clock)
	MustPut(t, s, res, rec("m1", "message", "a"), true)
	MustPut(t, s, res, rec("m2", "message", "b"), true)
	expiry := clock.Now().Add(5 * time.Minute)
	const token = "0123456789abcdef-secret-token"
	MustSetFence(t, s, res, fence(FenceWrite, token, expiry))

	token0 := MustToken(t, s, res)
	changes0 := MustChanges(t, s, res, 0, 0, 10)
	digests0 := MustDigests(t, s, res)

	clock.Advance(time.Minute)
	attempts := map[string]error{}
	_, attempts["create"] = s.Put(res, rec("m3", "message", "c"), true)
	_, attempts["create existing"] = s.Put(res, rec("m1", "message", "c"), true)
	_, attempts["update"] = s.Put(res, rec("m1", "message", "c"), false)
	_, attempts["delete"] = s.Delete(res, "m2")
	for op, err := range attempts {
		var fe *FencedError
		if !errors.As(err, &fe) || !errors.Is(err, ErrFenced) {
			t.Fatalf("%s: err = %v, want *FencedError", op, err)
		}
		if fe.Fence.Level != FenceWrite || !fe.Fence.Expiry.Equal(expiry) {
			t.Fatalf("%s: fence in error %+v", op, fe.Fence)
		}
		if fe.Fence.Token != "" || strings.Contains(err.Error(), "secret") {
			t.Fatalf("%s: token leaked: %+v / %v", op, fe.Fence, err)
		}
		assertEqual(t, op+" RetryAfter", fe.RetryAfter(), 4*time.Minute)
	}
	assertEqual(t, "token", MustToken(t, s, res), token0)
	assertEqual(t, "changes", MustChanges(t, s, res, 0, 0, 10), changes0)
	assertEqual(t, "digests", MustDigests(t, s, res), digests0)
	if r, err := s.Get(res, "m1"); err != nil || string(r.Data) != "a" {
		t.Fatalf("Get under write fence = %+v, %v", r, err)
	}

	// Imports are migration writes and pass the fence.
	n, err := s.Import(res, []Record{{ID: "imp", Kind: "message", Version: 1, CreatedAt: 5}})
	if err != nil || n != 1 {
		t.Fatalf("Import under write fence = %d, %v", n, err)
	}

	// RetryAfter is at least a second.
	clock.Advance(4*time.Minute - time.Millisecond)
	_, err = s.Delete(res, "m2")
	var fe *FencedError
	if !errors.As(err, &fe) || fe.RetryAfter() != time.Second {
		t.Fatalf("near expiry: %v", err)
	}
}

func TestFenceExpiryLiftsIt(t *testing.T) {
	clock := newFakeClock()
	s := MustOpenMem(t, clock)
	MustPut(t, s, res, rec("m1", "message", "a"), true)
	MustSetFence(t, s, res, fence(FenceWrite, "tok", clock.Now().Add(5*time.Minute)))
	_, err := s.Put(res, rec("m1", "message", "b"), false)
	assertErrIs(t, "fenced", err, ErrFenced)

	clock.Advance(5 * time.Minute) // Expiry is exclusive: at Expiry it is lifted.
	MustPut(t, s, res, rec("m1", "message", "b"), false)
	f, err := s.GetFence(res)
	if err != nil || f.Level != FenceWrite || f.Active(clock.Now()) {
		t.Fatalf("expired fence %+v, %v", f, err)
	}

	// An expired hard-delete fence no longer tombstones.
	MustSetFence(t, s, res, fence(FenceHardDelete, "tok2", clock.Now().Add(time.Minute)))
	clock.Advance(time.Minute)
	if dr := MustDelete(t, s, res, "m1"); dr.Tombstoned {
		t.Fatal("expired hard-delete fence tombstoned")
	}
}

func TestFenceTokenRules(t *testing.T) {
	clock := newFakeClock()
	s := MustOpenMem(t, clock)
	now := clock.Now()
	hd := now.Add(6 * time.Hour)
	w := now.Add(5 * time.Minute)

	get := func() Fence {
		t.Helper()
		f, err := s.GetFence(res)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	if f := get(); f != (Fence{}) {
		t.Fatalf("no fence: %+v", f)
	}
	assertEqual(t, "clear absent", s.ClearFence(res, "Z"), error(nil))

	MustSetFence(t, s, res, fence(FenceHardDelete, "A", hd))
	if f := get(); f.Level != FenceHardDelete || f.Token != "A" || !f.Expiry.Equal(hd) || !f.SetAt.Equal(now) {
		t.Fatalf("set: %+v", f)
	}
	t.Run("other token refused while active", func(t *testing.T) {
		assertErrIs(t, "set B", s.SetFence(res, fence(FenceWrite, "B", w)), ErrFenceHeld)
		assertErrIs(t, "clear B", s.ClearFence(res, "B"), ErrFenceHeld)
	})
	t.Run("renewal never shortens", func(t *testing.T) {
		MustSetFence(t, s, res, fence(FenceHardDelete, "A", hd.Add(time.Hour)))
		MustSetFence(t, s, res, fence(FenceHardDelete, "A", hd)) // replayed older renewal
		assertEqual(t, "expiry", get().Expiry.Equal(hd.Add(time.Hour)), true)
	})
	t.Run("raise takes the new expiry", func(t *testing.T) {
		MustSetFence(t, s, res, fence(FenceWrite, "A", w))
		f := get()
		if f.Level != FenceWrite || !f.Expiry.Equal(w) {
			t.Fatalf("raised: %+v", f)
		}
	})
	t.Run("lowering is a no-op", func(t *testing.T) {
		MustSetFence(t, s, res, fence(FenceHardDelete, "A", hd))
		f := get()
		if f.Level != FenceWrite || !f.Expiry.Equal(w) {
			t.Fatalf("a replayed hard-delete step lowered the fence: %+v", f)
		}
	})
	t.Run("invalid", func(t *testing.T) {
		for _, f := range []Fence{
			fence(FenceWrite, "", w), fence(FenceNone, "A", w), fence(FenceLevel(7), "A", w), fence(FenceWrite, "A", time.Time{}),
			fence(FenceWrite, "A", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)),
		} {
			assertErrIs(t, "SetFence", s.SetFence(res, f), ErrInvalid)
		}
		assertErrIs(t, "ClearFence", s.ClearFence(res, ""), ErrInvalid)
	})
	t.Run("expired fence yields to another token", func(t *testing.T) {
		clock.Advance(5 * time.Minute)
		// (B was retired by the refused clear above: another fresh token.)
		MustSetFence(t, s, res, fence(FenceHardDelete, "B2", clock.Now().Add(time.Hour)))
		assertEqual(t, "token", get().Token, "B2")
		clock.Advance(time.Hour)
		if err := s.ClearFence(res, "C"); err != nil {
			t.Fatalf("clearing an expired fence: %v", err)
		}
		assertEqual(t, "cleared", get(), Fence{})
	})
	t.Run("clear with token", func(t *testing.T) {
		MustSetFence(t, s, res, fence(FenceWrite, "D", clock.Now().Add(time.Minute)))
		if err := s.ClearFence(res, "D"); err != nil {
			t.Fatal(err)
		}
		assertEqual(t, "cleared", get(), Fence{})
	})
	t.Run("force clear", func(t *testing.T) {
		MustSetFence(t, s, res, fence(FenceWrite, "E", clock.Now().Add(time.Minute)))
		if err := s.ForceClearFence(res); err != nil {
			t.Fatal(err)
		}
		assertEqual(t, "cleared", get(), Fence{})
		MustPut(t, s, res, rec("after", "message", ""), true)
	})
	t.Run("per resource", func(t *testing.T) {
		MustSetFence(t, s, res, fence(FenceWrite, "F", clock.Now().Add(time.Minute)))
		MustPut(t, s, res+"x", rec("free", "message", ""), true)
	})
}

// TestDeleteTombstoneWithoutFence: a delete decided "tombstone" by routing
// tombstones even before the store's fence is set, and a write fence still
// refuses it.
func TestDeleteTombstoneWithoutFence(t *testing.T) {
	c := newFakeClock()
	s := MustOpenMem(t, c)
	MustPut(t, s, "conv/a", rec("m1", "message", "hello"), true)
	MustPut(t, s, "conv/a", rec("m2", "message", "bye"), true)
	res, err := s.DeleteTombstone("conv/a", "m1")
	if err != nil || !res.Tombstoned || res.Tombstone.Data != nil {
		t.Fatalf("DeleteTombstone: %v %+v", err, res)
	}
	if _, tombs := MustCount(t, s, "conv/a"); tombs != 1 {
		t.Fatalf("tombstones %d, want 1", tombs)
	}
	MustSetFence(t, s, "conv/a", fence(FenceWrite, "tok", c.Now().Add(time.Minute)))
	if _, err := s.DeleteTombstone("conv/a", "m2"); !errors.Is(err, ErrFenced) {
		t.Fatalf("under write fence: %v", err)
	}
}

// TestClearedTokenIsRetired: a fence request delivered after its token's
// fence was cleared (the attempt rolled back, or a later migration moved
// the resource back here) is refused and changes nothing; a token cleared
// while another token's fence stands is retired all the same; a forced
// clear retires the holder's token; the list is bounded and durable.
func TestClearedTokenIsRetired(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	hour := clock.Now().Add(time.Hour)
	MustSetFence(t, s, res, fence(FenceWrite, "old", hour))
	if err := s.ClearFence(res, "old"); err != nil {
		t.Fatal(err)
	}
	err = s.SetFence(res, fence(FenceWrite, "old", hour))
	assertErrIs(t, "late SetFence of a cleared token", err, ErrTokenRetired)
	if f, _ := s.GetFence(res); f.Active(clock.Now()) {
		t.Fatalf("a retired token fenced the resource: %+v", f)
	}
	MustPut(t, s, res, rec("m1", "message", "writable"), true)

	// Clearing a token that never fenced here (the late request has not
	// arrived yet) retires it too.
	if err := s.ClearFence(res, "late"); err != nil {
		t.Fatal(err)
	}
	assertErrIs(t, "SetFence after its clear", s.SetFence(res, fence(FenceHardDelete, "late", hour)), ErrTokenRetired)

	// Another token's active fence stays, and the cleared token is retired.
	MustSetFence(t, s, res, fence(FenceHardDelete, "cur", hour))
	assertErrIs(t, "clear another's fence", s.ClearFence(res, "other"), ErrFenceHeld)
	if f, _ := s.GetFence(res); f.Token != "cur" || !f.Active(clock.Now()) {
		t.Fatalf("fence after a refused clear: %+v", f)
	}
	clock.Advance(2 * time.Hour)
	assertErrIs(t, "SetFence of a token cleared under another's fence", s.SetFence(res, fence(FenceWrite, "other", clock.Now().Add(time.Hour))), ErrTokenRetired)

	// A forced clear retires the holder's token.
	MustSetFence(t, s, res, fence(FenceWrite, "held", clock.Now().Add(time.Hour)))
	if err := s.ForceClearFence(res); err != nil {
		t.Fatal(err)
	}
	assertErrIs(t, "holder after a forced clear", s.SetFence(res, fence(FenceWrite, "held", clock.Now().Add(time.Hour))), ErrTokenRetired)

	// Bounded: the oldest retirements fall off; the newest stay.
	for i := range maxRetired {
		if err := s.ClearFence(res, fmt.Sprintf("bulk-%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	MustSetFence(t, s, res, fence(FenceWrite, "old", clock.Now().Add(time.Minute)))
	if err := s.ClearFence(res, "old"); err != nil {
		t.Fatal(err)
	}

	// Durable: the retirements survive a reopen.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(Options{Dir: dir, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	assertErrIs(t, "retired after reopen", s.SetFence(res, fence(FenceWrite, fmt.Sprintf("bulk-%02d", maxRetired-1), clock.Now().Add(time.Hour))), ErrTokenRetired)
	assertErrIs(t, "retired again after reopen", s.SetFence(res, fence(FenceWrite, "old", clock.Now().Add(time.Hour))), ErrTokenRetired)
	MustSetFence(t, s, res, fence(FenceWrite, "bulk-00", clock.Now().Add(time.Hour))) // fell off the bounded list
}

// TestDeleteAllUnless: keep is asked under the resource lock; true keeps
// everything, an error deletes nothing and is returned, false deletes.
func TestDeleteAllUnless(t *testing.T) {
	s := MustOpenMem(t, newFakeClock())
	MustPut(t, s, res, rec("m1", "message", "a"), true)
	MustPut(t, s, res, rec("m2", "message", "b"), true)
	n, kept, err := s.DeleteAllUnless(res, func() (bool, error) { return true, nil })
	if err != nil || !kept || n != 0 {
		t.Fatalf("keep: n=%d kept=%v err=%v", n, kept, err)
	}
	boom := errors.New("routing unavailable")
	if _, _, err := s.DeleteAllUnless(res, func() (bool, error) { return false, boom }); !errors.Is(err, boom) {
		t.Fatalf("keep error: %v", err)
	}
	if live, _ := MustCount(t, s, res); live != 2 {
		t.Fatalf("%d live after keep/error, want 2", live)
	}
	// keep runs under the resource lock: a write waits for the decision.
	entered := make(chan struct{})
	done := make(chan struct{})
	go func() {
		<-entered
		MustPut(t, s, res, rec("m3", "message", "after"), true)
		close(done)
	}()
	n, kept, err = s.DeleteAllUnless(res, func() (bool, error) {
		close(entered)
		select {
		case <-done:
			t.Error("a write committed while keep was deciding")
		case <-time.After(50 * time.Millisecond):
		}
		return false, nil
	})
	if err != nil || kept || n != 2 {
		t.Fatalf("delete: n=%d kept=%v err=%v", n, kept, err)
	}
	<-done
	if live, _ := MustCount(t, s, res); live != 1 {
		t.Fatalf("%d live, want only the write that waited", live)
	}
}

// TestPostSwapFenceYieldsToALaterRouting: a post-swap fence (SwapRev set)
// refuses writes decided on its swap's revision or an earlier one (a
// router whose view predates the move away) and lets through writes
// decided on a later revision (the resource was moved back here since);
// every other fence yields to nothing. SwapRev survives a renewal without
// it and a reopen.
func TestPostSwapFenceYieldsToALaterRouting(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	hour := clock.Now().Add(time.Hour)
	MustPut(t, s, res, rec("m1", "message", "before"), true)
	MustPut(t, s, res, rec("m2", "message", "before"), true)
	post := fence(FenceWrite, "prev", hour)
	post.SwapRev = 10
	MustSetFence(t, s, res, post)
	for _, rev := range []uint64{0, 9, 10} {
		_, err := s.PutRouted(res, rec("m3", "message", "stale router"), true, rev)
		assertErrIs(t, fmt.Sprintf("put decided on revision %d", rev), err, ErrFenced)
		_, err = s.DeleteRouted(res, "m1", false, rev)
		assertErrIs(t, fmt.Sprintf("delete decided on revision %d", rev), err, ErrFenced)
	}
	if _, err := s.PutRouted(res, rec("m3", "message", "after the move back"), true, 11); err != nil {
		t.Fatalf("put decided after the move back: %v", err)
	}
	if r, err := s.DeleteRouted(res, "m1", false, 11); err != nil || r.Tombstoned {
		t.Fatalf("delete decided after the move back: %+v %v", r, err)
	}
	if r, err := s.DeleteRouted(res, "m2", true, 11); err != nil || !r.Tombstoned {
		t.Fatalf("tombstone decided after the move back: %+v %v", r, err)
	}

	// A renewal without SwapRev keeps it; a reopen too.
	MustSetFence(t, s, res, fence(FenceWrite, "prev", hour.Add(time.Hour)))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(Options{Dir: dir, Clock: clock.Now}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if f, _ := s.GetFence(res); f.SwapRev != 10 || !f.Active(clock.Now()) {
		t.Fatalf("fence after a renewal and a reopen: %+v", f)
	}
	_, err = s.PutRouted(res, rec("m4", "message", "stale router"), true, 10)
	assertErrIs(t, "put on the swap's revision after a reopen", err, ErrFenced)

	// A pre-swap write fence (no SwapRev) yields to no revision.
	if err := s.ClearFence(res, "prev"); err != nil {
		t.Fatal(err)
	}
	MustSetFence(t, s, res, fence(FenceWrite, "cur", hour))
	_, err = s.PutRouted(res, rec("m5", "message", "x"), true, 1<<40)
	assertErrIs(t, "put under a pre-swap write fence", err, ErrFenced)
}

// The routing watermark (checkRouted): a fence's ReadRev keeps refusing
// operations routed by an older revision after the fence has expired or been
// cleared, so a cache holding the unlocked document from before a migration
// (fence-driven convergence: any age) cannot write or read here after the
// migration moved the resource away. Operations routed later, or not routed
// at all (imports, validation: revision 0), pass.
func TestRoutingWatermarkOutlivesTheFence(t *testing.T) {
	clock := newFakeClock()
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	MustPut(t, s, res, rec("m1", "message", "before"), true)
	wf := fence(FenceWrite, "mig", clock.Now().Add(time.Second))
	wf.ReadRev = 10
	MustSetFence(t, s, res, wf)
	check := func(stage string) {
		t.Helper()
		for _, rev := range []uint64{1, 9} {
			_, err := s.PutRouted(res, rec("m2", "message", "stale router"), true, rev)
			assertErrIs(t, fmt.Sprintf("%s: put routed by revision %d", stage, rev), err, ErrMoved)
			_, err = s.DeleteRouted(res, "m1", false, rev)
			assertErrIs(t, fmt.Sprintf("%s: delete routed by revision %d", stage, rev), err, ErrMoved)
			_, err = s.GetRouted(res, "m1", rev)
			assertErrIs(t, fmt.Sprintf("%s: get routed by revision %d", stage, rev), err, ErrMoved)
			_, err = s.ListRouted(res, "message", 0, "", 10, rev)
			assertErrIs(t, fmt.Sprintf("%s: list routed by revision %d", stage, rev), err, ErrMoved)
		}
		if _, err := s.GetRouted(res, "m1", 0); err != nil {
			t.Fatalf("%s: an unrouted read: %v", stage, err)
		}
	}
	clock.Advance(2 * time.Second) // the fence has expired
	check("expired")
	if err := s.ClearFence(res, "mig"); err != nil {
		t.Fatal(err)
	}
	check("cleared")
	if err := s.ForceClearFence(res); err != nil {
		t.Fatal(err)
	}
	check("force-cleared")
	// A later fence with a lower ReadRev does not lower it.
	low := fence(FenceWrite, "other", clock.Now().Add(time.Second))
	low.ReadRev = 3
	MustSetFence(t, s, res, low)
	clock.Advance(2 * time.Second)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(Options{Dir: dir, Clock: clock.Now}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("reopened")
	for _, rev := range []uint64{10, 11} {
		if _, err := s.PutRouted(res, rec(fmt.Sprintf("n%d", rev), "message", "fresh router"), true, rev); err != nil {
			t.Fatalf("put routed by revision %d: %v", rev, err)
		}
		if _, err := s.GetRouted(res, "m1", rev); err != nil {
			t.Fatalf("get routed by revision %d: %v", rev, err)
		}
	}
}

// The watermark rises without a fence: a FenceNone request with a ReadRev
// (the orchestrator's skipped post-swap fence), a refused fence request
// (retired token, another token's fence), and a guarded cleanup (to the
// routing revision its guard read). It never falls.
func TestWatermarkRisesWithoutAFence(t *testing.T) {
	clock := newFakeClock()
	s, err := Open(Options{Dir: t.TempDir(), Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	MustPut(t, s, res, rec("m1", "message", "x"), true)
	moved := func(rev uint64) bool {
		_, err := s.GetRouted(res, "m1", rev)
		return errors.Is(err, ErrMoved)
	}
	if err := s.SetFence(res, Fence{Level: FenceNone, Token: "t", ReadRev: 5}); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.GetFence(res); f.Level != FenceNone || !moved(4) || moved(5) {
		t.Fatalf("watermark-only request: fence %+v, moved(4)=%v moved(5)=%v", f, moved(4), moved(5))
	}
	// A retired token's late request still raises it.
	MustSetFence(t, s, res, fence(FenceWrite, "old", clock.Now().Add(time.Hour)))
	if err := s.ClearFence(res, "old"); err != nil {
		t.Fatal(err)
	}
	late := fence(FenceWrite, "old", clock.Now().Add(time.Hour))
	late.ReadRev = 7
	assertErrIs(t, "late request of a retired token", s.SetFence(res, late), ErrTokenRetired)
	if !moved(6) || moved(7) {
		t.Fatal("a refused request did not raise the watermark to its ReadRev")
	}
	// Another token's fence: refused, raised all the same.
	MustSetFence(t, s, res, fence(FenceWrite, "cur", clock.Now().Add(time.Hour)))
	other := fence(FenceWrite, "other", clock.Now().Add(time.Hour))
	other.ReadRev = 8
	assertErrIs(t, "another token", s.SetFence(res, other), ErrFenceHeld)
	if !moved(7) {
		t.Fatal("a held fence's refusal did not raise the watermark")
	}
	// Lower: nothing changes.
	if err := s.SetFence(res, Fence{Level: FenceNone, Token: "t", ReadRev: 2}); err != nil || !moved(7) {
		t.Fatalf("lowered: %v", err)
	}
	if err := s.ClearFence(res, "cur"); err != nil {
		t.Fatal(err)
	}
	// A guarded cleanup raises it to its guard's revision; a kept one not.
	if _, kept, err := s.DeleteAllUnlessRouted(res, func() (bool, uint64, error) { return true, 20, nil }); err != nil || !kept || moved(19) {
		t.Fatalf("kept cleanup: kept=%v err=%v moved(19)=%v", kept, err, moved(19))
	}
	if n, kept, err := s.DeleteAllUnlessRouted(res, func() (bool, uint64, error) { return false, 20, nil }); err != nil || kept || n != 1 {
		t.Fatalf("cleanup: n=%d kept=%v err=%v", n, kept, err)
	}
	if _, err := s.ListRouted(res, "message", 0, "", 10, 19); !errors.Is(err, ErrMoved) {
		t.Fatalf("a read routed before the cleanup's routing: %v, want ErrMoved", err)
	}
	if recs, err := s.ListRouted(res, "message", 0, "", 10, 20); err != nil || len(recs) != 0 {
		t.Fatalf("a read routed at the cleanup's routing: %v %v", recs, err)
	}
}

// A swap-in notice (FenceNone with SwapRev: a revision at which this region
// is the primary) clears a post-swap fence of an older swap whatever its
// token, retires that token, and refuses late post-swap fences of older
// swaps; it leaves other fences alone.
func TestSwapInNoticeClearsStalePostSwapFences(t *testing.T) {
	clock := newFakeClock()
	s, err := Open(Options{Dir: t.TempDir(), Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hour := clock.Now().Add(time.Hour)
	post := fence(FenceWrite, "m1", hour)
	post.SwapRev, post.ReadRev = 10, 10
	MustSetFence(t, s, res, post)
	// A notice of an older revision changes nothing.
	if err := s.SetFence(res, Fence{Level: FenceNone, Token: "m2", SwapRev: 9}); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.GetFence(res); !f.Active(clock.Now()) {
		t.Fatal("a notice older than the fence's swap cleared it")
	}
	if err := s.SetFence(res, Fence{Level: FenceNone, Token: "m2", SwapRev: 20}); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.GetFence(res); f.Active(clock.Now()) {
		t.Fatalf("the stale post-swap fence is still up: %+v", f)
	}
	// The same fence, delivered late: refused (retired token) ...
	assertErrIs(t, "late post-swap fence, its token", s.SetFence(res, post), ErrTokenRetired)
	// ... and another attempt's token for that old swap too.
	other := post
	other.Token = "m1-attempt-2"
	assertErrIs(t, "late post-swap fence of an older swap", s.SetFence(res, other), ErrTokenRetired)
	// A post-swap fence of a later swap goes up; the watermark stays.
	later := fence(FenceWrite, "m3", hour)
	later.SwapRev, later.ReadRev = 30, 30
	MustSetFence(t, s, res, later)
	// A notice never clears a write fence of Phase 3 (no SwapRev).
	if err := s.ClearFence(res, "m3"); err != nil {
		t.Fatal(err)
	}
	MustSetFence(t, s, res, fence(FenceWrite, "m4", hour))
	if err := s.SetFence(res, Fence{Level: FenceNone, Token: "m5", SwapRev: 40}); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.GetFence(res); f.Token != "m4" || !f.Active(clock.Now()) {
		t.Fatalf("a notice cleared a pre-swap write fence: %+v", f)
	}
}

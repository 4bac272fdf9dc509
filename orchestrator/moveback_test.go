package orchestrator

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/store"
)

// TestMoveBack: us → eu → us. The second migration clears the first one's
// post-swap fence at us (writes are accepted there again), and the first
// migration's source cleanup, firing after the resource came back to us,
// leaves the live data at us alone (found by `cutover chaos`: a cleanup
// deleted the data of a resource that had moved back).
func TestMoveBack(t *testing.T) {
	e := mustEnv(t)
	cfg := e.config()
	cfg.CleanupWindow = 3 * time.Second
	e.startWorker(cfg)
	const res = "conv/back"
	e.seed(res, 5)
	ctx := context.Background()
	id1 := e.migrateDone(res, "eu")
	id2, err := e.client.Start(ctx, events.Start{Resource: res, Target: "us"})
	if err != nil {
		t.Fatal(err)
	}
	st2 := e.waitDone(id2, 30*time.Second)
	if st2.Status != events.StatusCompleted {
		t.Fatalf("move back: %s %s", st2.Status, st2.Reason)
	}
	if st2.Previous != id1 {
		t.Fatalf("previous migration %q, want %q", st2.Previous, id1)
	}
	if doc := e.doc(res); doc.Primary.Region != "us" || !doc.Primary.Lock.IsZero() {
		t.Fatalf("routing after move back: %+v", doc.Primary)
	}
	// Writes at us (the primary again) are not fenced any more.
	for _, svc := range testServices {
		if _, err := e.stores["us"][svc].Put(res, store.Record{ID: "after-" + svc, Kind: "msg", Data: []byte("x")}, true); err != nil {
			t.Fatalf("%s: write at the primary after moving back: %v", svc, err)
		}
	}
	// Wait past the first migration's cleanup window: its cleanup must skip us.
	deadline := time.Now().Add(20 * time.Second)
	for {
		st1, _, err := e.client.State(ctx, id1)
		if err == nil && st1.SourceCleaned {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("first migration's cleanup never ran")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, svc := range testServices {
		live, _, err := e.stores["us"][svc].Count(res)
		if err != nil || live != 6 {
			t.Fatalf("%s at us after the old cleanup: %d live records (%v), want 6", svc, live, err)
		}
	}
}

// TestOldLocationFencedAtTheSwap: when the Swapped event is appended, the
// old location already carries the post-swap write fence (a lease as long
// as the locked secondary's), so no moment exists between the end of the
// Phase 3 fence and the post-swap fence in which a stale cache could land a
// write there (found by `cutover chaos`: an acknowledged write lost after a
// slow swap). A move back retires that fence's token at the new primary, so
// a late copy of the request cannot fence it again.
func TestOldLocationFencedAtTheSwap(t *testing.T) {
	e := mustEnv(t)
	cfg := e.config()
	const res = "conv/fenced-at-swap"
	var checked atomic.Int32
	cfg.AfterAppend = func(env *events.Envelope) error {
		if env.Type != events.TypeSwapped || env.State.Resource != res {
			return nil
		}
		for _, svc := range testServices {
			f, err := e.stores[env.State.Source][svc].GetFence(res) // the old location, on both moves
			if err != nil {
				t.Errorf("%s: %v", svc, err)
				continue
			}
			if f.Level != store.FenceWrite || f.Expiry.Before(time.Now().Add(50*time.Minute)) {
				t.Errorf("%s at the old location when the swap is recorded: %s fence until %s, want the post-swap write fence (~1 h)", svc, f.Level, f.Expiry)
			}
		}
		checked.Add(1)
		return nil
	}
	e.startWorker(cfg)
	e.seed(res, 3)
	ctx := context.Background()
	id1, err := e.client.Start(ctx, events.Start{Resource: res, Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	st1 := e.waitDone(id1, 30*time.Second)
	if st1.Status != events.StatusCompleted || checked.Load() != 1 {
		t.Fatalf("move: %s %s (swap checked %d times)", st1.Status, st1.Reason, checked.Load())
	}
	id2, err := e.client.Start(ctx, events.Start{Resource: res, Target: "us"})
	if err != nil {
		t.Fatal(err)
	}
	if st := e.waitDone(id2, 30*time.Second); st.Status != events.StatusCompleted || checked.Load() != 2 {
		t.Fatalf("move back: %s %s (swaps checked %d)", st.Status, st.Reason, checked.Load())
	}
	for _, svc := range testServices {
		err := e.stores["us"][svc].SetFence(res, store.Fence{Level: store.FenceWrite, Token: st1.Token, Expiry: time.Now().Add(time.Hour)})
		if !errors.Is(err, store.ErrTokenRetired) {
			t.Errorf("%s: a late post-swap fence of the first move at the primary: %v, want ErrTokenRetired", svc, err)
		}
	}
}

// TestLateCleanupKeepsWhatCameBack: the source cleanup of us → eu, arriving
// late (delayed in the network) while eu → us is copying into us, deletes
// nothing: each service decides under its store's lock, from a leader read
// of routing, that us is the target again (services.RoutingCleanupGuard).
// Without the guard the cleanup would delete the records just imported.
func TestLateCleanupKeepsWhatCameBack(t *testing.T) {
	e := mustEnv(t)
	for _, region := range []string{"us", "eu"} {
		for _, svc := range testServices {
			e.dir.Add(region, services.NewStoreParticipant(svc, e.stores[region][svc],
				services.StoreParticipantOptions{KeepOnCleanup: services.RoutingCleanupGuard(e.locker, region)}))
		}
	}
	const res = "conv/late-cleanup"
	e.seed(res, 12)
	cfg := e.config()
	copied := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	cfg.BeforeAppend = func(st *events.State, b events.Body) error {
		if st.Resource == res && st.Target == "us" && (b.Type() == events.TypePagesCopied || b.Type() == events.TypePageCopied) {
			once.Do(func() { close(copied); <-release })
		}
		return nil
	}
	e.startWorker(cfg)
	ctx := context.Background()
	e.migrateDone(res, "eu")
	id2, err := e.client.Start(ctx, events.Start{Resource: res, Target: "us"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-copied:
	case <-time.After(30 * time.Second):
		t.Fatal("the move back never copied a page")
	}
	// The first move's cleanup request, late: us is the move back's target.
	eps, err := e.dir.Endpoints(ctx, "us", "conv")
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		n, err := ep.Cleanup(ctx, res)
		if err != nil || n != 0 {
			t.Errorf("%s: late cleanup at the move back's target deleted %d (%v), want 0", ep.Service(), n, err)
		}
	}
	close(release)
	if st := e.waitDone(id2, 30*time.Second); st.Status != events.StatusCompleted {
		t.Fatalf("move back: %s %s", st.Status, st.Reason)
	}
	for _, svc := range testServices {
		live, _, err := e.stores["us"][svc].Count(res)
		if err != nil || live != 12 {
			t.Fatalf("%s at us after the move back: %d live records (%v), want 12", svc, live, err)
		}
	}
	// Once the resource has left us again, a cleanup there deletes.
	e.migrateDone(res, "eu")
	for _, ep := range eps {
		if n, err := ep.Cleanup(ctx, res); err != nil || n == 0 {
			t.Errorf("%s: cleanup of the old source deleted %d (%v), want > 0", ep.Service(), n, err)
		}
	}
}

// TestMoveBackBeforeThePreviousCompleted: the move back clears the previous
// migration's post-swap fence even when that migration has swapped but not
// yet recorded Completed (its worker died after the swap): otherwise users
// get 423 at the new primary until the fence's hour runs out.
func TestMoveBackBeforeThePreviousCompleted(t *testing.T) {
	e := mustEnv(t)
	const res = "conv/back-early"
	e.seed(res, 3)
	cfg := e.config()
	var first atomic.Value
	var backDone atomic.Bool
	cfg.BeforeAppend = func(st *events.State, b events.Body) error {
		if _, ok := b.(events.Completed); ok && st.ID == first.Load() && !backDone.Load() {
			return errCrash // the first move cannot complete until the move back has
		}
		return nil
	}
	e.startWorker(cfg)
	ctx := context.Background()
	id1, err := e.client.Start(ctx, events.Start{Resource: res, Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	first.Store(id1)
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, _, err := Load(ctx, e.nc, id1)
		if err == nil && !st.SwappedAt.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first move never swapped")
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.migrateDone(res, "us")
	if st, _, _ := Load(ctx, e.nc, id1); st.Status.Terminal() {
		t.Fatalf("the first move completed before the move back: the test proves nothing")
	}
	for _, svc := range testServices {
		f, err := e.stores["us"][svc].GetFence(res)
		if err != nil || f.Level != store.FenceNone {
			t.Errorf("%s at the primary after the move back: %s fence (%v), want none", svc, f.Level, err)
		}
	}
	backDone.Store(true)
	if st := e.waitDone(id1, 30*time.Second); st.Status != events.StatusCompleted {
		t.Fatalf("first move: %s %s", st.Status, st.Reason)
	}
}

// TestMoveBackAfterPhysicalDelete is issue 14 #16: react, move us → eu,
// remove the reaction at eu (a physical delete: eu is the primary, no fence
// there), move back within the cleanup window. us still holds its old copy
// with the reaction; the copy into it must reconcile that copy (records the
// source no longer has are gone at the target before validation), so the
// move back validates on its first attempt.
func TestMoveBackAfterPhysicalDelete(t *testing.T) {
	e := mustEnv(t)
	cfg := e.config()
	cfg.MaxAttempts = 1
	e.startWorker(cfg)
	const res = "conv/unreact"
	e.seed(res, 5)
	ctx := context.Background()
	e.migrateDone(res, "eu")
	if r, err := e.stores["eu"]["reactions"].Delete(res, "reactions-0"); err != nil || r.Tombstoned {
		t.Fatalf("unreact at eu: %+v %v (want a physical delete)", r, err)
	}
	id2, err := e.client.Start(ctx, events.Start{Resource: res, Target: "us"})
	if err != nil {
		t.Fatal(err)
	}
	st2 := e.waitDone(id2, 30*time.Second)
	if st2.Status != events.StatusCompleted || st2.Attempt != 1 {
		t.Fatalf("move back: %s attempt %d: %s", st2.Status, st2.Attempt, st2.Reason)
	}
	if _, err := e.stores["us"]["reactions"].Get(res, "reactions-0"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the removed reaction is back at us: %v", err)
	}
	for _, svc := range testServices {
		want := 5
		if svc == "reactions" {
			want = 4
		}
		if live, _, err := e.stores["us"][svc].Count(res); err != nil || live != want {
			t.Fatalf("%s at us after moving back: %d live (%v), want %d", svc, live, err, want)
		}
	}
}

// TestMoveBackClearsAFenceItCannotName: the resource is at us with a
// post-swap fence left there by a move away whose token no migration in
// the chain records (a replayed attempt's token: chaos found such a 1-hour
// fence at a primary, blocking the next migration's hard-delete fence with
// "fence held by another token"). The next move away and back still works:
// the move back's swap-in notice clears any post-swap fence of an older
// swap at its new primary, whatever its token.
func TestMoveBackClearsAFenceItCannotName(t *testing.T) {
	e := mustEnv(t)
	cfg := e.config()
	e.startWorker(cfg)
	const res = "conv/orphan"
	e.seed(res, 3)
	e.migrateDone(res, "eu")
	// An orphan post-swap fence at eu (the primary now), with a token
	// nobody knows. (Its revision is the current one: one older than the
	// swap-in notice the first move sent is refused by the store.)
	doc := e.doc(res)
	orphan := store.Fence{Level: store.FenceWrite, Token: "orphan-token", Expiry: time.Now().Add(time.Hour), SwapRev: doc.Revision}
	for _, svc := range testServices {
		if err := e.stores["eu"][svc].SetFence(res, orphan); err != nil {
			t.Fatal(err)
		}
	}
	// eu → us → eu: the move back to eu clears it.
	for _, target := range []string{"us", "eu"} {
		e.migrateDone(res, target)
	}
	for _, svc := range testServices {
		f, err := e.stores["eu"][svc].GetFence(res)
		if err != nil {
			t.Fatal(err)
		}
		if f.Active(time.Now()) {
			t.Fatalf("%s at eu (the primary): a fence is still up: %+v", svc, f)
		}
	}
}

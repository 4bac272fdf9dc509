package orchestrator

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// TestMoveBack: us → eu → us. The second migration's swap makes us the
// primary again in its stores (writes are accepted there again), and the
// first migration's source cleanup, firing after the resource came back to
// us, leaves the live data at us alone: its authority (us a secondary, by
// the document it reads then) meets the move back's newer one.
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

// TestOldLocationSecondaryAtTheSwap: when the Swapped event is appended,
// the old location's stores already hold the swap's authority (a
// secondary), so no moment exists between the end of the write fence and
// that authority in which a stale cache could land a write there. After a
// move back, a late copy of the first move's write fence cannot fence the
// new primary again: its revision is older than the one the store holds.
func TestOldLocationSecondaryAtTheSwap(t *testing.T) {
	e := mustEnv(t)
	cfg := e.config()
	const res = "conv/fenced-at-swap"
	var checked atomic.Int32
	cfg.AfterAppend = func(env *events.Envelope) error {
		if env.Type != events.TypeSwapped || env.State.Resource != res {
			return nil
		}
		for _, svc := range testServices {
			if a := e.authority(env.State.Source, svc, res); a.RoleOf() != contract.RoleSecondary { // the old location, on both moves
				t.Errorf("%s at the old location when the swap is recorded: %s, want a secondary", svc, a)
			}
		}
		checked.Add(1)
		return nil
	}
	stamps := e.recordStamps("messages")
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
	var fence contract.Authority
	for _, s := range stamps() {
		if s.region == "us" && s.a.RoleOf() == contract.RoleExporting {
			fence = s.a
		}
	}
	id2, err := e.client.Start(ctx, events.Start{Resource: res, Target: "us"})
	if err != nil {
		t.Fatal(err)
	}
	if st := e.waitDone(id2, 30*time.Second); st.Status != events.StatusCompleted || checked.Load() != 2 {
		t.Fatalf("move back: %s %s (swaps checked %d)", st.Status, st.Reason, checked.Load())
	}
	if _, err := e.participant("us", "messages").Authorize(ctx, res, fence); contract.AsError(err).Code != contract.CodeConflict {
		t.Errorf("a late write fence of the first move (%s) at the primary: %v, want a conflict", fence, err)
	}
	if _, err := e.stores["us"]["messages"].Put(res, store.Record{ID: "after", Kind: "msg", Data: []byte("x")}, true); err != nil {
		t.Errorf("a user write at the primary after the late fence: %v", err)
	}
}

// TestLateCleanupKeepsWhatCameBack: the source cleanup of us → eu, arriving
// late (delayed in the network) while eu → us is copying into us, deletes
// nothing: its authority (us a secondary, by the document after the first
// swap) is older than the one the move back's imports installed (us
// importing). Without the revision check the cleanup would delete the
// records just imported.
func TestLateCleanupKeepsWhatCameBack(t *testing.T) {
	e := mustEnv(t)
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
	late := e.doc(res).AuthorityAt("us", 0) // what the first move's cleanup carries
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
		n, err := ep.Cleanup(ctx, res, late)
		if contract.AsError(err).Code != contract.CodeConflict || n != 0 {
			t.Errorf("%s: late cleanup (%s) at the move back's target deleted %d (%v), want a conflict", ep.Service(), late, n, err)
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
	now := e.doc(res).AuthorityAt("us", 0)
	for _, ep := range eps {
		if n, err := ep.Cleanup(ctx, res, now); err != nil || n == 0 {
			t.Errorf("%s: cleanup of the old source deleted %d (%v), want > 0", ep.Service(), n, err)
		}
	}
}

// TestMoveBackBeforeThePreviousCompleted: the move back makes us the
// primary in its stores even when the previous migration has swapped but
// not yet recorded Completed (its worker died after the swap): nothing of
// the previous migration's has to be found or cleared.
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
		// (a primary deleting as tombstones: the move back's reverse window)
		if a := e.authority("us", svc, res); a.RoleOf() != contract.RolePrimary {
			t.Errorf("%s at the primary after the move back: %s, want the primary", svc, a)
		}
	}
	backDone.Store(true)
	if st := e.waitDone(id1, 30*time.Second); st.Status != events.StatusCompleted {
		t.Fatalf("first move: %s %s", st.Status, st.Reason)
	}
}

// TestMoveBackAfterPhysicalDelete: react, move us → eu, let the reverse
// window end (the secondary lease), remove the reaction at eu (a physical
// delete: eu is the primary, no fence there and no reverse window), move
// back within the cleanup window. us still holds its old copy with the
// reaction; the copy into it must reconcile that copy (records the source
// no longer has are gone at the target before validation), so the move
// back validates on its first attempt.
func TestMoveBackAfterPhysicalDelete(t *testing.T) {
	e := mustEnv(t, shortReverseWindow)
	cfg := e.config()
	cfg.MaxAttempts = 1
	e.startWorker(cfg)
	const res = "conv/unreact"
	e.seed(res, 5)
	ctx := context.Background()
	e.migrateDone(res, "eu")
	e.afterReverseWindow(res)
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

// TestMoveAwayOverridesAStrandedAuthority: a store at the primary holds an
// authority that refuses writes at the routing document's own revision (a
// stricter one than routing gives, which only a bug could leave). The next
// migration's requests, stamped by later revisions, replace it: the resource
// moves away and back, and writes are accepted at the primary again.
func TestMoveAwayOverridesAStrandedAuthority(t *testing.T) {
	e := mustEnv(t)
	e.startWorker(e.config())
	const res = "conv/orphan"
	e.seed(res, 3)
	e.migrateDone(res, "eu")
	doc := e.doc(res)
	stranded := contract.Authority{Rev: doc.Revision, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}
	for _, svc := range testServices {
		if _, err := e.stores["eu"][svc].Repair(res, stranded); err != nil {
			t.Fatal(err)
		}
	}
	for _, target := range []string{"us", "eu"} {
		e.migrateDone(res, target)
	}
	for _, svc := range testServices {
		if a := e.authority("eu", svc, res); a.RoleOf() != contract.RolePrimary {
			t.Fatalf("%s at eu (the primary): %s", svc, a)
		}
		if _, err := e.stores["eu"][svc].PutAt(res, store.Record{ID: "after", Kind: "msg", Data: []byte("x")}, true, e.doc(res).AuthorityAt("eu", 0)); err != nil {
			t.Fatalf("%s: a write at the primary: %v", svc, err)
		}
	}
}

package orchestrator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// lostSwap is the world of issue 14 #2: M1 moves res us → eu and every
// append of its Swapped event is lost (the swap's CAS committed; a lost
// CAS reply followed by a crash leaves the same state) until M2, moving
// res back eu → us, holds its pre-lock, which overwrites the token M1 left
// on the secondary location. hold, when set, is consulted before every
// other append and drops it (a simulated crash; AckWait redelivers the
// step) while it returns true: nothing blocks a worker's slots.
type lostSwap struct {
	e        *env
	res      string
	m1, m2   atomic.Value // migration ids
	lost     atomic.Int32 // Swapped appends of M1 dropped
	lostOnce sync.Once
	lostCh   chan struct{}
	hold     func(st *events.State, b events.Body) bool
	writes   atomic.Int32 // user writes at us, for fresh record ids
}

func newLostSwap(t *testing.T, res string) (*lostSwap, Config) {
	e := mustEnv(t)
	e.seed(res, 5)
	ls := &lostSwap{e: e, res: res, lostCh: make(chan struct{})}
	ls.m1.Store("")
	ls.m2.Store("")
	cfg := e.config()
	cfg.AckWait, cfg.StepTimeout = time.Second, time.Second // a dropped step is redelivered soon
	cfg.CleanupWindow = 2 * time.Second
	cfg.BeforeAppend = func(st *events.State, b events.Body) error {
		if st.ID == ls.m1.Load() && b.Type() == events.TypeSwapped && !ls.m2PreLocked() {
			ls.lost.Add(1)
			ls.lostOnce.Do(func() { close(ls.lostCh) })
			return errCrash
		}
		if ls.hold != nil && ls.hold(st, b) {
			return errCrash
		}
		return nil
	}
	return ls, cfg
}

// m2PreLocked reports whether the routing document shows M2's pre-lock or
// anything after it.
func (ls *lostSwap) m2PreLocked() bool {
	id := ls.m2.Load().(string)
	if id == "" {
		return false
	}
	st, _, err := Load(context.Background(), ls.e.nc, id)
	return err == nil && st.Phase != events.PhaseRequested
}

// ended reports whether the migration in id is terminal.
func (ls *lostSwap) ended(id *atomic.Value) bool {
	s := id.Load().(string)
	if s == "" {
		return false
	}
	st, _, err := Load(context.Background(), ls.e.nc, s)
	return err == nil && st.Status.Terminal()
}

// start starts M1, waits for its first lost Swapped, then starts M2.
func (ls *lostSwap) start(t *testing.T) (id1, id2 string) {
	t.Helper()
	ctx := context.Background()
	id1, err := ls.e.client.Start(ctx, events.Start{Resource: ls.res, Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	ls.m1.Store(id1)
	select {
	case <-ls.lostCh:
	case <-time.After(30 * time.Second):
		t.Fatal("M1 never swapped")
	}
	id2, err = ls.e.client.Start(ctx, events.Start{Resource: ls.res, Target: "us"})
	if err != nil {
		t.Fatal(err)
	}
	ls.m2.Store(id2)
	return id1, id2
}

// assertRecognised checks that M1 recognised its own swap: completed with
// one Swapped event and never rolled back or retried.
func (ls *lostSwap) assertRecognised(t *testing.T, id1 string) {
	t.Helper()
	st1 := ls.e.waitDone(id1, 30*time.Second)
	h := ls.e.history(id1)
	if st1.Status != events.StatusCompleted || st1.Attempt != 1 || countType(h, events.TypeSwapped) != 1 ||
		countType(h, events.TypeRolledBack) != 0 || countType(h, events.TypeRescheduled) != 0 {
		t.Errorf("M1 after its lost Swapped event: %s attempt %d (%s); %d Swapped, %d RolledBack, %d Rescheduled; want Completed on attempt 1 with its swap recognised",
			st1.Status, st1.Attempt, st1.Reason, countType(h, events.TypeSwapped), countType(h, events.TypeRolledBack), countType(h, events.TypeRescheduled))
	}
	assertFold(t, h)
}

// assertPrimaryUnfenced checks that res is at us with no lock, that the
// stores at us (the primary) hold the primary's authority and that users
// can write there.
func (ls *lostSwap) assertPrimaryUnfenced(t *testing.T) {
	t.Helper()
	if doc := ls.e.doc(ls.res); doc.Primary.Region != "us" || !doc.Primary.Lock.IsZero() {
		t.Fatalf("routing: primary %+v, want us unlocked (M2's move)", doc.Primary)
	}
	n := ls.writes.Add(1)
	for _, svc := range testServices {
		if a := ls.e.authority("us", svc, ls.res); a.RoleOf() != contract.RolePrimary {
			t.Errorf("%s at the primary us: %s, want the primary", svc, a)
		}
		if _, err := ls.e.stores["us"][svc].Put(ls.res, store.Record{ID: fmt.Sprintf("after-%s-%d", svc, n), Kind: "msg", Data: []byte("x")}, true); err != nil {
			t.Errorf("%s: a user write at the primary us: %v", svc, err)
		}
	}
}

// TestLostSwapEventThenPreLockDropped is issue 14 #2 (a): M1's replay runs
// while M2 holds its pre-lock (M2 is held there until M1 ends). Before the
// fix M1 saw M2's token on the secondary, rolled back as "not ours", found
// the resource at its target on the next attempt and ended Dropped; its
// post-swap fence stayed at us, which M2 then made the primary (users get
// 423 for the secondary lease), and M1's source was never cleaned.
func TestLostSwapEventThenPreLockDropped(t *testing.T) {
	ls, cfg := newLostSwap(t, "conv/lost-a")
	ls.hold = func(st *events.State, b events.Body) bool {
		// M2 stays pre-locked until M1 has ended.
		return st.ID == ls.m2.Load() && st.Phase == events.PhasePreLocked && !ls.ended(&ls.m1)
	}
	ls.e.startWorker(cfg)
	id1, id2 := ls.start(t)
	ls.assertRecognised(t, id1)
	if st2 := ls.e.waitDone(id2, 30*time.Second); st2.Status != events.StatusCompleted {
		t.Fatalf("M2: %s %s", st2.Status, st2.Reason)
	}
	ls.assertPrimaryUnfenced(t)
	t.Logf("M1's Swapped append lost %d times", ls.lost.Load())
}

// TestLostSwapEventThenMovedBack is issue 14 #2 (b): M1's replay runs
// while M2 holds its pre-lock, and M1's next attempt is held until M2 has
// completed. Before the fix M1 rolled back as "not ours" and its next
// attempt moved the resource back to eu, undoing M2, reported Completed.
func TestLostSwapEventThenMovedBack(t *testing.T) {
	ls, cfg := newLostSwap(t, "conv/lost-b")
	ls.hold = func(st *events.State, b events.Body) bool {
		// M1's next attempt waits for M2 to complete.
		_, retry := b.(events.Rescheduled)
		return retry && st.ID == ls.m1.Load() && !ls.ended(&ls.m2)
	}
	ls.e.startWorker(cfg)
	id1, id2 := ls.start(t)
	if st2 := ls.e.waitDone(id2, 30*time.Second); st2.Status != events.StatusCompleted {
		t.Fatalf("M2: %s %s", st2.Status, st2.Reason)
	}
	ls.assertRecognised(t, id1)
	ls.assertPrimaryUnfenced(t)
	t.Logf("M1's Swapped append lost %d times", ls.lost.Load())
}

// TestLostSwapEventThenSwappedAgain: M1's replay runs only after M2 has
// swapped the resource back to us, so the routing document's last swap is
// M2's. M1 recognises its own swap from M2's record of the swap it found
// at its pre-lock, and M2 cleared M1's post-swap fence at us although M1's
// own log did not show the swap yet. Before the fix M1 released nothing,
// cleaned M2's old source as its own target, and its next attempt moved
// the resource back to eu.
func TestLostSwapEventThenSwappedAgain(t *testing.T) {
	ls, cfg := newLostSwap(t, "conv/lost-c")
	ls.hold = func(st *events.State, b events.Body) bool {
		// Once M2 has started, every append of M1 waits for M2 to complete.
		return st.ID == ls.m1.Load() && ls.m2.Load() != "" && !ls.ended(&ls.m2)
	}
	ls.e.startWorker(cfg)
	id1, id2 := ls.start(t)
	if st2 := ls.e.waitDone(id2, 30*time.Second); st2.Status != events.StatusCompleted {
		t.Fatalf("M2: %s %s", st2.Status, st2.Reason)
	}
	ls.assertPrimaryUnfenced(t)
	ls.assertRecognised(t, id1)
	ls.assertPrimaryUnfenced(t)
}

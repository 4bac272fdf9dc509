package orchestrator

import (
	"context"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// TestPostSwapFenceStaysWhenTheNextMigrationPreLocks: a migration whose
// post-swap fence was deferred (its swap step could not set it) sets it in
// its next step even when the next migration has since pre-locked the old
// location as its target: until that migration swaps, a router whose
// routing predates the first swap still sends writes and reads there (chaos
// with fence-driven convergence and 10-minute caches lost a write there
// when the fence was skipped). Once the resource is back at the old
// location, the fence is skipped.
func TestPostSwapFenceStaysWhenTheNextMigrationPreLocks(t *testing.T) {
	e := mustEnv(t, func(c *kvrouting.LockConfig) { c.ConvergenceDelay = 0 })
	ctx := context.Background()
	res := kvrouting.Resource{Kind: "conv", ID: "back"}
	if _, err := e.locker.Register(ctx, res, "us"); err != nil {
		t.Fatal(err)
	}
	// Migration A: us → eu, swapped (its Swapped event has no cleanup
	// schedule: the post-swap fence is still due).
	ga, err := e.locker.PreLock(ctx, res, "eu", "mA")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(testLockConfig().ClockSkew + 10*time.Millisecond) // past not-before + skew
	d, err := e.locker.EscalateHardDelete(ctx, res, ga.Token, ga.Doc)
	if err != nil {
		t.Fatal(err)
	}
	if d, err = e.locker.EscalateWrite(ctx, res, ga.Token, d); err != nil {
		t.Fatal(err)
	}
	swapped, err := e.locker.Swap(ctx, res, ga.Token, d)
	if err != nil {
		t.Fatal(err)
	}
	// Migration B: eu → us, pre-locked: us is its target now.
	if _, err := e.locker.PreLock(ctx, res, "us", "mB"); err != nil {
		t.Fatal(err)
	}
	w, err := NewWorker(e.nc, e.js, e.config())
	if err != nil {
		t.Fatal(err)
	}
	st := &events.State{ID: "mA", Resource: res.String(), Source: "us", Target: "eu", Token: string(ga.Token), SwappedAt: time.Now()}
	if o := w.scheduleCleanup(ctx, st); o.body == nil || o.body.Type() != events.TypeCleanupScheduled {
		t.Fatalf("scheduleCleanup: %+v", o)
	}
	for _, svc := range testServices {
		f, err := e.stores["us"][svc].GetFence(res.String())
		if err != nil {
			t.Fatal(err)
		}
		if f.Level != contract.FenceWrite || f.Token != string(ga.Token) || f.SwapRev < swapped.Revision || f.ReadRev < swapped.Revision || !f.Active(time.Now()) {
			t.Fatalf("%s at the old location: %+v, want A's post-swap fence (swap revision %d)", svc, f, swapped.Revision)
		}
	}

	// Back at the old location (the next migration swapped): skipped.
	st2 := &events.State{ID: "mA2", Resource: res.String(), Source: "eu", Target: "us", Token: "t-none", SwappedAt: time.Now()}
	doc, err := e.locker.Get(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Primary.Region != "eu" || !backAtSource(doc, st2) {
		t.Fatalf("primary %s: the resource is at eu", doc.Primary.Region)
	}
	if o := w.scheduleCleanup(ctx, st2); o.body == nil || o.body.Type() != events.TypeCleanupScheduled {
		t.Fatalf("scheduleCleanup back at source: %+v", o)
	}
	for _, svc := range testServices {
		if f, _ := e.stores["eu"][svc].GetFence(res.String()); f.Active(time.Now()) {
			t.Fatalf("%s at the primary: fenced %+v", svc, f)
		}
	}
}

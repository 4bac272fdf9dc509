package orchestrator

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// The hard-delete lock is renewed while a slow historical copy runs, so it
// never lapses (paper 001 §5.2).
func TestHardDeleteRenewal(t *testing.T) {
	e := mustEnv(t, func(c *kvrouting.LockConfig) { c.HardDeleteLease = time.Second })
	e.seed("conv/long", 20)
	f := e.wrap("us", "messages")
	f.onExport = func(req contract.ExportRequest) error {
		if req.Mode == contract.Historical {
			time.Sleep(250 * time.Millisecond)
		}
		return nil
	}
	cfg := e.config()
	cfg.RenewMargin = 700 * time.Millisecond
	e.startWorker(cfg)
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/long", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	st := e.waitDone(id, 30*time.Second)
	if st.Status != events.StatusCompleted || st.Attempt != 1 {
		t.Fatalf("status %s attempt %d: %s", st.Status, st.Attempt, st.Reason)
	}
	if n := countType(e.history(id), events.TypeRenewed); n < 1 {
		t.Fatal("no renewal")
	}
	e.assertMigrated("conv/long")
}

// After the cleanup window the source data is deleted (paper 001 §4.1.4),
// stamped with the revision the migration's own swap wrote: no routing
// read between the swap and the cleanup (paper 000 §8).
func TestSourceCleanupAfterWindow(t *testing.T) {
	e := mustEnv(t)
	e.seed("conv/clean", 5)
	cfg := e.config()
	cfg.CleanupWindow = 300 * time.Millisecond
	var atSwap, atClean atomic.Uint64
	cfg.AfterAppend = func(env *events.Envelope) error {
		switch env.Type {
		case events.TypeSwapped:
			atSwap.Store(e.locker.Store().Stats().Reads())
		case events.TypeCleanedUp:
			atClean.Store(e.locker.Store().Stats().Reads())
		}
		return nil
	}
	e.startWorker(cfg)
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/clean", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	e.waitDone(id, 30*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, _, err := Load(context.Background(), e.nc, id)
		if err == nil && st.SourceCleaned {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("source not cleaned")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The hooks run after their appends, in the steps' goroutines: on a
	// loaded box the swap step's hook can run after the cleanup step's
	// (atSwap then exceeds atClean), which is no read in between either.
	if clean, swap := atClean.Load(), atSwap.Load(); clean > swap {
		t.Errorf("%d routing reads between the swap and the source's cleanup, want 0", clean-swap)
	}
	for _, svc := range testServices {
		if live, tomb, _ := e.stores["us"][svc].Count("conv/clean"); live+tomb != 0 {
			t.Fatalf("source %s still has %d records", svc, live+tomb)
		}
		if live, _, _ := e.stores["eu"][svc].Count("conv/clean"); live != 5 {
			t.Fatalf("target %s has %d records", svc, live)
		}
	}
}

// Force-release needs two approvers, clears the lock and leaves an audit
// event; the migration that held the lock rolls back and stops. (A
// development orchestrator: unsigned names; signed approvals: admin_test.go.)
func TestForceRelease(t *testing.T) {
	e := mustEnv(t)
	e.seed("conv/stuck", 5)
	f := e.wrap("us", "messages")
	block := make(chan struct{})
	f.onExport = func(contract.ExportRequest) error { <-block; return nil }
	cfg := e.config()
	cfg.StepTimeout, cfg.UnsignedApprovals = 2*time.Second, true
	e.startWorker(cfg)
	defer close(block)
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/stuck", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	e.awaitLock("conv/stuck", kvrouting.LockHardDelete)
	aid, err := e.client.ForceRelease(context.Background(), events.ForceRelease{Resource: "conv/stuck", Approvers: []string{"alice", "Alice\u200b"}, Reason: "one approver"})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := e.outcome(aid).Body.(events.AdminRefused); !ok || r.Code != events.RefusedApprovals {
		t.Fatalf("one approver twice: %+v", r)
	}
	if e.doc("conv/stuck").Primary.Lock.IsZero() {
		t.Fatal("a refused force-release released the lock")
	}
	if _, err := e.client.ForceRelease(context.Background(), events.ForceRelease{Resource: "conv/stuck", Approvers: []string{"alice", "bob"}, Reason: "stuck export"}); err != nil {
		t.Fatal(err)
	}
	st := e.waitDone(id, 30*time.Second)
	if st.Status != events.StatusFailed || !strings.Contains(st.Reason, "force-released") {
		t.Fatalf("status %s: %s", st.Status, st.Reason)
	}
	h := e.history(id)
	if countType(h, events.TypeForceReleased) != 1 || countType(h, events.TypeSwapped) != 0 {
		t.Fatalf("force-released %d swapped %d", countType(h, events.TypeForceReleased), countType(h, events.TypeSwapped))
	}
	if doc := e.doc("conv/stuck"); doc.Primary.Region != "us" || !doc.Primary.Lock.IsZero() {
		t.Fatalf("routing %+v", doc.Primary)
	}
}

// A participant that hangs makes every step time out; timeouts count as
// transient failures, so the migration rolls back instead of hanging.
func TestHangingParticipantRollsBack(t *testing.T) {
	e := mustEnv(t)
	e.seed("conv/hang", 5)
	f := e.wrap("eu", "messages")
	f.onImport = func(*contract.ImportRequest) error {
		time.Sleep(400 * time.Millisecond)
		return context.DeadlineExceeded
	}
	cfg := e.config()
	cfg.StepTimeout, cfg.MaxAttempts = 300*time.Millisecond, 1
	e.startWorker(cfg)
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/hang", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	st := e.waitDone(id, 30*time.Second)
	if st.Status != events.StatusFailed || !strings.Contains(st.Reason, "3 transient failures") {
		t.Fatalf("status %s: %s", st.Status, st.Reason)
	}
	if doc := e.doc("conv/hang"); doc.Primary.Region != "us" || !doc.Primary.Lock.IsZero() {
		t.Fatalf("routing %+v", doc.Primary)
	}
}

package orchestrator

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// wrap replaces region's participant of svc with a flaky wrapper.
func (e *env) wrap(region, svc string) *flaky {
	f := &flaky{Participant: e.participant(region, svc)}
	e.dir.Add(region, f)
	return f
}

// A delta export slower than the (never extended) write lease aborts the
// attempt: rollback with the source authoritative, then a fresh attempt
// with a fresh token succeeds (paper 001 §4.1.3).
func TestWriteLockExpiryRollsBackAndRetries(t *testing.T) {
	e := mustEnv(t, func(c *kvrouting.LockConfig) { c.WriteLease = 500 * time.Millisecond })
	e.seed("conv/slow", 10)
	f := e.wrap("us", "messages")
	var slowed atomic.Bool
	f.onExport = func(req contract.ExportRequest) error {
		if req.Mode == contract.Delta && slowed.CompareAndSwap(false, true) {
			time.Sleep(700 * time.Millisecond)
		}
		return nil
	}
	e.startWorker(e.config())
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/slow", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	st := e.waitDone(id, 30*time.Second)
	if st.Status != events.StatusCompleted || st.Attempt != 2 {
		t.Fatalf("status %s attempt %d (%s)", st.Status, st.Attempt, st.Reason)
	}
	h := e.history(id)
	var rb *events.RolledBack
	tokens := map[string]bool{}
	for _, ev := range h {
		tokens[ev.State.Token] = true
		if b, ok := ev.Body.(events.RolledBack); ok {
			rb = &b
		}
	}
	if rb == nil || rb.Reason != "write lock expired" {
		t.Fatalf("rollback %+v", rb)
	}
	if len(tokens) != 2 {
		t.Fatalf("%d tokens, want a fresh one for the retry", len(tokens))
	}
	if countType(h, events.TypeSwapped) != 1 || countType(h, events.TypeRescheduled) != 1 {
		t.Fatal("want one swap and one reschedule")
	}
	e.assertMigrated("conv/slow")
	assertFold(t, h)
}

// A target that loses a record fails validation: rollback, no cutover,
// the source keeps the data and takes writes again (paper 001 §5.3).
func TestValidationFailureRollsBack(t *testing.T) {
	e := mustEnv(t)
	e.seed("conv/bad", 10)
	f := e.wrap("eu", "reactions")
	f.onImport = func(r *contract.ImportRequest) error {
		if r.Page != nil && len(r.Page.Records) > 0 {
			pg := *r.Page
			pg.Records = pg.Records[1:] // drop a record on every import
			r.Page = &pg
		}
		return nil
	}
	cfg := e.config()
	cfg.MaxAttempts = 2
	e.startWorker(cfg)
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/bad", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	st := e.waitDone(id, 30*time.Second)
	if st.Status != events.StatusFailed || !strings.Contains(st.Reason, "validation failed") {
		t.Fatalf("status %s: %s", st.Status, st.Reason)
	}
	h := e.history(id)
	if countType(h, events.TypeSwapped) != 0 || countType(h, events.TypeRolledBack) != 2 {
		t.Fatalf("swaps %d rollbacks %d", countType(h, events.TypeSwapped), countType(h, events.TypeRolledBack))
	}
	doc := e.doc("conv/bad")
	if doc.Primary.Region != "us" || !doc.Primary.Lock.IsZero() || doc.Secondary != nil {
		t.Fatalf("routing after rollback: %+v %+v", doc.Primary, doc.Secondary)
	}
	for _, svc := range testServices {
		if live, _, _ := e.stores["eu"][svc].Count("conv/bad"); live != 0 {
			t.Fatalf("target %s not cleaned: %d", svc, live)
		}
		if live, _, _ := e.stores["us"][svc].Count("conv/bad"); live != 10 {
			t.Fatalf("source %s has %d", svc, live)
		}
		// The fence is gone: the source takes writes again.
		if _, err := e.stores["us"][svc].Put("conv/bad", store.Record{ID: "after", Data: []byte("x")}, true); err != nil {
			t.Fatalf("write after rollback: %v", err)
		}
	}
	assertFold(t, h)
}

// Three transient failures in one phase roll back (paper 001 §3.5); a
// cancel stops the migration for good.
func TestTransientFailuresAndCancel(t *testing.T) {
	e := mustEnv(t)
	e.seed("conv/flaky", 5)
	f := e.wrap("us", "messages")
	f.onExport = func(contract.ExportRequest) error { return errors.New("throttled") }
	cfg := e.config()
	cfg.RescheduleBackoff = time.Hour // the cancel arrives during the backoff
	e.startWorker(cfg)
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/flaky", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, _, err := Load(context.Background(), e.nc, id)
		if err == nil && st.Attempt == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no reschedule")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := e.client.Cancel(context.Background(), id, "operator"); err != nil {
		t.Fatal(err)
	}
	st := e.waitDone(id, 20*time.Second)
	if st.Status != events.StatusFailed || !strings.Contains(st.Reason, "cancelled") {
		t.Fatalf("status %s: %s", st.Status, st.Reason)
	}
	h := e.history(id)
	var first *events.RolledBack
	for _, ev := range h {
		if b, ok := ev.Body.(events.RolledBack); ok && first == nil {
			first = &b
		}
	}
	if first == nil || !strings.Contains(first.Reason, "3 transient failures") || first.Phase != events.PhaseHistorical {
		t.Fatalf("first rollback %+v", first)
	}
	if countType(h, events.TypeStepFailed) != 3 {
		t.Fatalf("%d StepFailed", countType(h, events.TypeStepFailed))
	}
}

// One service's export failing while the other's succeeds: the good page
// is checkpointed and no failure is counted; only a round in which every
// page fails counts toward the phase's retry limit (the services' pages are
// copied concurrently, one event per round).
func TestPartialPageFailure(t *testing.T) {
	e := mustEnv(t)
	e.seed("conv/partial", 20)
	f := e.wrap("us", testServices[1])
	var fails atomic.Int32
	f.onExport = func(req contract.ExportRequest) error {
		if req.Mode == contract.Historical && fails.Add(1) <= 2 {
			return contract.Errorf(contract.CodeUnavailable, "injected export failure")
		}
		return nil
	}
	cfg := e.config()
	cfg.PagesPerStep = 1 // one page per service per round (runs: TestCopyRuns)
	e.startWorker(cfg)
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/partial", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	st := e.waitDone(id, 30*time.Second)
	if st.Status != events.StatusCompleted || st.Attempt != 1 {
		t.Fatalf("status %s attempt %d (%s)", st.Status, st.Attempt, st.Reason)
	}
	h := e.history(id)
	if n := countType(h, events.TypeStepFailed); n != 0 {
		t.Fatalf("%d StepFailed events, want 0 (the other service made progress each round)", n)
	}
	single := 0
	for _, ev := range h {
		// (The failing service's last pages stand alone too, once the
		// healthy one is done.)
		if b, ok := ev.Body.(events.PageCopied); ok && b.Service == testServices[0] {
			single++
		}
	}
	if single != 2 {
		t.Fatalf("%d rounds with only the healthy service's page, want 2 (the rounds its peer failed)", single)
	}
	e.assertMigrated("conv/partial")
	assertFold(t, h)

	// Every page failing is a transient failure of the phase.
	e.seed("conv/allfail", 3)
	var all atomic.Int32
	for _, svc := range testServices {
		g := e.wrap("us", svc)
		g.onExport = func(req contract.ExportRequest) error {
			if req.Resource == "conv/allfail" && req.Mode == contract.Historical && all.Add(1) <= int32(len(testServices)) {
				return contract.Errorf(contract.CodeUnavailable, "injected export failure")
			}
			return nil
		}
	}
	id2 := e.migrateDone("conv/allfail", "eu")
	if n := countType(e.history(id2), events.TypeStepFailed); n != 1 {
		t.Fatalf("%d StepFailed events, want 1", n)
	}
}

// TestRollbackNotOursCleansTheTarget: a rollback that finds the routing
// lock held by another migration (an operator force-released ours
// mid-copy and a migration to a third region took it) still removes the
// copy it left at its target and tells the source its authority: a copy is
// never left in a region the resource never moved to, whoever holds the
// lock now. The target is told its authority by the routing document of
// the rollback's time (a secondary), newer than the imports' (importing).
// (On the code before authority records, this rollback, "not ours",
// cleaned nothing: 20 records per service stayed at eu.)
func TestRollbackNotOursCleansTheTarget(t *testing.T) {
	e := mustEnv(t)
	e.addRegion("ap")
	const res = "conv/notours"
	e.seed(res, 20) // three pages of 7 per service
	f := e.wrap("eu", "messages")
	second, unblock := make(chan struct{}), make(chan struct{})
	var imports atomic.Int32
	f.onImport = func(r *contract.ImportRequest) error {
		if r.Page != nil && imports.Add(1) == 2 {
			close(second)
			<-unblock
		}
		return nil
	}
	cfg := e.config()
	cfg.MaxAttempts = 1
	e.startWorker(cfg)
	ctx := context.Background()
	id, err := e.client.Start(ctx, events.Start{Resource: res, Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-second:
	case <-time.After(20 * time.Second):
		close(unblock)
		t.Fatal("no second import")
	}
	// An operator force-releases the lock (the admin escape hatch, paper
	// 000 §8) while the copy is under way.
	r, _ := kvrouting.ParseResource(res)
	if _, err = e.locker.ForceRelease(ctx, r, []string{"alice", "bob"}); err != nil {
		close(unblock)
		t.Fatal(err)
	}
	// Another migration takes the lock, to a third region.
	_, err = e.locker.PreLock(ctx, r, "ap", "other-migration")
	close(unblock)
	if err != nil {
		t.Fatal(err)
	}
	end := e.waitDone(id, 20*time.Second)
	if end.Status != events.StatusFailed {
		t.Fatalf("status %s (%s), want failed after the rollback", end.Status, end.Reason)
	}
	var rb *events.RolledBack
	for _, ev := range e.history(id) {
		if b, ok := ev.Body.(events.RolledBack); ok {
			rb = &b
		}
	}
	if rb == nil {
		t.Fatalf("no rollback in %v", types(e.history(id)))
	}
	doc := e.doc(res)
	for _, svc := range testServices {
		if live, tomb := mustCount(t, e.stores["eu"][svc], res); live+tomb != 0 {
			t.Errorf("%s: %d live and %d tombstones left at eu, where the resource never moved", svc, live, tomb)
		}
		if a := e.authority("eu", svc, res); a != doc.AuthorityAt("eu", 0) {
			t.Errorf("%s at eu holds %s, want %s", svc, a, doc.AuthorityAt("eu", 0))
		}
		if a := e.authority("us", svc, res); a != doc.AuthorityAt("us", 0) {
			t.Errorf("%s at us (the primary) holds %s, want %s", svc, a, doc.AuthorityAt("us", 0))
		}
	}
}

package orchestrator

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// captureImports records a copy of every import request with a page made
// at region's svc, as a delayed import (a redelivered step on a second
// worker, a request held in a reconnect buffer or queued behind a server's
// slots) would deliver it.
func (e *env) captureImports(region, svc string) func() []contract.ImportRequest {
	f := e.wrap(region, svc)
	var mu sync.Mutex
	var reqs []contract.ImportRequest
	f.onImport = func(r *contract.ImportRequest) error {
		if r.Page == nil || len(r.Page.Records) == 0 {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		c := *r
		pg := *r.Page
		pg.Records = append([]contract.Record(nil), r.Page.Records...)
		c.Page = &pg
		reqs = append(reqs, c)
		return nil
	}
	return func() []contract.ImportRequest {
		mu.Lock()
		defer mu.Unlock()
		return append([]contract.ImportRequest(nil), reqs...)
	}
}

// TestLateImportAfterSwapChangesNothing: W1's import of a page is delayed;
// the migration validates and swaps; a user deletes a reaction at the new
// primary (a physical delete); W1's import lands. It must change nothing:
// the reaction stays deleted (its stamp is older than the swap's authority
// the new primary holds).
func TestLateImportAfterSwapChangesNothing(t *testing.T) {
	e := mustEnv(t, shortReverseWindow)
	e.seed("conv/late", 10)
	pages := e.captureImports("eu", "reactions")
	e.startWorker(e.config())
	e.migrateDone("conv/late", "eu")
	e.afterReverseWindow("conv/late") // a physical delete: the hardest case for a late import
	got := pages()
	if len(got) == 0 {
		t.Fatal("no reactions page was imported")
	}
	eu := e.stores["eu"]["reactions"]
	victim := got[0].Page.Records[0].ID
	if res, err := eu.Delete("conv/late", victim); err != nil || res.Tombstoned {
		t.Fatalf("delete at the new primary: %+v %v (want a physical delete)", res, err)
	}
	for _, r := range got {
		_, err := e.participant("eu", "reactions").Import(context.Background(), r)
		if err == nil {
			t.Fatalf("a late import of page %d after the swap was accepted", r.Page.Cursor)
		}
		if c := contract.AsError(err).Code; c != contract.CodeConflict {
			t.Fatalf("late import: %v (code %s), want conflict", err, c)
		}
	}
	if _, err := eu.Get("conv/late", victim); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the deleted reaction is back after a late import: %v", err)
	}
}

// TestLateImportAfterRollbackLeavesNothing: an import of a rolled-back
// attempt that arrives after the rollback's cleanup must not leave data in
// a region the resource never moved to (a residency leak).
func TestLateImportAfterRollbackLeavesNothing(t *testing.T) {
	e := mustEnv(t)
	e.seed("conv/leak", 10)
	pages := e.captureImports("eu", "reactions")
	// Validation fails on every attempt: a record is lost at the target.
	f := e.wrap("eu", "messages")
	f.onImport = func(r *contract.ImportRequest) error {
		if r.Page != nil && len(r.Page.Records) > 0 {
			pg := *r.Page
			pg.Records = pg.Records[1:]
			r.Page = &pg
		}
		return nil
	}
	cfg := e.config()
	cfg.MaxAttempts = 1
	e.startWorker(cfg)
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/leak", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	if st := e.waitDone(id, 30*time.Second); st.Status != events.StatusFailed {
		t.Fatalf("status %s: %s", st.Status, st.Reason)
	}
	eu := e.stores["eu"]["reactions"]
	for _, r := range pages() {
		if _, err := e.participant("eu", "reactions").Import(context.Background(), r); err == nil {
			t.Fatal("a late import after the rollback was accepted")
		}
	}
	if live, tomb := mustCount(t, eu, "conv/leak"); live+tomb != 0 {
		t.Fatalf("%d live and %d tombstones left at the target after a late import", live, tomb)
	}
}

func mustCount(tb testing.TB, s *store.Store, res string) (live, tombstones int) {
	tb.Helper()
	live, tombstones, err := s.Count(res)
	if err != nil {
		tb.Fatal(err)
	}
	return live, tombstones
}

// TestValidateRefusesAckWaitBelowStepTimeout: a step may run for the step
// timeout without telling the consumer, so a shorter ack wait would hand a
// migration to a second worker mid-step (issue 14 #1).
func TestValidateRefusesAckWaitBelowStepTimeout(t *testing.T) {
	e := mustEnv(t)
	cfg := e.config()
	cfg.AckWait, cfg.StepTimeout = 3*time.Second, 5*time.Second
	cfg.EnsureDefaults()
	if err := cfg.Validate(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Validate = %v, want ErrInvalid", err)
	}
	cfg.AckWait = 5 * time.Second
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate with equal ack wait and step timeout: %v", err)
	}
}

// TestASecondDriversResetRemovesNothing: two drivers of one migration (a
// nudge's work message beside the one in flight, a redelivery) take the
// same historical step at the same routing revision; only one step's event
// is recorded, but both send their pages, the first with the reset. A
// reset that lands between the other driver's pages must remove nothing
// (the target already holds its stamp: every record there was imported
// under it), or the recorded pages are gone at the target and the attempt
// fails its validation.
func TestASecondDriversResetRemovesNothing(t *testing.T) {
	e := mustEnv(t)
	e.seed("conv/dup", 30)
	f := e.wrap("eu", "messages")
	var (
		mu       sync.Mutex
		reset    *contract.ImportRequest
		replayed bool
	)
	f.onImport = func(r *contract.ImportRequest) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Reset && reset == nil:
			c := *r
			reset = &c
		case !r.Reset && reset != nil && !replayed && r.Page != nil && r.Page.Cursor >= 15:
			// The second driver's reset lands now, after this driver's
			// pages up to 10 at least (one import in flight at most), at
			// the revision they carry.
			replayed = true
			if _, err := e.participant("eu", "messages").Import(context.Background(), *reset); err != nil {
				return err
			}
		}
		return nil
	}
	cfg := e.config()
	cfg.PageLimit = 5
	e.startWorker(cfg)
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/dup", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	st := e.waitDone(id, 30*time.Second)
	if !replayed {
		t.Fatal("no reset was replayed between pages")
	}
	if st.Status != events.StatusCompleted || st.Attempt != 1 {
		t.Fatalf("%s in attempt %d (%s)", st.Status, st.Attempt, st.Reason)
	}
	e.assertMigrated("conv/dup")
}

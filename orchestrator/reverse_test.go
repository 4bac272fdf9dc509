package orchestrator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// shortReverseWindow is a lock configuration whose reverse window (the
// secondary lease) ends soon after the swap.
func shortReverseWindow(lc *kvrouting.LockConfig) { lc.SecondaryLease = 300 * time.Millisecond }

// afterReverseWindow waits until res's reverse window has ended for every
// store (its end plus the clock skew): deletes at the primary are physical
// again.
func (e *env) afterReverseWindow(res string) {
	e.t.Helper()
	_, until, ok := e.doc(res).ReverseWindow()
	if !ok {
		e.t.Fatalf("%s: no reverse window", res)
	}
	time.Sleep(time.Until(until.Add(testLockConfig().ClockSkew + 10*time.Millisecond))) // a deadline, not a race
}

// changeAtNewPrimary edits, deletes and adds records of res at eu (the
// primary after a move there), as users would after the swap; it returns
// how many records changed per service.
func (e *env) changeAtNewPrimary(res string) map[string]int {
	e.t.Helper()
	eu := e.stores["eu"]
	old, err := eu["messages"].Get(res, "messages-1")
	if err != nil {
		e.t.Fatal(err)
	}
	old.Data = []byte("edited at eu")
	if _, err := eu["messages"].Put(res, old, false); err != nil {
		e.t.Fatalf("edit at eu: %v", err)
	}
	if _, err := eu["messages"].Put(res, store.Record{ID: "posted-at-eu", Kind: "msg", Data: []byte("new at eu")}, true); err != nil {
		e.t.Fatalf("post at eu: %v", err)
	}
	for _, svc := range testServices {
		r, err := eu[svc].Delete(res, svc+"-2")
		if err != nil {
			e.t.Fatalf("delete at eu: %v", err)
		}
		if !r.Tombstoned {
			e.t.Fatalf("%s: a delete at the new primary within the reverse window was physical", svc)
		}
	}
	return map[string]int{"messages": 3, "reactions": 1}
}

// importedRecords counts the records in the import requests that reached
// region's stores, per service, from the moment it is called.
func (e *env) importedRecords(region string) func() map[string]int {
	got := map[string]func() []contract.ImportRequest{}
	for _, svc := range testServices {
		got[svc] = e.captureImports(region, svc)
	}
	return func() map[string]int {
		n := map[string]int{}
		for svc, f := range got {
			for _, r := range f() {
				n[svc] += len(r.Page.Records)
			}
		}
		return n
	}
}

// moveBack moves res to us, fails the test unless it completes, and
// returns its final state and the records imported at us per service.
func (e *env) moveBack(res string) (*events.State, map[string]int) {
	e.t.Helper()
	imported := e.importedRecords("us")
	id := e.migrateDone(res, "us")
	st, _, err := Load(context.Background(), e.nc, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return st, imported()
}

// assertSameData checks that us and eu hold the same live records of res
// (digests: every record's content) and that deleted ids are gone at us.
func (e *env) assertSameData(res string, deleted ...string) {
	e.t.Helper()
	e.assertSameDigests(res)
	for _, svc := range testServices {
		for _, id := range deleted {
			if _, err := e.stores["us"][svc].Get(res, id); !errors.Is(err, store.ErrNotFound) {
				e.t.Fatalf("%s %s: %s deleted at eu is readable at us (%v)", res, svc, id, err)
			}
		}
	}
}

// TestMoveBackCopiesOnlyTheChanges: us → eu, then users edit, post and
// delete at eu, then eu → us within the reverse window. The move back
// imports only the records changed at eu since the swap (the first page,
// which issues the sync token, may carry one more per service) — not the
// whole history — and us ends up equal to eu: the edit, the new record,
// and the deletes (tombstones beat us's older live copies).
func TestMoveBackCopiesOnlyTheChanges(t *testing.T) {
	e := mustEnv(t)
	e.startWorker(e.config())
	const res, n = "conv/reverse", 60
	e.seed(res, n)
	e.migrateDone(res, "eu")
	changed := e.changeAtNewPrimary(res)
	st, got := e.moveBack(res)
	for _, svc := range testServices {
		p := st.Service(svc)
		if p == nil || p.Since == 0 {
			t.Fatalf("%s: the move back within the reverse window copied in full (%+v)", svc, p)
		}
		if got[svc] > changed[svc]+1 || p.Records > changed[svc]+1 {
			t.Errorf("%s: the move back imported %d records (%d recorded), want at most %d (the %d changed at eu and the token's page)",
				svc, got[svc], p.Records, changed[svc]+1, changed[svc])
		}
	}
	e.assertSameData(res, "messages-2", "reactions-2")
	if r, err := e.stores["us"]["messages"].Get(res, "messages-1"); err != nil || string(r.Data) != "edited at eu" {
		t.Fatalf("the edit made at eu, at us: %q %v", r.Data, err)
	}
}

// TestMoveBackAfterTheCleanupCopiesEverything: once the source cleanup of
// us → eu has run, us holds nothing: the move back copies the whole
// history (the old copy's digests do not match), and the data is equal.
func TestMoveBackAfterTheCleanupCopiesEverything(t *testing.T) {
	e := mustEnv(t)
	cfg := e.config()
	cfg.CleanupWindow = 500 * time.Millisecond
	e.startWorker(cfg)
	const res, n = "conv/reverse-cleaned", 30
	e.seed(res, n)
	id1 := e.migrateDone(res, "eu")
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _, err := Load(context.Background(), e.nc, id1)
		if err == nil && st.SourceCleaned {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the source cleanup never ran")
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.changeAtNewPrimary(res)
	st, got := e.moveBack(res)
	for _, svc := range testServices {
		if p := st.Service(svc); p == nil || p.Since != 0 {
			t.Fatalf("%s: an incremental copy into a cleaned old location (%+v)", svc, p)
		}
		if got[svc] < n-1 {
			t.Errorf("%s: the full copy back imported %d records, want the whole history (≥ %d live)", svc, got[svc], n-1)
		}
	}
	e.assertSameData(res, "messages-2", "reactions-2")
}

// TestMoveBackWrongIncrementalCopyIsCaught: a delete at the new primary
// that left no tombstone (a participant that broke the reverse window's
// rule: here its authority record forced back to a physical-delete
// primary) is invisible to the incremental copy; the record is still live
// in the old copy, so the counts of its slice differ and validation fails
// (paper 001 §4.6 "Runtime checking"); the rollback is followed by a full
// copy, which is correct.
func TestMoveBackWrongIncrementalCopyIsCaught(t *testing.T) {
	e := mustEnv(t)
	cfg := e.config()
	cfg.MaxAttempts = 3
	e.startWorker(cfg)
	const res = "conv/reverse-broken"
	e.seed(res, 20)
	e.migrateDone(res, "eu")
	eu := e.stores["eu"]["messages"]
	held, err := eu.Authority(res)
	if err != nil {
		t.Fatal(err)
	}
	physical := contract.Authority{Rev: held.Rev, Role: contract.RolePrimary}
	if _, err := eu.Repair(res, physical); err != nil {
		t.Fatal(err)
	}
	if r, err := eu.Delete(res, "messages-3"); err != nil || r.Tombstoned {
		t.Fatalf("the broken participant's delete: %+v %v (want physical)", r, err)
	}
	if _, err := eu.Repair(res, held); err != nil {
		t.Fatal(err)
	}
	id2, err := e.client.Start(context.Background(), events.Start{Resource: res, Target: "us"})
	if err != nil {
		t.Fatal(err)
	}
	st := e.waitDone(id2, 60*time.Second)
	if st.Status != events.StatusCompleted {
		t.Fatalf("move back: %s %s", st.Status, st.Reason)
	}
	failed := false
	for _, env := range e.history(id2) {
		if v, ok := env.Body.(events.Validated); ok && !v.OK {
			failed = true
		}
	}
	if !failed || st.Attempt < 2 {
		t.Fatalf("the wrong incremental copy was not caught by validation (attempt %d)", st.Attempt)
	}
	for _, svc := range testServices {
		if p := st.Service(svc); p == nil || p.Since != 0 {
			t.Fatalf("%s: the attempt after the rollback copied incrementally (%+v)", svc, p)
		}
	}
	e.assertSameData(res, "messages-3")
}

// TestFullCopyBackConfig: with the reverse window off, a move back copies
// in full (the bench's baseline).
func TestFullCopyBackConfig(t *testing.T) {
	e := mustEnv(t)
	cfg := e.config()
	cfg.FullCopyBack = true
	e.startWorker(cfg)
	const res = "conv/reverse-off"
	e.seed(res, 20)
	e.migrateDone(res, "eu")
	e.changeAtNewPrimary(res)
	st, _ := e.moveBack(res)
	for _, svc := range testServices {
		if p := st.Service(svc); p == nil || p.Since != 0 || p.Records < 19 {
			t.Fatalf("%s: %+v, want a full copy", svc, p)
		}
	}
	e.assertSameData(res, "messages-2", "reactions-2")
}

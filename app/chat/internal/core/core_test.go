package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

const res = "conv/c1"

func newCore(t *testing.T) *Core {
	t.Helper()
	st, err := store.Open(store.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return New("svc", st, nil, services.StoreParticipantOptions{})
}

var (
	allow     = kvrouting.Decision{Outcome: kvrouting.Allow}
	tombstone = kvrouting.Decision{Outcome: kvrouting.Tombstone, Reason: kvrouting.ReasonHardDelete}
	reject    = kvrouting.Decision{Outcome: kvrouting.Reject, Reason: kvrouting.ReasonWriteLock, RetryAfter: 1500 * time.Millisecond, RetryHint: 700 * time.Millisecond}
)

func code(err error) contract.Code {
	if err == nil {
		return ""
	}
	return services.ToError(err).Code
}

func mustCreate(t *testing.T, c *Core, id string) store.Record {
	t.Helper()
	r, err := c.Create(context.Background(), allow, res, store.Record{ID: id, Kind: "k", Data: []byte("data " + id), Refs: []string{"media/x"}})
	if err != nil {
		t.Fatalf("Create %s: %v", id, err)
	}
	return r
}

// stored returns the record as the change index holds it (tombstones too).
func stored(t *testing.T, c *Core, id string) (store.Record, bool) {
	t.Helper()
	recs, _, _, err := c.st.Changes(res, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.ID == id {
			return r, true
		}
	}
	return store.Record{}, false
}

func TestReject(t *testing.T) {
	c := newCore(t)
	ctx := context.Background()
	mustCreate(t, c, "a")
	tok, _ := c.st.SyncToken(res)
	checks := map[string]error{}
	_, checks["create"] = c.Create(ctx, reject, res, store.Record{ID: "b", Kind: "k", Data: []byte("x")})
	_, checks["update"] = c.Update(ctx, reject, kvrouting.OpUpdate, res, store.Record{ID: "a", Kind: "k", Data: []byte("y")})
	_, checks["upsert"] = c.Upsert(ctx, reject, res, store.Record{ID: "a", Kind: "k", Data: []byte("y")})
	_, checks["delete"] = c.Delete(ctx, reject, res, "a")
	_, checks["delete-keep-id"] = c.DeleteKeepID(ctx, reject, res, "a")
	for name, err := range checks {
		e := services.ToError(err)
		if e == nil || e.Code != contract.CodeLocked || e.RetryAfter != 700*time.Millisecond || e.Lock != kvrouting.ReasonWriteLock {
			t.Errorf("%s under Reject: %+v, want locked with the decision's hint as Retry-After", name, e)
		}
	}
	if now, _ := c.st.SyncToken(res); now != tok {
		t.Fatalf("rejected operations changed the store (sequence %d -> %d)", tok, now)
	}
	// At a region that is not the primary the resource has moved: retry
	// at once, after resolving it again (issue 15 #6).
	moved := kvrouting.Decision{Outcome: kvrouting.Reject, Reason: kvrouting.ReasonNotAuthoritative, Primary: "b", RetryAfter: time.Second}
	if e := LockedError(moved); e.RetryAfter != 0 || !strings.Contains(e.Message, "region b") {
		t.Fatalf("not authoritative: %+v, want Retry-After 0 naming the primary", e)
	}
	_, err := c.Create(ctx, tombstone, res, store.Record{ID: "b", Kind: "k"})
	if code(err) != contract.CodeInternal {
		t.Fatalf("create under a Tombstone decision: %v", err)
	}
}

// TestTombstoneWithoutFence: the routing decision alone turns a delete into
// a tombstone (paper 001 §4.3) although the store has no fence.
func TestTombstoneWithoutFence(t *testing.T) {
	c := newCore(t)
	ctx := context.Background()
	old := mustCreate(t, c, "a")
	r, err := c.Delete(ctx, tombstone, res, "a")
	if err != nil || !r.Tombstoned {
		t.Fatalf("Delete under Tombstone: %+v, %v", r, err)
	}
	ts, ok := stored(t, c, "a")
	if !ok || !ts.Deleted || ts.Data != nil || ts.Refs != nil || ts.Version != old.Version+1 || ts.CreatedAt != old.CreatedAt || ts.Seq <= old.Seq {
		t.Fatalf("stored %+v, want a stripped tombstone at version %d with a new sequence", ts, old.Version+1)
	}
	if _, err := c.Get(ctx, res, "a"); code(err) != contract.CodeNotFound {
		t.Fatalf("Get after the tombstone: %v", err)
	}
	if _, err := c.Create(ctx, allow, res, store.Record{ID: "a", Kind: "k"}); !errors.Is(err, store.ErrDeleted) {
		t.Fatalf("Create of a tombstoned id: %v", err)
	}
	if _, err := c.Delete(ctx, tombstone, res, "a"); code(err) != contract.CodeNotFound {
		t.Fatalf("second delete: %v", err)
	}
	// Allow without a fence deletes physically; DeleteKeepID keeps the id.
	mustCreate(t, c, "b")
	if r, err := c.Delete(ctx, allow, res, "b"); err != nil || r.Tombstoned {
		t.Fatalf("Delete under Allow: %+v, %v", r, err)
	}
	if _, ok := stored(t, c, "b"); ok {
		t.Fatal("physical delete left a record")
	}
	mustCreate(t, c, "c")
	if r, err := c.DeleteKeepID(ctx, allow, res, "c"); err != nil || r.Tombstoned {
		t.Fatalf("DeleteKeepID under Allow: %+v, %v", r, err)
	}
	if ts, ok := stored(t, c, "c"); !ok || !ts.Deleted {
		t.Fatalf("DeleteKeepID left %+v", ts)
	}
}

// TestTombstoneFences: the store's authority still rules the decision
// path: the write fence refuses, tombstone deletes are reported.
func TestTombstoneFences(t *testing.T) {
	c := newCore(t)
	ctx := context.Background()
	p := c.Participant()
	mustCreate(t, c, "a")
	mustCreate(t, c, "b")
	if _, err := p.Authorize(ctx, res, contract.Authority{Rev: 1, Deletes: contract.DeletesTombstone, Until: contract.UntilOf(time.Now().Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	if r, err := c.DeleteKeepID(ctx, allow, res, "a"); err != nil || !r.Tombstoned {
		t.Fatalf("DeleteKeepID under a hard-delete fence: %+v, %v", r, err)
	}
	if _, err := p.Authorize(ctx, res, contract.Authority{Rev: 2, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []kvrouting.Decision{allow, tombstone} {
		_, err := c.Delete(ctx, d, res, "b")
		e := services.ToError(err)
		if e == nil || e.Code != contract.CodeLocked || e.RetryAfter <= 0 || e.RetryAfter > contract.MaxRetryAfter || e.Lock != contract.LockWriteFence || strings.Contains(e.Message, "store:") {
			t.Fatalf("delete (%s) under a write fence: %+v", d.Outcome, e)
		}
		if _, err := c.DeleteKeepID(ctx, d, res, "b"); code(err) != contract.CodeLocked {
			t.Fatalf("DeleteKeepID (%s) under a write fence: %v", d.Outcome, err)
		}
	}
	if _, err := c.Get(ctx, res, "b"); err != nil {
		t.Fatalf("b after refused deletes: %v", err)
	}
}

// TestTombstoneRacesWriteFence: once the write fence is installed, no
// decision-path tombstone commits any more, so the delta export that the
// orchestrator starts next sees every tombstone that was acknowledged.
func TestTombstoneRacesWriteFence(t *testing.T) {
	for round := range 20 {
		c := newCore(t)
		ctx := context.Background()
		const n = 40
		for i := range n {
			mustCreate(t, c, fmt.Sprint("r", i))
		}
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			acked    []string
			fenceSeq uint64
		)
		for w := range 4 {
			wg.Go(func() {
				for i := w; i < n; i += 4 {
					id := fmt.Sprint("r", i)
					if _, err := c.Delete(ctx, tombstone, res, id); err == nil {
						mu.Lock()
						acked = append(acked, id)
						mu.Unlock()
					} else if code(err) != contract.CodeLocked {
						t.Errorf("delete %s: %v", id, err)
					}
				}
			})
		}
		wg.Go(func() {
			time.Sleep(time.Duration(round%5) * 100 * time.Microsecond)
			if _, err := c.Participant().Authorize(ctx, res, contract.Authority{Rev: 1, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}); err != nil {
				t.Errorf("Authorize: %v", err)
			}
			seq, _ := c.st.SyncToken(res)
			mu.Lock()
			fenceSeq = seq
			mu.Unlock()
		})
		wg.Wait()
		if seq, _ := c.st.SyncToken(res); seq != fenceSeq {
			t.Fatalf("round %d: %d changes committed after the write fence", round, seq-fenceSeq)
		}
		for _, id := range acked {
			if r, ok := stored(t, c, id); !ok || !r.Deleted {
				t.Fatalf("round %d: acknowledged delete of %s not a tombstone: %+v", round, id, r)
			}
		}
	}
}

// TestTombstoneRacesUpdates: a tombstone written while updates run is
// never overtaken by a live version.
func TestTombstoneRacesUpdates(t *testing.T) {
	c := newCore(t)
	ctx := context.Background()
	mustCreate(t, c, "a")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = c.Update(ctx, allow, kvrouting.OpUpdate, res, store.Record{ID: "a", Kind: "k", Data: []byte(fmt.Sprint(i))})
			}
		})
	}
	time.Sleep(5 * time.Millisecond)
	_, err := c.Delete(ctx, tombstone, res, "a")
	close(stop)
	wg.Wait()
	if err != nil && code(err) != contract.CodeConflict {
		t.Fatalf("delete: %v", err)
	}
	if err == nil {
		if r, ok := stored(t, c, "a"); !ok || !r.Deleted {
			t.Fatalf("after an acknowledged delete: %+v", r)
		}
	}
}

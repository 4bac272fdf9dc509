package kvrouting

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestRegister(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	res := mustRegister(t, e, "r1", "us-east")
	d, err := e.lk.Register(ctx, res, "eu-west")
	if !errors.Is(err, ErrExists) || d.Primary.Region != "us-east" {
		t.Fatalf("second register: %v %+v", err, d)
	}
	for _, bad := range []Resource{{Kind: "", ID: "x"}, {Kind: "Conv", ID: "x"}, {Kind: "conv", ID: ""}, {Kind: "conv", ID: "a\x00b"}} {
		if _, err := e.lk.Register(ctx, bad, "us-east"); !errors.Is(err, ErrInvalid) {
			t.Errorf("register %q: got %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := e.lk.Register(ctx, Resource{Kind: "conv", ID: "ok"}, "US EAST"); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad region: %v", err)
	}
}

// TestLifecycle walks pre-lock → hard-delete → write → swap and checks each
// document and each refusal on the way (paper 000 §4).
func TestLifecycle(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	res := mustRegister(t, e, "life", "us-east")

	if _, err := e.lk.PreLock(ctx, res, "us-east", "m0"); !errors.Is(err, ErrAtTarget) {
		t.Fatalf("pre-lock to own region: %v", err)
	}
	g, err := e.lk.PreLock(ctx, res, "eu-west", "m1")
	if err != nil {
		t.Fatal(err)
	}
	d := g.Doc
	if d.Primary.Lock.Type != LockPre || d.Secondary == nil || d.Secondary.Region != "eu-west" || d.Secondary.Lock.Type != LockSecondary {
		t.Fatalf("pre-lock doc: %+v", d)
	}
	if want := e.clock.Now().Add(30 * time.Second); !g.NotBefore.Equal(want) {
		t.Fatalf("not-before %v, want now+convergence %v", g.NotBefore, want)
	}
	if len(g.Token) != 32 {
		t.Fatalf("token %d hex digits, want 32 (128 bits)", len(g.Token))
	}
	// A second migration is refused while the pre-lock is unexpired.
	if _, err := e.lk.PreLock(ctx, res, "eu-west", "m2"); !errors.Is(err, ErrLocked) {
		t.Fatalf("second pre-lock: %v", err)
	}
	// Escalation needs the convergence delay to have passed.
	if _, err := e.lk.EscalateHardDelete(ctx, res, g.Token, d); !errors.Is(err, ErrNotConverged) {
		t.Fatalf("early escalate: %v", err)
	}
	// ... and the token.
	e.clock.Advance(32 * time.Second)
	if _, err := e.lk.EscalateHardDelete(ctx, res, NewToken(), nil); !errors.Is(err, ErrTokenMismatch) {
		t.Fatalf("escalate with wrong token: %v", err)
	}
	// Write lock needs the hard-delete lock first; swap needs the write lock.
	if _, err := e.lk.EscalateWrite(ctx, res, g.Token, nil); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("pre → write: %v", err)
	}
	if _, err := e.lk.Swap(ctx, res, g.Token, nil); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("pre → swap: %v", err)
	}
	d, err = e.lk.EscalateHardDelete(ctx, res, g.Token, d)
	if err != nil || d.Primary.Lock.Type != LockHardDelete {
		t.Fatalf("escalate hd: %v %+v", err, d)
	}
	// Idempotent replay.
	if d2, err := e.lk.EscalateHardDelete(ctx, res, g.Token, nil); err != nil || d2.Revision != d.Revision {
		t.Fatalf("replayed escalate: %v rev %d vs %d", err, d2.Revision, d.Revision)
	}
	if _, err := e.lk.Swap(ctx, res, g.Token, d); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("hd → swap: %v", err)
	}
	d, err = e.lk.EscalateWrite(ctx, res, g.Token, d)
	if err != nil || d.Primary.Lock.Type != LockWrite {
		t.Fatalf("escalate write: %v", err)
	}
	if !d.Primary.Lock.Expiry.Equal(e.clock.Now().Add(time.Minute)) {
		t.Fatalf("write expiry %v", d.Primary.Lock.Expiry)
	}
	if _, err := e.lk.Renew(ctx, res, g.Token, d); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("renew write lock: %v", err)
	}
	if _, err := e.lk.EscalateHardDelete(ctx, res, g.Token, d); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("write → hd: %v", err)
	}
	d, err = e.lk.Swap(ctx, res, g.Token, d)
	if err != nil {
		t.Fatal(err)
	}
	if d.Primary.Region != "eu-west" || !d.Primary.Lock.IsZero() || d.Secondary.Region != "us-east" || d.Secondary.Lock.Type != LockSecondary || d.MigrationID != "" || d.LastMigrationID != "m1" {
		t.Fatalf("swapped doc: %+v / %+v", d.Primary, d.Secondary)
	}
	// Replaying the swap is recognised, not repeated; release after swap is refused.
	if d2, err := e.lk.Swap(ctx, res, g.Token, nil); err != nil || d2.Revision != d.Revision {
		t.Fatalf("replayed swap: %v", err)
	}
	if _, err := e.lk.Release(ctx, res, g.Token, nil); !errors.Is(err, ErrIllegalTransition) {
		t.Fatalf("release after swap: %v", err)
	}
	// The resource can migrate again (back), the old secondary is replaced.
	g2, err := e.lk.PreLock(ctx, res, "us-east", "m3")
	if err != nil || g2.Doc.Secondary.Region != "us-east" || g2.Doc.Secondary.Lock.Token != g2.Token {
		t.Fatalf("pre-lock back: %v", err)
	}
}

// TestRenewBounded: the hard-delete lock renews the pre-lock with it, up to
// the max lease and no further.
func TestRenewBounded(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	res := mustRegister(t, e, "renew", "us-east")
	g, err := e.lk.PreLock(ctx, res, "eu-west", "m1")
	if err != nil {
		t.Fatal(err)
	}
	maxExp := g.Doc.MaxExpiry
	e.clock.Advance(31 * time.Second)
	d, err := e.lk.EscalateHardDelete(ctx, res, g.Token, g.Doc)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		e.clock.Advance(8 * time.Minute)
		nd, err := e.lk.Renew(ctx, res, g.Token, d)
		if errors.Is(err, ErrExpired) {
			break
		}
		if err != nil {
			t.Fatalf("renew %d: %v", i, err)
		}
		d = nd
		if d.Primary.Lock.Expiry.After(d.PreLockExpiry) {
			t.Fatalf("hard-delete lock outlives the pre-lock: %v > %v", d.Primary.Lock.Expiry, d.PreLockExpiry)
		}
		if d.PreLockExpiry.After(maxExp) {
			t.Fatalf("renewed past the max: %v > %v", d.PreLockExpiry, maxExp)
		}
	}
	if !d.Primary.Lock.Expiry.Equal(maxExp) {
		t.Fatalf("renewals should end capped at the max %v, got %v", maxExp, d.Primary.Lock.Expiry)
	}
	e.clock.Advance(4 * time.Hour)
	if _, err := e.lk.Renew(ctx, res, g.Token, d); !errors.Is(err, ErrExpired) {
		t.Fatalf("renew past max: %v", err)
	}
}

// TestConcurrentPreLock: 50 concurrent PreLock calls on one resource give
// exactly one token; the rest get ErrLocked or ErrConflict. Repeated over
// many resources.
func TestConcurrentPreLock(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	const resources, callers = 12, 50
	for r := 0; r < resources; r++ {
		res := mustRegister(t, e, resN(r), "us-east")
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []Token
		start := make(chan struct{})
		for c := 0; c < callers; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				g, err := e.lk.PreLock(ctx, res, "eu-west", "m")
				switch {
				case err == nil:
					mu.Lock()
					winners = append(winners, g.Token)
					mu.Unlock()
				case errors.Is(err, ErrLocked), errors.Is(err, ErrConflict):
				default:
					t.Errorf("unexpected error: %v", err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("resource %s: %d winners, want exactly 1", res, len(winners))
		}
		if d := mustGet(t, e, res); d.Primary.Lock.Token != winners[0] {
			t.Fatalf("stored token is not the winner's")
		}
	}
}

// TestStaleHolder: after the lease expires a new migration pre-locks; every
// call with the old token fails and changes nothing (paper 000 Table 2,
// "Lease expiry before completion").
func TestStaleHolder(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	res := mustRegister(t, e, "stale", "us-east")
	old, err := e.lk.PreLock(ctx, res, "eu-west", "m-old")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(31 * time.Second)
	oldDoc, err := e.lk.EscalateHardDelete(ctx, res, old.Token, old.Doc)
	if err != nil {
		t.Fatal(err)
	}
	oldDoc, err = e.lk.EscalateWrite(ctx, res, old.Token, oldDoc)
	if err != nil {
		t.Fatal(err)
	}
	// The holder pauses past its write lock's expiry (and the skew).
	e.clock.Advance(62 * time.Second)
	if _, err := e.lk.Swap(ctx, res, old.Token, oldDoc); !errors.Is(err, ErrExpired) {
		t.Fatalf("swap with an expired write lock: %v", err)
	}
	// The expired write lock is still recorded, but expired beyond the skew
	// it no longer excludes: a fresh migration gets in.
	nw, err := e.lk.PreLock(ctx, res, "ap-south", "m-new")
	if err != nil {
		t.Fatalf("new pre-lock after expiry: %v", err)
	}
	before := mustGet(t, e, res)
	for name, op := range map[string]func() error{
		"escalate-hd": func() error { _, err := e.lk.EscalateHardDelete(ctx, res, old.Token, oldDoc); return err },
		"escalate-w":  func() error { _, err := e.lk.EscalateWrite(ctx, res, old.Token, oldDoc); return err },
		"renew":       func() error { _, err := e.lk.Renew(ctx, res, old.Token, oldDoc); return err },
		"swap":        func() error { _, err := e.lk.Swap(ctx, res, old.Token, oldDoc); return err },
		"release":     func() error { _, err := e.lk.Release(ctx, res, old.Token, oldDoc); return err },
	} {
		if err := op(); !errors.Is(err, ErrTokenMismatch) {
			t.Errorf("%s with the stale token: %v, want ErrTokenMismatch", name, err)
		}
	}
	after := mustGet(t, e, res)
	if after.Revision != before.Revision || after.Primary.Lock.Token != nw.Token {
		t.Fatalf("stale holder changed the document: rev %d → %d", before.Revision, after.Revision)
	}
}

// TestReleaseRollback: release returns to the unlocked source with the
// target forgotten; a foreign token cannot release.
func TestReleaseRollback(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	res := mustRegister(t, e, "rb", "us-east")
	g, err := e.lk.PreLock(ctx, res, "eu-west", "m1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.lk.Release(ctx, res, NewToken(), nil); !errors.Is(err, ErrTokenMismatch) {
		t.Fatalf("foreign release: %v", err)
	}
	d, err := e.lk.Release(ctx, res, g.Token, g.Doc)
	if err != nil {
		t.Fatal(err)
	}
	if d.Primary.Region != "us-east" || !d.Primary.Lock.IsZero() || d.Secondary != nil || d.Target != "" || d.LastMigrationID != "m1" {
		t.Fatalf("released doc %+v", d)
	}
	// Replay is a no-op.
	if d2, err := e.lk.Release(ctx, res, g.Token, nil); err != nil || d2.Revision != d.Revision {
		t.Fatalf("replayed release: %v", err)
	}
}

func TestForceRelease(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	res := mustRegister(t, e, "force", "us-east")
	if _, err := e.lk.PreLock(ctx, res, "eu-west", "m1"); err != nil {
		t.Fatal(err)
	}
	for _, approvers := range [][]string{nil, {"alice"}, {"alice", "Alice "}, {"alice", ""}} {
		if _, err := e.lk.ForceRelease(ctx, res, approvers); !errors.Is(err, ErrApprovals) {
			t.Fatalf("approvers %q: %v", approvers, err)
		}
	}
	if d := mustGet(t, e, res); d.Primary.Lock.Type != LockPre {
		t.Fatal("refused force-release changed the document")
	}
	d, err := e.lk.ForceRelease(ctx, res, []string{"alice", "bob"})
	if err != nil || !d.Primary.Lock.IsZero() || d.Secondary != nil {
		t.Fatalf("force-release: %v %+v", err, d)
	}
}

// TestHolderCache: with the holder's cached document a mutation costs no
// read (paper 000 §8); a stale cached document costs one re-read and still
// succeeds or fails correctly.
func TestHolderCache(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	res := mustRegister(t, e, "hc", "us-east")
	g, err := e.lk.PreLock(ctx, res, "eu-west", "m1")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(31 * time.Second)
	before := e.store.Stats()
	d, err := e.lk.EscalateHardDelete(ctx, res, g.Token, g.Doc)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute) // so the renewal extends something
	d, err = e.lk.Renew(ctx, res, g.Token, d)
	if err != nil {
		t.Fatal(err)
	}
	d, err = e.lk.EscalateWrite(ctx, res, g.Token, d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = e.lk.Swap(ctx, res, g.Token, d); err != nil {
		t.Fatal(err)
	}
	after := e.store.Stats()
	if reads := after.Reads() - before.Reads(); reads != 0 {
		t.Fatalf("4 mutations with the holder's document cost %d reads, want 0", reads)
	}
	// Without the cache each mutation reads first.
	res2 := mustRegister(t, e, "hc2", "us-east")
	g2, _ := e.lk.PreLock(ctx, res2, "eu-west", "m2")
	e.clock.Advance(31 * time.Second)
	before = e.store.Stats()
	if _, err := e.lk.EscalateHardDelete(ctx, res2, g2.Token, nil); err != nil {
		t.Fatal(err)
	}
	if reads := e.store.Stats().Reads() - before.Reads(); reads != 1 {
		t.Fatalf("uncached mutation cost %d reads, want 1", reads)
	}
	// A stale cached document (another write happened) is detected by the
	// revision, re-read once, and re-evaluated.
	stale := g2.Doc
	before = e.store.Stats()
	d3, err := e.lk.EscalateWrite(ctx, res2, g2.Token, stale)
	if err != nil || d3.Primary.Lock.Type != LockWrite {
		t.Fatalf("escalate with stale cache: %v", err)
	}
	if st := e.store.Stats(); st.Reads()-before.Reads() != 1 {
		t.Fatalf("stale cache: %d reads, want 1", st.Reads()-before.Reads())
	}
	// A cached document whose revision moved under it: the write is refused
	// (412), re-read, re-evaluated.
	cur := mustGet(t, e, res2)
	e.clock.Advance(time.Second)
	res3 := mustRegister(t, e, "hc3", "us-east")
	g3, _ := e.lk.PreLock(ctx, res3, "eu-west", "m3")
	e.clock.Advance(time.Minute)
	if _, err := e.lk.Renew(ctx, res3, g3.Token, nil); err != nil { // moves the revision
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	before = e.store.Stats()
	if _, err := e.lk.Renew(ctx, res3, g3.Token, g3.Doc); err != nil {
		t.Fatalf("renew with stale cache: %v", err)
	}
	if st := e.store.Stats(); st.Conflicts-before.Conflicts != 1 || st.Reads()-before.Reads() != 1 {
		t.Fatalf("revision conflict: conflicts %d reads %d, want 1 and 1", st.Conflicts-before.Conflicts, st.Reads()-before.Reads())
	}
	_ = cur
}

// TestVerify: the holder's check before each migration call costs no read
// with its cached document and one leader read without; an expired lock or
// another token is refused either way.
func TestVerify(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	res := mustRegister(t, e, "vf", "us-east")
	g, err := e.lk.PreLock(ctx, res, "eu-west", "m1")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(31 * time.Second)
	d, err := e.lk.EscalateHardDelete(ctx, res, g.Token, g.Doc)
	if err != nil {
		t.Fatal(err)
	}
	before := e.store.Stats()
	for range 10 {
		if _, err := e.lk.Verify(ctx, res, g.Token, d); err != nil {
			t.Fatal(err)
		}
	}
	if reads := e.store.Stats().Reads() - before.Reads(); reads != 0 {
		t.Fatalf("10 checks with the holder's document cost %d reads, want 0", reads)
	}
	before = e.store.Stats()
	got, err := e.lk.Verify(ctx, res, g.Token, nil)
	if err != nil || got.Revision != d.Revision {
		t.Fatalf("uncached check: %v (revision %d, want %d)", err, got.Revision, d.Revision)
	}
	if reads := e.store.Stats().Reads() - before.Reads(); reads != 1 {
		t.Fatalf("uncached check cost %d reads, want 1", reads)
	}
	if _, err := e.lk.Verify(ctx, res, "not-the-token", nil); !errors.Is(err, ErrTokenMismatch) {
		t.Fatalf("another token: %v, want ErrTokenMismatch", err)
	}
	if _, err := e.lk.Verify(ctx, res, "not-the-token", d); !errors.Is(err, ErrTokenMismatch) {
		t.Fatalf("another token with a cached document: %v, want ErrTokenMismatch", err)
	}
	e.clock.Advance(time.Hour) // past the hard-delete lease
	if _, err := e.lk.Verify(ctx, res, g.Token, d); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired (cached): %v, want ErrExpired", err)
	}
	if _, err := e.lk.Verify(ctx, res, g.Token, nil); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired (read): %v, want ErrExpired", err)
	}
}

package check

import (
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/internal/workload"
	"github.com/cutover/cutover/kvrouting"
)

// TestServedWritesCoverEverySwap: a write accepted at a region is a
// dual-authority write unless that region was the primary at some instant
// of the write's call, by the committed routing history — after the first
// swap as after a later one, and from the swap's revision on (not from the
// engine's later Swapped event).
func TestServedWritesCoverEverySwap(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	rev := func(s float64, primary string) Revision {
		return Revision{Created: at(s), Doc: &kvrouting.Document{Primary: kvrouting.Location{Region: primary}}}
	}
	// us → eu at 10 s, eu → us at 20 s, us → eu at 30 s.
	hs := []Revision{rev(0, "us"), rev(5, "us"), rev(10, "eu"), rev(20, "us"), rev(25, "us"), rev(30, "eu")}
	w := func(region string, from, to float64) workload.Served {
		return workload.Served{Region: region, Start: at(from), End: at(to), What: "post"}
	}
	for _, tc := range []struct {
		name string
		w    workload.Served
		bad  bool
	}{
		{"at the primary", w("us", 1, 2), false},
		{"spanning the first swap, at the old primary", w("us", 9, 11), false},
		{"spanning the first swap, at the new primary", w("eu", 9, 11), false},
		{"at the old location just after the first swap", w("us", 10.5, 11), true},
		{"at the new location before the first swap", w("eu", 2, 3), true},
		{"at the old location after the move back", w("eu", 21, 22), true},
		{"at the primary after the move back", w("us", 21, 22), false},
		{"at the old location after the last swap", w("us", 31, 32), true},
		{"before the first revision, at its primary", w("us", -1, 0.5), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var inv Invariants
			servedWrites(&inv, "c", []workload.Served{tc.w}, hs)
			if got := inv.DualAuthorityWrites == 1; got != tc.bad {
				t.Fatalf("dual-authority %d, want bad=%v (samples %v)", inv.DualAuthorityWrites, tc.bad, inv.Samples)
			}
		})
	}
}

// TestUserFences: refusals of new messages are held to the write locks of
// the routing history. A refusal with no write lock in force is counted (a
// store fence that outlived its lock); within one lock the fence users met
// is measured without any cap, so a lock renewed past the lease shows, and
// fails the run.
func TestUserFences(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	doc := func(lt kvrouting.LockType, tok string, exp float64) *kvrouting.Document {
		d := &kvrouting.Document{Primary: kvrouting.Location{Region: "us"}}
		if lt != kvrouting.LockNone {
			d.Primary.Lock = kvrouting.Lock{Type: lt, Token: kvrouting.Token(tok), Expiry: at(exp)}
		}
		return d
	}
	rev := func(s float64, d *kvrouting.Document) Revision { return Revision{Created: at(s), Doc: d} }
	ref := func(from, to float64) workload.Refusal {
		return workload.Refusal{Interval: workload.Interval{Start: at(from), End: at(to), Why: `{"error":{"code":"locked","lock":"write lock"}}`}}
	}
	// A write lock 10 → 12 (expiry 13), released; another 20 → expired at 23
	// and taken again by the same token at 25 (a new span), released at 26.
	hs := []Revision{rev(0, doc(kvrouting.LockNone, "", 0)), rev(10, doc(kvrouting.LockWrite, "a", 13)), rev(12, doc(kvrouting.LockNone, "", 0)),
		rev(20, doc(kvrouting.LockWrite, "b", 23)), rev(25, doc(kvrouting.LockWrite, "b", 28)), rev(26, doc(kvrouting.LockNone, "", 0))}
	const skew = 100 * time.Millisecond

	var inv Invariants
	userFences(&inv, "c", []workload.Refusal{ref(10.1, 10.2), ref(11.5, 11.6), ref(20.5, 20.6), ref(22.9, 23.0), ref(25.2, 25.3)}, hs, skew)
	if inv.RefusalsWithoutLock != 0 || inv.MaxUserWriteFenceMs < 2299 || inv.MaxUserWriteFenceMs > 2301 {
		t.Fatalf("clean history: %+v", inv)
	}
	inv.WriteLockExpiryMs, inv.ClockSkewMs = 3000, 100
	if bad := inv.Failures(); len(bad) != 0 {
		t.Fatalf("clean history fails: %v", bad)
	}

	// Refused after the lock was released (a store fence outliving it), and
	// long after any lock.
	inv = Invariants{}
	userFences(&inv, "c", []workload.Refusal{ref(12.5, 12.6), ref(40, 40.1)}, hs, skew)
	if inv.RefusalsWithoutLock != 2 {
		t.Fatalf("refusals without a lock: %+v", inv)
	}
	// A redirect ("moved": the resource has left that region) is not a
	// fence.
	inv = Invariants{}
	moved := ref(40, 40.1)
	moved.Why = `{"error":{"code":"locked","lock":"moved"}}`
	userFences(&inv, "c", []workload.Refusal{moved}, hs, skew)
	if inv.RefusalsWithoutLock != 0 {
		t.Fatalf("a moved refusal counted: %+v", inv)
	}
	// Stale-API refusals are not held to the locks.
	inv = Invariants{}
	userFences(&inv, "c", []workload.Refusal{{Interval: workload.Interval{Start: at(40), End: at(40.1)}, API: 1}}, hs, skew)
	if inv.RefusalsWithoutLock != 0 {
		t.Fatalf("stale API refusal counted: %+v", inv)
	}

	// A lock renewed past the lease: users met a 5.8 s fence.
	renewed := []Revision{rev(0, doc(kvrouting.LockNone, "", 0)), rev(10, doc(kvrouting.LockWrite, "a", 13)),
		rev(12.5, doc(kvrouting.LockWrite, "a", 16)), rev(16, doc(kvrouting.LockNone, "", 0))}
	inv = Invariants{WriteLockExpiryMs: 3000, ClockSkewMs: 100}
	userFences(&inv, "c", []workload.Refusal{ref(10.1, 10.2), ref(14, 14.1), ref(15.9, 16)}, renewed, skew)
	if inv.RefusalsWithoutLock != 0 || inv.MaxUserWriteFenceMs < 5699 {
		t.Fatalf("renewed lock: %+v", inv)
	}
	if bad := inv.Failures(); len(bad) != 1 || !strings.Contains(bad[0], "met by users") {
		t.Fatalf("renewed lock: failures %v", bad)
	}
}

// TestListReadsAreFresh: a whole-conversation read shows every write
// acknowledged before it started (or a write that may have applied during
// it); a missing, outdated or resurrected message is a stale read.
func TestListReadsAreFresh(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	op := func(id, text string, del bool, s, e float64, acked bool) workload.TimedOp {
		return workload.TimedOp{ID: id, Text: text, Delete: del, Start: at(s), End: at(e), Acked: acked}
	}
	ops := []workload.TimedOp{
		op("a", "a1", false, 0, 1, true), op("a", "a2", false, 10, 11, true),
		op("b", "b1", false, 0, 1, true), op("b", "", true, 5, 6, true),
		op("c", "c1", false, 0, 1, true), op("c", "c?", false, 2, 3, false), // an edit of unknown outcome
		op("d", "d1", false, 20, 21, true), // after every read below
	}
	read := func(s, e float64, items map[string]string) workload.ListRead {
		return workload.ListRead{Start: at(s), End: at(e), Items: items}
	}
	for _, tc := range []struct {
		name  string
		r     workload.ListRead
		stale int
	}{
		{"fresh", read(12, 13, map[string]string{"a": "a2", "c": "c1"}), 0},
		{"fresh, the unknown edit applied", read(12, 13, map[string]string{"a": "a2", "c": "c?"}), 0},
		{"during an edit: either text", read(10.5, 10.6, map[string]string{"a": "a1", "c": "c1"}), 0},
		{"during a delete: either", read(5.5, 5.6, map[string]string{"a": "a1", "b": "b1", "c": "c1"}), 0},
		{"an acknowledged edit missed", read(12, 13, map[string]string{"a": "a1", "c": "c1"}), 1},
		{"an acknowledged post missing", read(12, 13, map[string]string{"c": "c1"}), 1},
		{"a deleted message shows again", read(12, 13, map[string]string{"a": "a2", "b": "b1", "c": "c1"}), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var inv Invariants
			listReads(&inv, "conv", ops, []workload.ListRead{tc.r})
			if inv.StaleReads != tc.stale {
				t.Fatalf("stale reads %d, want %d: %v", inv.StaleReads, tc.stale, inv.Samples)
			}
		})
	}
}

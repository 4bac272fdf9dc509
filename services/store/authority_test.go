package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/cutover/cutover/internal/testutil"
	"github.com/cutover/cutover/services/contract"
)

// TestAdmitTableThroughTheStore runs every row of the admission table
// (services/contract/testdata/admit.txt) through the store's own
// operations, on a store whose clock stands still: the verdict, the
// Retry-After, the authority held afterwards, and that a refusal writes
// nothing while an allowed operation does what it does.
func TestAdmitTableThroughTheStore(t *testing.T) {
	clock := testutil.NewClock()
	s := MustOpenMem(t, clock)
	cases, err := contract.AdmitCases(clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("line%d", c.Line), func(t *testing.T) {
			r := fmt.Sprintf("conv/admit-%d", c.Line)
			MustPut(t, s, r, rec("seed", "message", "seed"), true)
			if c.Record.Stamped() {
				if _, err := s.Repair(r, c.Record); err != nil {
					t.Fatalf("installing %s: %v", c.Record, err)
				}
			}
			var (
				err        error
				tombstoned bool
			)
			imported := Record{ID: "imported", Kind: "message", Version: 1, CreatedAt: 1, UpdatedAt: 1, Data: []byte("imported")}
			switch c.Op {
			case contract.OpRead:
				_, err = s.GetAt(r, "seed", c.Stamp)
				if err == nil {
					_, err = s.ListAt(r, "message", 0, "", 10, c.Stamp)
				}
			case contract.OpUpdate:
				_, err = s.PutAt(r, rec("seed", "", "updated"), false, c.Stamp)
			case contract.OpCreate:
				_, err = s.PutAt(r, rec("created", "message", "created"), true, c.Stamp)
			case contract.OpDelete:
				var dr DeleteResult
				dr, err = s.DeleteAt(r, "seed", false, c.Stamp)
				tombstoned = dr.Tombstoned
			case contract.OpImport:
				_, _, err = s.Import(r, c.Stamp, false, []Record{imported})
			case contract.OpReset:
				_, _, err = s.Import(r, c.Stamp, true, nil)
			case contract.OpCleanup:
				_, err = s.Cleanup(r, c.Stamp)
			default: // exports, digests, authorize: admission alone
				_, err = s.Admit(r, c.Op, c.Stamp)
			}
			got := contract.VerdictOf(err, tombstoned)
			if got != c.Verdict || (got == contract.Locked && contract.AsError(err).RetryAfter != c.RetryAfter) {
				t.Fatalf("%s: %s (%v), want %s retry=%s", c.Text, got, err, c.Verdict, c.RetryAfter)
			}
			if a, err := s.Authority(r); err != nil || a != c.Keep {
				t.Fatalf("%s: authority afterwards %s, %v; want %s", c.Text, a, err, c.Keep)
			}
			live := map[string]string{}
			recs, err := s.ListSlice(r, 0, 1<<62, 0, "", 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range recs {
				live[x.ID] = string(x.Data)
			}
			want := map[string]string{"seed": "seed"}
			if got == contract.Allow || got == contract.Tombstone {
				switch c.Op {
				case contract.OpUpdate:
					want["seed"] = "updated"
				case contract.OpCreate:
					want["created"] = "created"
				case contract.OpDelete, contract.OpCleanup:
					delete(want, "seed")
				case contract.OpReset:
					if c.Keep != c.Record { // a reset at the stamp held removes nothing
						delete(want, "seed")
					}
				case contract.OpImport:
					want["imported"] = "imported"
				}
			}
			assertEqual(t, c.Text+": records afterwards", live, want)
		})
	}
}

// TestResetRefusesReadsRoutedBeforeIt is the move back's stale read: the
// old source was exporting under the write lock (revision 7) when its swap
// away committed, and never heard of the swap; a later migration moves the
// resource back and resets the old source before it copies. A read routed
// by the write lock's revision and delivered after the reset must be
// refused as moved, not answered "not found" by the emptied store. The
// reset's own authority (importing at revision 12) is what refuses it:
// nothing else needs to have reached the store.
func TestResetRefusesReadsRoutedBeforeIt(t *testing.T) {
	clock := testutil.NewClock()
	s := MustOpenMem(t, clock)
	MustPut(t, s, res, rec("m1", "message", "hello"), true)
	writeLocked := exporting(7, clock.Now().Add(time.Minute))
	MustAuthorize(t, s, res, writeLocked)
	if _, err := s.GetAt(res, "m1", writeLocked); err != nil {
		t.Fatalf("a read routed by the write lock before the swap: %v", err)
	}
	if _, removed, err := s.Import(res, importing(12), true, nil); err != nil || removed != 1 {
		t.Fatalf("reset = %d removed, %v", removed, err)
	}
	_, err := s.GetAt(res, "m1", writeLocked)
	if e := contract.AsError(err); e.Code != contract.CodeLocked || e.Lock != contract.LockMoved {
		t.Fatalf("a read routed by the write lock after the reset: %v; want moved", err)
	}
	_, err = s.ListAt(res, "message", 0, "", 10, writeLocked)
	if e := contract.AsError(err); e.Lock != contract.LockMoved {
		t.Fatalf("a list routed by the write lock after the reset: %v; want moved", err)
	}
	// A write of the same vintage is refused too.
	_, err = s.PutAt(res, rec("m2", "message", "late"), true, role(6, contract.RolePrimary))
	if e := contract.AsError(err); e.Lock != contract.LockMoved {
		t.Fatalf("a write routed before the reset: %v; want moved", err)
	}
}

// TestRefusalWritesNothing: a refused operation leaves the authority record
// as it was, even when its stamp is newer (a write under the write fence).
func TestRefusalWritesNothing(t *testing.T) {
	clock := testutil.NewClock()
	s := MustOpenMem(t, clock)
	MustPut(t, s, res, rec("m1", "message", "x"), true)
	MustAuthorize(t, s, res, role(5, contract.RolePrimary))
	_, err := s.PutAt(res, rec("m1", "", "y"), false, exporting(6, clock.Now().Add(time.Minute)))
	if contract.AsError(err).Lock != contract.LockWriteFence {
		t.Fatalf("update routed by a write lock: %v", err)
	}
	if a, _ := s.Authority(res); a != role(5, contract.RolePrimary) {
		t.Fatalf("a refused write installed %s", a)
	}
}

// TestImportingKeepsItsTombstones: the sweep leaves an importing target's
// tombstones (each beats an older live copy that a late page may still
// bring) and removes them once the target is the primary.
func TestImportingKeepsItsTombstones(t *testing.T) {
	clock := testutil.NewClock()
	s := MustOpenMem(t, clock, func(o *Options) { o.TombstoneTTL = time.Minute })
	ts := Record{ID: "gone", Kind: "message", Version: 2, CreatedAt: 1, Deleted: true, DeletedAt: clock.Now().UnixNano()}
	if _, _, err := s.Import(res, importing(3), false, []Record{ts}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if n, err := s.SweepTombstones(clock.Now()); err != nil || n != 0 {
		t.Fatalf("sweep of an importing target = %d, %v; want 0", n, err)
	}
	// A late page of the live copy meets the tombstone.
	if n, _, err := s.Import(res, importing(3), false, []Record{{ID: "gone", Kind: "message", Version: 1, CreatedAt: 1, Data: []byte("back")}}); err != nil || n != 0 {
		t.Fatalf("late live copy = %d applied, %v; want 0", n, err)
	}
	MustAuthorize(t, s, res, role(4, contract.RolePrimary))
	if n, err := s.SweepTombstones(clock.Now()); err != nil || n != 1 {
		t.Fatalf("sweep at the primary = %d, %v; want 1", n, err)
	}
}

// TestRepairReplacesAnyRecord: the operator's repair installs an authority
// whatever the record holds, a higher revision included (a routing stream
// recreated), and refuses a malformed one.
func TestRepairReplacesAnyRecord(t *testing.T) {
	s := MustOpenMem(t, testutil.NewClock())
	MustAuthorize(t, s, res, role(900, contract.RoleSecondary))
	prev, err := s.Repair(res, role(3, contract.RolePrimary))
	if err != nil || prev != role(900, contract.RoleSecondary) {
		t.Fatalf("Repair = %s, %v", prev, err)
	}
	if a, _ := s.Authority(res); a != role(3, contract.RolePrimary) {
		t.Fatalf("after Repair: %s", a)
	}
	_, err = s.Repair(res, Authority{Rev: 4, Role: contract.RoleExporting})
	assertErrIs(t, "Repair of a malformed authority", err, ErrInvalid)
	if a, _ := s.Authority(res); a != role(3, contract.RolePrimary) {
		t.Fatalf("a refused Repair changed the record: %s", a)
	}
}

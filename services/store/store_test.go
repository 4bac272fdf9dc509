package store

import (
	"bytes"
	"github.com/cutover/cutover/internal/testutil"
	"github.com/cutover/cutover/services/contract"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/vmihailenco/msgpack/v5"
)

const res = "conv/abc"

func TestPutGetUpdateDelete(t *testing.T) {
	clock := testutil.NewClock()
	s := MustOpenMem(t, clock)

	t.Run("create", func(t *testing.T) {
		got := MustPut(t, s, res, Record{ID: "m1", Kind: "message", Data: []byte("hi"), Refs: []string{"media/x"}}, true)
		if got.Version != 1 || got.Seq != 1 || got.CreatedAt != clock.Now().UnixNano() || got.UpdatedAt != got.CreatedAt {
			t.Fatalf("created record %+v", got)
		}
		read, err := s.Get(res, "m1")
		if err != nil {
			t.Fatal(err)
		}
		assertEqual(t, "Get", read, got)
	})

	t.Run("create again returns existing with ErrExists", func(t *testing.T) {
		got, err := s.Put(res, rec("m1", "message", "other"), true)
		assertErrIs(t, "create existing", err, ErrExists)
		assertEqual(t, "existing data", string(got.Data), "hi")
		assertEqual(t, "token unchanged", MustToken(t, s, res), uint64(1))
	})

	t.Run("update", func(t *testing.T) {
		clock.Advance(time.Second)
		got := MustPut(t, s, res, Record{ID: "m1", Data: []byte("hi2"), CreatedAt: 42}, false)
		if got.Version != 2 || got.Seq != 2 || got.Kind != "message" || got.Refs != nil {
			t.Fatalf("updated record %+v", got)
		}
		if got.CreatedAt == 42 || got.UpdatedAt != clock.Now().UnixNano() {
			t.Fatalf("update must keep CreatedAt and set UpdatedAt: %+v", got)
		}
		recs := MustChanges(t, s, res, 0, 0, 10)
		assertEqual(t, "one change-index entry", ids(recs), []string{"m1"})
		assertEqual(t, "its seq", recs[0].Seq, uint64(2))
	})

	t.Run("update missing", func(t *testing.T) {
		_, err := s.Put(res, rec("nope", "message", "x"), false)
		assertErrIs(t, "update missing", err, ErrNotFound)
	})

	t.Run("delete without fence is physical", func(t *testing.T) {
		MustPut(t, s, res, rec("m2", "message", "two"), true)
		dr := MustDelete(t, s, res, "m1")
		if dr.Tombstoned {
			t.Fatal("tombstoned without a fence")
		}
		_, err := s.Get(res, "m1")
		assertErrIs(t, "Get deleted", err, ErrNotFound)
		live, tomb := MustCount(t, s, res)
		assertEqual(t, "counts", [2]int{live, tomb}, [2]int{1, 0})
		assertEqual(t, "changes", ids(MustChanges(t, s, res, 0, 0, 10)), []string{"m2"})
		assertEqual(t, "digests", MustDigests(t, s, res), recomputeDigests(t, s, res))
		_, err = s.Delete(res, "m1")
		assertErrIs(t, "delete twice", err, ErrNotFound)
		// No tombstone: the id may be written again.
		MustPut(t, s, res, rec("m1", "message", "again"), true)
	})
}

func TestValidation(t *testing.T) {
	s := MustOpenMem(t, testutil.NewClock())
	long := strings.Repeat("a", 129)
	cases := []struct {
		name string
		res  string
		rec  Record
	}{
		{"empty resource", "", rec("a", "k", "")},
		{"NUL resource", "conv\x00x", rec("a", "k", "")},
		{"long resource", strings.Repeat("r", 257), rec("a", "k", "")},
		{"empty id", res, rec("", "k", "")},
		{"long id", res, rec(long, "k", "")},
		{"NUL id", res, rec("a\x00b", "k", "")},
		{"NUL kind", res, rec("a", "k\x00", "")},
		{"long kind", res, rec("a", long, "")},
		{"bad ref", res, Record{ID: "a", Refs: []string{""}}},
		{"negative created", res, Record{ID: "a", CreatedAt: -1}},
		{"tombstone via Put", res, Record{ID: "a", Deleted: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, create := range []bool{true, false} {
				_, err := s.Put(c.res, c.rec, create)
				assertErrIs(t, "Put", err, ErrInvalid)
			}
			if c.res != "" && !strings.Contains(c.res, "\x00") && len(c.res) <= 256 {
				assertEqual(t, "token", MustToken(t, s, c.res), uint64(0))
			}
		})
	}
	t.Run("other entry points", func(t *testing.T) {
		errs := map[string]error{}
		_, errs["Get"] = s.Get(res, "")
		_, errs["Delete"] = s.Delete("", "a")
		_, errs["Cleanup"] = s.Cleanup("", role(1, contract.RoleSecondary))
		_, errs["List"] = s.List(res, "k\x00", 0, "", 1)
		_, errs["ListSlice"] = s.ListSlice(res, 5, 1, 0, "", 1)
		_, _, errs["Import"] = s.Import(res, importing(1), false, []Record{{ID: "a", Version: 0}})
		_, _, errs["ImportBadID"] = s.Import(res, importing(1), false, []Record{{ID: "a", Version: 1}, {ID: "", Version: 1}})
		_, _, _, errs["Changes"] = s.Changes("", 0, 0, 1)
		_, errs["GetCursor"] = s.GetCursor("")
		errs["PutCursor"] = s.PutCursor("a\x00", nil)
		_, errs["Repair"] = s.Repair(res, Authority{Rev: 1, Role: "owner"})
		for name, err := range errs {
			assertErrIs(t, name, err, ErrInvalid)
		}
		assertEqual(t, "nothing imported", MustToken(t, s, res), uint64(0))
	})
}

func TestListPaging(t *testing.T) {
	s := MustOpenMem(t, testutil.NewClock())
	// Kinds interleaved, several records sharing a CreatedAt, ids that are
	// prefixes of one another.
	var want []string
	for i := 0; i < 23; i++ {
		id := name(i)
		if i%5 == 0 {
			id = name(i/5) + "x"
		}
		kind := "message"
		if i%3 == 0 {
			kind = "reaction"
		}
		created := int64(1000 + i/4)
		MustPut(t, s, res, Record{ID: id, Kind: kind, CreatedAt: created, Data: []byte{byte(i)}}, true)
		if kind == "message" {
			want = append(want, id)
		}
	}
	MustPut(t, s, "conv/abcd", Record{ID: "zz", Kind: "message", CreatedAt: 1}, true)
	// A tombstone is not listed.
	MustAuthorize(t, s, res, tombstoning(1, time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)))
	MustDelete(t, s, res, want[3])
	want = append(want[:3], want[4:]...)

	for _, limit := range []int{1, 3, 100} {
		var got []Record
		var afterC int64
		afterID := ""
		for {
			page, err := s.List(res, "message", afterC, afterID, limit)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page...)
			if len(page) < limit {
				break
			}
			afterC, afterID = page[len(page)-1].CreatedAt, page[len(page)-1].ID
		}
		for i := 1; i < len(got); i++ {
			a, b := got[i-1], got[i]
			if a.CreatedAt > b.CreatedAt || (a.CreatedAt == b.CreatedAt && a.ID >= b.ID) {
				t.Fatalf("limit %d: out of order at %d: %+v then %+v", limit, i, a, b)
			}
		}
		gotIDs := ids(got)
		if len(gotIDs) != len(want) {
			t.Fatalf("limit %d: got %v, want the %d ids %v", limit, gotIDs, len(want), want)
		}
		seen := map[string]bool{}
		for _, id := range gotIDs {
			seen[id] = true
		}
		for _, id := range want {
			if !seen[id] {
				t.Fatalf("limit %d: %q missing from %v", limit, id, gotIDs)
			}
		}
	}

	t.Run("ListSlice", func(t *testing.T) {
		var got []Record
		var afterC int64
		afterID := ""
		for {
			page, err := s.ListSlice(res, 1001, 1004, afterC, afterID, 2)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page...)
			if len(page) < 2 {
				break
			}
			afterC, afterID = page[len(page)-1].CreatedAt, page[len(page)-1].ID
		}
		if page, err := s.ListSlice(res, 1001, 1004, 5000, "zz", 2); err != nil || len(page) != 0 {
			t.Fatalf("position past the slice: %v, %v", page, err)
		}
		if len(got) != 11 { // CreatedAt 1001..1003: 12 records, one tombstoned
			t.Fatalf("ListSlice returned %d records: %v", len(got), ids(got))
		}
		for _, r := range got {
			if r.CreatedAt < 1001 || r.CreatedAt >= 1004 || r.Deleted {
				t.Fatalf("record outside the slice: %+v", r)
			}
		}
	})
}

func TestCursors(t *testing.T) {
	s := MustOpenMem(t, nil)
	_, err := s.GetCursor("import/conv/abc")
	assertErrIs(t, "missing cursor", err, ErrNotFound)
	if err := s.PutCursor("import/conv/abc", []byte("page-7")); err != nil {
		t.Fatal(err)
	}
	v, err := s.GetCursor("import/conv/abc")
	if err != nil || string(v) != "page-7" {
		t.Fatalf("GetCursor = %q, %v", v, err)
	}
	if err := s.DeleteCursor("import/conv/abc"); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetCursor("import/conv/abc")
	assertErrIs(t, "deleted cursor", err, ErrNotFound)
}

func TestCleanup(t *testing.T) {
	clock := testutil.NewClock()
	s := MustOpenMem(t, clock, func(o *Options) { o.TombstoneTTL = time.Hour })
	other := res + "d" // shares a byte prefix with res
	for i := 0; i < 10; i++ {
		MustPut(t, s, res, rec(name(i), "message", "x"), true)
		MustPut(t, s, other, rec(name(i), "message", "y"), true)
	}
	MustAuthorize(t, s, res, tombstoning(1, clock.Now().Add(time.Hour)))
	MustDelete(t, s, res, name(0))
	MustDelete(t, s, res, name(1))
	otherDigests := MustDigests(t, s, other)

	// Not a secondary: refused, nothing removed.
	if n, err := s.Cleanup(res, tombstoning(1, clock.Now().Add(time.Hour))); n != 0 || contract.AsError(err).Code != contract.CodeConflict {
		t.Fatalf("Cleanup at the primary = %d, %v; want a conflict", n, err)
	}
	live, _ := MustCount(t, s, res)
	assertEqual(t, "live after a refused cleanup", live, 8)
	gone := role(2, contract.RoleSecondary)
	n, err := s.Cleanup(res, gone)
	if err != nil || n != 10 {
		t.Fatalf("Cleanup = %d, %v; want 10", n, err)
	}
	live, tomb := MustCount(t, s, res)
	assertEqual(t, "counts", [2]int{live, tomb}, [2]int{0, 0})
	assertEqual(t, "token", MustToken(t, s, res), uint64(0))
	assertEqual(t, "changes", len(MustChanges(t, s, res, 0, 0, 10)), 0)
	assertEqual(t, "digests", len(MustDigests(t, s, res)), 0)
	// The authority survives the cleanup: a read routed here by an older
	// document is still refused as moved, not answered from the emptied
	// store.
	if a, err := s.Authority(res); err != nil || a != gone {
		t.Fatalf("authority after Cleanup: %s, %v; want %s", a, err, gone)
	}
	if _, err := s.ListAt(res, "message", 0, "", 100, tombstoning(1, clock.Now().Add(time.Hour))); err == nil || contract.AsError(err).Lock != contract.LockMoved {
		t.Fatalf("List after Cleanup: %v; want moved", err)
	}
	// The neighbour is untouched and the expiry entries went too.
	live, _ = MustCount(t, s, other)
	assertEqual(t, "other live", live, 10)
	assertEqual(t, "other digests", MustDigests(t, s, other), otherDigests)
	clock.Advance(2 * time.Hour)
	swept, err := s.SweepTombstones(clock.Now())
	if err != nil || swept != 0 {
		t.Fatalf("sweep after Cleanup = %d, %v", swept, err)
	}
	// The sequence starts again, once the resource is back here.
	MustAuthorize(t, s, res, role(3, contract.RolePrimary))
	assertEqual(t, "new seq", MustPut(t, s, res, rec("n", "message", ""), true).Seq, uint64(1))
}

func TestCorruptValuesDoNotPanic(t *testing.T) {
	s := MustOpenMem(t, testutil.NewClock())
	MustPut(t, s, res, rec("m1", "message", "x"), true)
	// A bin32 header announcing 4 GiB, then nothing.
	huge := []byte{0x81, 0xa1, 'b', 0xc6, 0xff, 0xff, 0xff, 0xff}
	hugeStr := []byte{0x81, 0xa1, 'b', 0xdb, 0xff, 0xff, 0xff, 0xff}
	for _, garbage := range [][]byte{{0xc1}, {0xff, 0x00}, huge, hugeStr, {}} {
		for _, key := range [][]byte{recordKey(res, "m1"), authorityKey(res), stateKey(res), digestKey(res, s.SliceOf(testutil.NewClock().Now().UnixNano()))} {
			if err := s.db.Set(key, garbage, pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}
		_, err := s.Get(res, "m1")
		assertErrIs(t, "Get", err, ErrCorrupt)
		_, _, _, err = s.Changes(res, 0, 0, 10)
		assertErrIs(t, "Changes", err, ErrCorrupt)
		_, err = s.Authority(res)
		assertErrIs(t, "Authority", err, ErrCorrupt)
		_, err = s.Put(res, rec("m2", "message", "x"), true)
		assertErrIs(t, "Put", err, ErrCorrupt)
		_, err = s.Digests(res)
		assertErrIs(t, "Digests", err, ErrCorrupt)
		_, _, err = s.Count(res)
		assertErrIs(t, "Count", err, ErrCorrupt)
	}
	// The operator's repair still works on a corrupt record.
	if _, err := s.Repair(res, role(1, contract.RolePrimary)); err != nil {
		t.Fatal(err)
	}
}

func TestClosed(t *testing.T) {
	s := MustOpenMem(t, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	assertErrIs(t, "second Close", s.Close(), ErrClosed)
	_, err := s.Put(res, rec("a", "k", ""), true)
	assertErrIs(t, "Put", err, ErrClosed)
	_, err = s.Get(res, "a")
	assertErrIs(t, "Get", err, ErrClosed)
	_, _, _, err = s.Changes(res, 0, 0, 1)
	assertErrIs(t, "Changes", err, ErrClosed)
	_, err = s.SweepTombstones(time.Now())
	assertErrIs(t, "Sweep", err, ErrClosed)
}

func TestRecordEncodingRoundTrip(t *testing.T) {
	in := entry{Record: Record{ID: "i", Kind: "k", Version: 3, Seq: 9, CreatedAt: 1, UpdatedAt: 2,
		Deleted: true, DeletedAt: 3, Data: []byte{0, 1, 0xff}, Refs: []string{"media/a"}}, expiresAt: 77}
	b, err := encodeEntry(&in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeEntry(b)
	if err != nil {
		t.Fatal(err)
	}
	assertEqual(t, "round trip", out, in)
	// Values are msgpack maps with short keys, readable by any msgpack tool.
	var m map[string]any
	if err := msgpack.Unmarshal(b, &m); err != nil || m["i"] != "i" {
		t.Fatalf("not a msgpack map: %v %v", m, err)
	}
	if bytes.Contains(b, []byte("Data")) {
		t.Fatal("long field names stored")
	}
}

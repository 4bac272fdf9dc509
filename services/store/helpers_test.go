package store

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/cutover/cutover/internal/testutil"
	"github.com/cutover/cutover/services/contract"
)

// MustOpenMem opens a store on a fresh in-memory filesystem.
func MustOpenMem(tb testing.TB, clock *testutil.Clock, mod ...func(*Options)) *Store {
	tb.Helper()
	opts := Options{FS: vfs.NewMem()}
	if clock != nil {
		opts.Clock = clock.Now
	}
	for _, m := range mod {
		m(&opts)
	}
	s, err := Open(opts)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, ErrClosed) {
			tb.Errorf("Close: %v", err)
		}
	})
	return s
}

func MustPut(tb testing.TB, s *Store, res string, rec Record, create bool) Record {
	tb.Helper()
	got, err := s.Put(res, rec, create)
	if err != nil {
		tb.Fatalf("Put(%q, %q, create=%v): %v", res, rec.ID, create, err)
	}
	return got
}

func MustDelete(tb testing.TB, s *Store, res, id string) DeleteResult {
	tb.Helper()
	dr, err := s.Delete(res, id)
	if err != nil {
		tb.Fatalf("Delete(%q, %q): %v", res, id, err)
	}
	return dr
}

func MustAuthorize(tb testing.TB, s *Store, res string, a Authority) {
	tb.Helper()
	if _, err := s.Admit(res, contract.OpAuthorize, a); err != nil {
		tb.Fatalf("Authorize(%q, %s): %v", res, a, err)
	}
}

// MustImport imports recs into res under an importing authority at
// revision 1.
func MustImport(tb testing.TB, s *Store, res string, recs []Record) int {
	tb.Helper()
	n, _, err := s.Import(res, importing(1), false, recs)
	if err != nil {
		tb.Fatalf("Import(%q, %d records): %v", res, len(recs), err)
	}
	return n
}

// MustChanges pages through Changes(afterSeq, uptoSeq] with the given page
// size and returns every record.
func MustChanges(tb testing.TB, s *Store, res string, afterSeq, uptoSeq uint64, page int) []Record {
	tb.Helper()
	var all []Record
	cursor := afterSeq
	for i := 0; ; i++ {
		recs, last, more, err := s.Changes(res, cursor, uptoSeq, page)
		if err != nil {
			tb.Fatalf("Changes(%q, %d, %d): %v", res, cursor, uptoSeq, err)
		}
		if len(recs) > page {
			tb.Fatalf("page of %d records, limit %d", len(recs), page)
		}
		all = append(all, recs...)
		if !more {
			return all
		}
		if last <= cursor {
			tb.Fatalf("Changes did not advance: last %d after %d", last, cursor)
		}
		cursor = last
		if i > 1e6 {
			tb.Fatal("Changes never ends")
		}
	}
}

func MustDigests(tb testing.TB, s *Store, res string) []SliceDigest {
	tb.Helper()
	d, err := s.Digests(res)
	if err != nil {
		tb.Fatalf("Digests(%q): %v", res, err)
	}
	return d
}

func MustCount(tb testing.TB, s *Store, res string) (int, int) {
	tb.Helper()
	l, t, err := s.Count(res)
	if err != nil {
		tb.Fatalf("Count(%q): %v", res, err)
	}
	return l, t
}

func MustToken(tb testing.TB, s *Store, res string) uint64 {
	tb.Helper()
	t, err := s.SyncToken(res)
	if err != nil {
		tb.Fatalf("SyncToken(%q): %v", res, err)
	}
	return t
}

// ids returns the ids of recs in order.
func ids(recs []Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

func assertEqual(tb testing.TB, what string, got, want any) {
	tb.Helper()
	if !reflect.DeepEqual(got, want) {
		tb.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func assertErrIs(tb testing.TB, what string, err, target error) {
	tb.Helper()
	if !errors.Is(err, target) {
		tb.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

// recomputeDigests builds the digests of res from its live records, to check
// the ones maintained at write time.
func recomputeDigests(tb testing.TB, s *Store, res string) []SliceDigest {
	tb.Helper()
	m := map[int64]*SliceDigest{}
	sums := map[int64]u128{}
	var order []int64
	var afterC int64
	afterID := ""
	for {
		page, err := s.ListSlice(res, 0, 1<<62, afterC, afterID, 7)
		if err != nil {
			tb.Fatalf("ListSlice: %v", err)
		}
		for i := range page {
			r := &page[i]
			sl := s.SliceOf(r.CreatedAt)
			if m[sl] == nil {
				m[sl] = &SliceDigest{Slice: sl}
				order = append(order, sl)
			}
			m[sl].Count++
			sums[sl] = sums[sl].add(recordHash(r))
		}
		if len(page) < 7 {
			break
		}
		afterC, afterID = page[len(page)-1].CreatedAt, page[len(page)-1].ID
	}
	var out []SliceDigest
	for _, sl := range order {
		d := *m[sl]
		d.Hash = sums[sl].bytes()
		out = append(out, d)
	}
	return out
}

func rec(id, kind, data string) Record {
	return Record{ID: id, Kind: kind, Data: []byte(data)}
}

// tombstoning is a primary that tombstones deletes until until.
func tombstoning(rev uint64, until time.Time) Authority {
	return Authority{Rev: rev, Role: contract.RolePrimary, Deletes: contract.DeletesTombstone, Until: contract.UntilOf(until)}
}

// exporting is a primary under the write fence until until.
func exporting(rev uint64, until time.Time) Authority {
	return Authority{Rev: rev, Role: contract.RoleExporting, Until: contract.UntilOf(until)}
}

// importing is a migration's target.
func importing(rev uint64) Authority { return Authority{Rev: rev, Role: contract.RoleImporting} }

// role is an authority without an Until.
func role(rev uint64, r contract.Role) Authority { return Authority{Rev: rev, Role: r} }

func name(i int) string { return fmt.Sprintf("m%04d", i) }

package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble"

	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
)

// keysOf counts the keys of res in every family a clear empties (its
// counters are written again, empty, by the clearing transaction).
func keysOf(t *testing.T, s *Store, res string) int {
	t.Helper()
	n := 0
	for _, fam := range []byte{famRecord, famChange, famKind, famTime, famDigest} {
		p := resPrefix(fam, res)
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
		if err != nil {
			t.Fatal(err)
		}
		for ok := it.First(); ok; ok = it.Next() {
			n++
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// TestClearLeavesNothing: a clear (a reset import, a cleanup) removes every
// key of the resource but its authority record, whether it deletes them one
// by one (at most pointDeleteMax in a family, nothing at all for an empty
// resource) or by range (more, or records the same transaction wrote), and
// nothing of another resource, one whose id extends it included.
func TestClearLeavesNothing(t *testing.T) {
	ctx := context.Background()
	for _, n := range []int{0, 3, pointDeleteMax + 10} {
		for _, batched := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d records, batched %v", n, batched), func(t *testing.T) {
				s := MustOpenMem(t, nil)
				const res, other = "conv/c", "conv/c2"
				for _, r := range []string{res, other} {
					for i := range n {
						MustPut(t, s, r, rec(name(i), "note", "x"), true)
					}
				}
				MustAuthorize(t, s, res, role(3, contract.RolePrimary))
				before := keysOf(t, s, other)
				var removed int
				if err := s.Update(ctx, res, func(tx participant.Tx) error {
					if batched {
						if err := tx.Put(contract.Record{ID: "z", Kind: "note", Version: 1, Seq: uint64(n + 1), CreatedAt: 1, Data: []byte("z")}); err != nil {
							return err
						}
					}
					var err error
					removed, err = tx.Clear()
					return err
				}); err != nil {
					t.Fatal(err)
				}
				if removed != n {
					t.Errorf("Clear removed %d records, want %d", removed, n)
				}
				if k := keysOf(t, s, res); k != 0 {
					t.Errorf("%d keys of %s left after the clear", k, res)
				}
				if k := keysOf(t, s, other); k != before {
					t.Errorf("%s had %d keys, %d after clearing %s", other, before, k, res)
				}
				if a, err := s.getAuthority(s.db, res); err != nil || a != role(3, contract.RolePrimary) {
					t.Errorf("authority after the clear: %s, %v", a, err)
				}
			})
		}
	}
}

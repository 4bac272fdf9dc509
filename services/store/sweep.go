package store

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/cutover/cutover/services/contract"
)

// sweepChunk is how many expiry entries one sweep batch handles.
const sweepChunk = 256

// SweepTombstones physically removes the tombstones whose expiry (DeletedAt
// plus the TombstoneTTL in force when they were written) is at or before now
// (paper 001 §4.3: tombstones expire by TTL), walking the expiry index rather
// than the records. Each tombstone is re-checked under its resource's lock,
// so one that an import replaced meanwhile is left alone, and the
// tombstones of a resource whose authority here is importing stay until it
// is not (a late page's older live copy must still meet them). It returns how
// many tombstones were removed; on error, those removed before it stay
// removed. A malformed expiry key or an unreadable tombstone is skipped and
// left in place; the sweep finishes and then reports the first one as
// ErrCorrupt. Errors: ErrClosed, ErrCorrupt.
func (s *Store) SweepTombstones(now time.Time) (int, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	cutoff := now.UnixNano()
	if cutoff < 0 {
		return 0, nil
	}
	lower := []byte{famExpiry}
	upper := []byte{famExpiry + 1}
	if cutoff < math.MaxInt64 {
		upper = expiryPrefix(cutoff + 1)
	}
	total := 0
	// firstBad remembers the first unreadable entry; the sweep goes on past
	// it, because one bad key must not stop the TTL of every other tombstone.
	var firstBad error
	for {
		keys, err := s.expiredKeys(lower, upper)
		if err != nil {
			return total, err
		}
		if len(keys) == 0 {
			return total, firstBad
		}
		n, bad, err := s.sweepKeys(keys)
		total += n
		if err != nil {
			return total, err
		}
		if bad != nil && firstBad == nil {
			firstBad = bad
		}
		if len(keys) < sweepChunk {
			return total, firstBad
		}
		// Resume after the last key seen, so a key that was left in place
		// (a tombstone replaced meanwhile) is not visited again.
		lower = append(append([]byte(nil), keys[len(keys)-1]...), 0)
	}
}

// expiredKeys returns up to sweepChunk expiry keys in [lower, upper).
func (s *Store) expiredKeys(lower, upper []byte) ([][]byte, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("store: sweep: %w", err)
	}
	defer it.Close()
	var keys [][]byte
	for ok := it.First(); ok && len(keys) < sweepChunk; ok = it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("store: sweep: %w", err)
	}
	return keys, nil
}

// sweepKeys removes the tombstones named by keys in one batch, holding the
// locks of all their resources. bad reports the first entry it had to skip. Stripes are taken in ascending order, and
// every other caller holds at most one, so this cannot deadlock.
func (s *Store) sweepKeys(keys [][]byte) (removed int, bad, err error) {
	type target struct {
		expiry  int64
		res, id string
		key     []byte
	}
	targets := make([]target, 0, len(keys))
	var stripes []int
	for _, k := range keys {
		exp, res, id, ok := parseExpiryKey(k)
		if !ok || validResource(res) != nil || validID(id) != nil {
			if bad == nil {
				bad = corruptf("expiry key %q", k)
			}
			continue
		}
		targets = append(targets, target{exp, res, id, k})
		stripes = append(stripes, stripeOf(res))
	}
	slices.Sort(stripes)
	stripes = slices.Compact(stripes)
	for _, i := range stripes {
		s.stripes[i].Lock()
	}
	defer func() {
		for _, i := range stripes {
			s.stripes[i].Unlock()
		}
	}()

	b := s.db.NewBatch()
	defer b.Close()
	txns := map[string]*txn{}
	importing := map[string]bool{}
	for _, tg := range targets {
		imp, seen := importing[tg.res]
		if !seen {
			a, aerr := s.getAuthority(s.db, tg.res)
			imp = aerr == nil && a.RoleOf() == contract.RoleImporting
			importing[tg.res] = imp
		}
		if imp {
			// A target in the middle of a copy keeps its tombstones: each
			// one is what beats an older live copy of its record arriving
			// in a late page (paper 001 §4.3). They go once it is the
			// primary, or a secondary.
			continue
		}
		t, ok := txns[tg.res]
		if !ok {
			t, err = s.newTxn(tg.res, b, s.now())
			if errors.Is(err, ErrCorrupt) {
				bad = cmp.Or(bad, err)
				continue
			}
			if err != nil {
				return 0, bad, err
			}
			txns[tg.res] = t
		}
		e, exists, err := t.get(tg.id)
		if errors.Is(err, ErrCorrupt) {
			// Leave an unreadable record and its entry for an operator.
			bad = cmp.Or(bad, err)
			continue
		}
		if err != nil {
			return 0, bad, err
		}
		if exists && e.Deleted && e.expiresAt == tg.expiry {
			if err := t.replace(&e, nil); err != nil {
				return 0, bad, fmt.Errorf("store: sweep: %w", err)
			}
			removed++
			continue
		}
		// A stale entry (the tombstone was replaced or removed): drop it.
		if err := b.Delete(tg.key, nil); err != nil {
			return 0, bad, fmt.Errorf("store: sweep: %w", err)
		}
	}
	for _, t := range txns {
		if err := t.flush(); err != nil {
			return 0, bad, err
		}
	}
	if err := b.Commit(s.write); err != nil {
		return 0, bad, fmt.Errorf("store: sweep: commit: %w", err)
	}
	return removed, bad, nil
}

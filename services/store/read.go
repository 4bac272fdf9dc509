package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/cockroachdb/pebble"

	"github.com/cutover/cutover/services/contract"
)

// Get is GetAt without a stamp.
func (s *Store) Get(resource, id string) (Record, error) {
	return s.GetAt(resource, id, Authority{})
}

// GetAt returns the live record id of resource for a read routed by the
// authority a (zero: none), admitted on the snapshot the record is read
// from (participant.Participant.Get): a read routed by a revision older
// than the resource's authority here, or reaching a store that is no
// longer the resource's location, is refused as moved. Tombstones are
// invisible to users. Errors: *contract.Error (moved), ErrInvalid,
// ErrNotFound (missing or tombstoned), ErrClosed, ErrCorrupt.
func (s *Store) GetAt(resource, id string, a Authority) (Record, error) {
	if err := s.open(); err != nil {
		return Record{}, err
	}
	rec, err := s.kit().Get(context.Background(), resource, id, a)
	return rec, fromKit(err, id)
}

// clampLimit applies DefaultPageLimit and MaxPageLimit.
func clampLimit(limit int) int {
	if limit <= 0 {
		return DefaultPageLimit
	}
	return min(limit, MaxPageLimit)
}

// List is ListAt without a stamp.
func (s *Store) List(resource, kind string, afterCreated int64, afterID string, limit int) ([]Record, error) {
	return s.ListAt(resource, kind, afterCreated, afterID, limit, Authority{})
}

// ListAt returns up to limit live records of kind in resource, in
// (CreatedAt, ID) order, strictly after the position (afterCreated,
// afterID), for a read routed by the authority a, admitted as GetAt on the
// page's snapshot. The first page is (0, ""); the next page starts after
// the last record returned. A page shorter than limit is the last. limit
// <= 0 means DefaultPageLimit; limits above MaxPageLimit are capped.
// Errors: *contract.Error (moved), ErrInvalid, ErrClosed, ErrCorrupt.
func (s *Store) ListAt(resource, kind string, afterCreated int64, afterID string, limit int, a Authority) ([]Record, error) {
	if err := validResource(resource); err != nil {
		return nil, err
	}
	if err := validKind(kind); err != nil {
		return nil, err
	}
	return s.scanIndex(resource, kindPrefix(resource, kind), 0, math.MaxInt64, afterCreated, afterID, limit, &a)
}

// ListSlice returns up to limit live records of resource with CreatedAt in
// [from, to), in (CreatedAt, ID) order, strictly after the position
// (afterCreated, afterID); validation reads one time slice with it (paper
// 001 §5.3). The first page is (from, "") or (0, ""); the next page starts
// after the last record returned; a page shorter than limit is the last.
// Limits as in List. Errors: ErrInvalid (including from > to or negative
// from), ErrClosed, ErrCorrupt.
func (s *Store) ListSlice(resource string, from, to int64, afterCreated int64, afterID string, limit int) ([]Record, error) {
	if err := validResource(resource); err != nil {
		return nil, err
	}
	if from < 0 || to < from {
		return nil, invalidf("slice [%d, %d)", from, to)
	}
	return s.scanIndex(resource, resPrefix(famTime, resource), from, to, afterCreated, afterID, limit, nil)
}

// scanIndex pages through an index whose keys are prefix <created:8> <id>;
// a user read (a non-nil: its stamp) is admitted first, on the page's
// snapshot.
func (s *Store) scanIndex(res string, prefix []byte, from, to, afterCreated int64, afterID string, limit int, a *Authority) ([]Record, error) {
	if afterCreated < 0 {
		return nil, invalidf("negative position %d", afterCreated)
	}
	if afterID != "" {
		if err := validID(afterID); err != nil {
			return nil, err
		}
	}
	limit = clampLimit(limit)
	lower, upper, ok := scanBounds(prefix, from, to, afterCreated, afterID)
	if !ok {
		return nil, nil
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	if a != nil {
		if _, err := s.admit(snap, res, contract.OpRead, *a, s.now()); err != nil {
			return nil, err
		}
	}
	return s.scanOn(snap, res, prefix, lower, upper, limit)
}

// scanBounds are the index keys of the records with CreatedAt in [from,
// to) strictly after (afterCreated, afterID); ok is false when there are
// none.
func scanBounds(prefix []byte, from, to, afterCreated int64, afterID string) (lower, upper []byte, ok bool) {
	if from >= to {
		return nil, nil, false
	}
	lower = putU64(append([]byte(nil), prefix...), uint64(from))
	if afterCreated > from || (afterCreated == from && afterID != "") {
		// Strictly after (afterCreated, afterID): the smallest key above it
		// is the key itself followed by a NUL, which no id contains.
		lower = append(putU64(append([]byte(nil), prefix...), uint64(afterCreated)), afterID...)
		lower = append(lower, sep)
	}
	upper = putU64(append([]byte(nil), prefix...), uint64(to))
	if to == math.MaxInt64 {
		upper = prefixEnd(prefix)
	}
	return lower, upper, bytes.Compare(lower, upper) < 0
}

// scanOn reads up to limit live records of res from r through the index
// keys between lower and upper, whose keys are prefix <created:8> <id>.
func (s *Store) scanOn(snap reader, res string, prefix, lower, upper []byte, limit int) ([]Record, error) {
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("store: list: %w", err)
	}
	defer it.Close()
	var out []Record
	for ok := it.First(); ok && len(out) < limit; ok = it.Next() {
		_, id, valid := splitCreatedID(it.Key(), prefix)
		if !valid {
			return nil, corruptf("index key %q", it.Key())
		}
		e, err := s.getEntry(snap, res, id)
		if errors.Is(err, ErrNotFound) {
			return nil, corruptf("index key %q without record", it.Key())
		}
		if err != nil {
			return nil, err
		}
		if e.Deleted {
			return nil, corruptf("index key %q names a tombstone", it.Key())
		}
		out = append(out, e.Record)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("store: list: %w", err)
	}
	return out, nil
}

// Count returns the number of live records and tombstones of resource, from
// counters kept at write time. Errors: ErrInvalid, ErrClosed, ErrCorrupt.
func (s *Store) Count(resource string) (live, tombstones int, err error) {
	if err := validResource(resource); err != nil {
		return 0, 0, err
	}
	if err := s.enter(); err != nil {
		return 0, 0, err
	}
	defer s.leave()
	st, err := s.getState(s.db, resource)
	if err != nil {
		return 0, 0, err
	}
	return int(st.Live), int(st.Tombstones), nil
}

// SyncToken returns the resource's current change sequence. A historical
// export issues it as the sync token t (paper 001 A2): every change committed
// so far has Seq <= t, and every later change gets Seq > t, because the
// counter and the change are committed in one batch. 0 means no change yet.
// Errors: ErrInvalid, ErrClosed, ErrCorrupt.
func (s *Store) SyncToken(resource string) (uint64, error) {
	if err := validResource(resource); err != nil {
		return 0, err
	}
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	st, err := s.getState(s.db, resource)
	if err != nil {
		return 0, err
	}
	return st.Seq, nil
}

// Changes returns, in Seq order, up to limit records of resource, live or
// tombstone, whose last change has afterSeq < Seq <= uptoSeq (uptoSeq 0: no
// upper bound), read from one snapshot of the change index. lastSeq is the
// Seq of the last record returned (afterSeq if none), the next call's
// afterSeq; more says whether records remain within the bound.
//
// Historical export is Changes(r, cursor, t) and delta export Changes(r, t,
// 0) with t = SyncToken at the start of the historical export. A record
// changed after t has moved past t in the index, so the delta returns it in
// its final state, tombstones included (paper 001 A2, §4.6). limit as in
// List. Errors: ErrInvalid, ErrClosed, ErrCorrupt.
func (s *Store) Changes(resource string, afterSeq, uptoSeq uint64, limit int) (recs []Record, lastSeq uint64, more bool, err error) {
	if err := validResource(resource); err != nil {
		return nil, afterSeq, false, err
	}
	limit = clampLimit(limit)
	if afterSeq == math.MaxUint64 || (uptoSeq != 0 && uptoSeq <= afterSeq) {
		return nil, afterSeq, false, nil
	}
	prefix := resPrefix(famChange, resource)
	lower := changeKey(resource, afterSeq+1)
	upper := prefixEnd(prefix)
	if uptoSeq != 0 && uptoSeq != math.MaxUint64 {
		upper = changeKey(resource, uptoSeq+1)
	}
	if err := s.enter(); err != nil {
		return nil, afterSeq, false, err
	}
	defer s.leave()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	return s.changesOn(snap, resource, afterSeq, lower, upper, limit)
}

// changesOn reads the change index of resource from r between lower and
// upper (keys), up to limit records (Changes).
func (s *Store) changesOn(snap reader, resource string, afterSeq uint64, lower, upper []byte, limit int) (recs []Record, lastSeq uint64, more bool, err error) {
	prefix := resPrefix(famChange, resource)
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, afterSeq, false, fmt.Errorf("store: changes: %w", err)
	}
	defer it.Close()
	lastSeq = afterSeq
	type change struct {
		seq uint64
		id  string
	}
	var page []change
	ok := it.First()
	for ; ok && len(page) < limit; ok = it.Next() {
		k := it.Key()
		if len(k) != len(prefix)+8 {
			return nil, afterSeq, false, corruptf("change key %q", k)
		}
		page = append(page, change{binary.BigEndian.Uint64(k[len(prefix):]), string(it.Value())})
	}
	if err := it.Error(); err != nil {
		return nil, afterSeq, false, fmt.Errorf("store: changes: %w", err)
	}
	// The page's records, read in key order with one iterator (entriesOf).
	ids := make([]string, len(page))
	for i, c := range page {
		ids[i] = c.id
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	byID := make(map[string]*entry, len(ids))
	if err := s.entriesOf(snap, resource, ids, func(id string, e *entry) { byID[id] = e }); err != nil {
		return nil, afterSeq, false, err
	}
	recs = make([]Record, 0, len(page))
	for _, c := range page {
		e := byID[c.id]
		if e == nil {
			return nil, afterSeq, false, corruptf("change %d of %q names missing record %q", c.seq, resource, c.id)
		}
		if e.Seq != c.seq {
			return nil, afterSeq, false, corruptf("change %d of %q names record %q at seq %d", c.seq, resource, c.id, e.Seq)
		}
		recs = append(recs, e.Record)
		lastSeq = c.seq
	}
	return recs, lastSeq, ok, nil
}

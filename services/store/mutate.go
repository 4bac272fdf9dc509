package store

import (
	"fmt"

	"github.com/cockroachdb/pebble"

	"github.com/cutover/cutover/services/contract"
)

// Put is PutAt without a stamp: the authority record alone decides.
func (s *Store) Put(resource string, rec Record, create bool) (Record, error) {
	return s.PutAt(resource, rec, create, Authority{})
}

// PutAt writes a record on the user path: a new write (create=true) or an
// update (create=false), routed by the authority a (the router's stamp,
// kvrouting.Decision.Authority; zero: none). The store assigns Version,
// Seq and UpdatedAt, and CreatedAt if rec.CreatedAt is 0; rec.Version,
// rec.Seq, rec.UpdatedAt and rec.DeletedAt are ignored. An update keeps the
// stored CreatedAt and, when rec.Kind is empty, the stored Kind. It returns
// the record as stored.
//
// Admission (contract.Admit) decides in the batch that writes: a is joined
// into the resource's authority record, which the batch writes with the
// record, and a refusal writes nothing. Errors: *contract.Error (moved,
// locked under the write fence), ErrInvalid (bad resource, id, kind, refs,
// negative CreatedAt, rec.Deleted set), ErrExists (create, id live; the
// existing record is returned), ErrDeleted (create, id tombstoned: never
// resurrected), ErrNotFound (update of a missing or tombstoned id),
// ErrClosed, ErrCorrupt.
func (s *Store) PutAt(resource string, rec Record, create bool, a Authority) (Record, error) {
	if err := validResource(resource); err != nil {
		return Record{}, err
	}
	if err := validateRecord(&rec); err != nil {
		return Record{}, err
	}
	if rec.Deleted {
		return Record{}, invalidf("record %q: Put cannot write a tombstone; use Delete", rec.ID)
	}
	if err := s.enter(); err != nil {
		return Record{}, err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()

	now := s.now()
	op := contract.OpUpdate
	if create {
		op = contract.OpCreate
	}
	d, err := s.admit(s.db, resource, op, a, now)
	if err != nil {
		return Record{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	t, err := s.newTxn(resource, b, now)
	if err != nil {
		return Record{}, err
	}
	old, exists, err := t.get(rec.ID)
	if err != nil {
		return Record{}, err
	}
	next := entry{Record: Record{
		ID: rec.ID, Kind: rec.Kind, CreatedAt: rec.CreatedAt,
		UpdatedAt: now.UnixNano(), Data: rec.Data, Refs: rec.Refs,
	}}
	switch {
	case create && exists && old.Deleted:
		return Record{}, fmt.Errorf("%w: %q", ErrDeleted, rec.ID)
	case create && exists:
		return old.Record, fmt.Errorf("%w: %q", ErrExists, rec.ID)
	case create:
		next.Version = 1
		if next.CreatedAt == 0 {
			next.CreatedAt = now.UnixNano()
		}
	case !exists || old.Deleted:
		return Record{}, fmt.Errorf("%w: %q", ErrNotFound, rec.ID)
	default:
		next.Version = old.Version + 1
		next.CreatedAt = old.CreatedAt
		if next.Kind == "" {
			next.Kind = old.Kind
		}
	}
	if len(next.Data) == 0 {
		next.Data = nil
	}
	if len(next.Refs) == 0 {
		next.Refs = nil
	}
	next.Seq = t.nextSeq()
	var prev *entry
	if exists {
		prev = &old
	}
	if err := t.replace(prev, &next); err != nil {
		return Record{}, fmt.Errorf("store: put: %w", err)
	}
	if err := persist(b, resource, d); err != nil {
		return Record{}, err
	}
	if err := t.commit(); err != nil {
		return Record{}, err
	}
	return next.Record, nil
}

// Delete is DeleteAt without a stamp, removing physically unless the
// authority record says tombstone.
func (s *Store) Delete(resource, id string) (DeleteResult, error) {
	return s.DeleteAt(resource, id, false, Authority{})
}

// DeleteAt deletes a record on the user path, routed by the authority a
// (zero: none), deciding in the batch that deletes (paper 001 Table 4,
// contract.Admit): under the write fence it is refused; where the joined
// authority tombstones deletes (the hard-delete lock), or keepID asks for
// it (a service that keeps deleted ids reserved), it writes a tombstone
// (Deleted, Data and Refs stripped, Version+1, a new Seq, DeletedAt now,
// expiring after Options.TombstoneTTL) so that the delete is exported
// (paper 001 §4.3); otherwise the record is removed physically with its
// index entries and digest contribution. DeleteResult.Tombstoned reports
// whether admission demanded the tombstone.
//
// Errors: *contract.Error (moved, locked), ErrInvalid, ErrNotFound
// (missing or already tombstoned), ErrClosed, ErrCorrupt.
func (s *Store) DeleteAt(resource, id string, keepID bool, a Authority) (DeleteResult, error) {
	if err := validResource(resource); err != nil {
		return DeleteResult{}, err
	}
	if err := validID(id); err != nil {
		return DeleteResult{}, err
	}
	if err := s.enter(); err != nil {
		return DeleteResult{}, err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()

	now := s.now()
	d, err := s.admit(s.db, resource, contract.OpDelete, a, now)
	if err != nil {
		return DeleteResult{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	t, err := s.newTxn(resource, b, now)
	if err != nil {
		return DeleteResult{}, err
	}
	old, exists, err := t.get(id)
	if err != nil {
		return DeleteResult{}, err
	}
	if !exists || old.Deleted {
		return DeleteResult{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	var res DeleteResult
	if keepID || d.Verdict == contract.Tombstone {
		ts := s.tombstone(old.Record, now.UnixNano())
		ts.Seq = t.nextSeq()
		if err := t.replace(&old, &ts); err != nil {
			return DeleteResult{}, fmt.Errorf("store: delete: %w", err)
		}
		res = DeleteResult{Tombstoned: d.Verdict == contract.Tombstone, Tombstone: ts.Record}
	} else if err := t.replace(&old, nil); err != nil {
		return DeleteResult{}, fmt.Errorf("store: delete: %w", err)
	}
	if err := persist(b, resource, d); err != nil {
		return DeleteResult{}, err
	}
	if err := t.commit(); err != nil {
		return DeleteResult{}, err
	}
	return res, nil
}

// tombstone builds the tombstone replacing r, deleted at deletedAt; only the
// identity, kind and creation time survive (paper 001 §4.3).
func (s *Store) tombstone(r Record, deletedAt int64) entry {
	return entry{
		Record: Record{
			ID: r.ID, Kind: r.Kind, Version: r.Version + 1,
			CreatedAt: r.CreatedAt, UpdatedAt: deletedAt,
			Deleted: true, DeletedAt: deletedAt,
		},
		expiresAt: s.expiry(deletedAt),
	}
}

// expiry is when a tombstone deleted at deletedAt may be swept.
func (s *Store) expiry(deletedAt int64) int64 {
	e := deletedAt + int64(s.opts.TombstoneTTL)
	if e < deletedAt { // overflow
		return 1<<63 - 1
	}
	return e
}

// Cleanup removes every trace of resource at this store — records,
// tombstones, indexes, digests and the sequence counter; the authority
// record stays — under the authority a, which must make the store a
// secondary for it (contract.Admit, contract.OpCleanup): the records of a
// primary or of an importing target are never removed, however late the
// request. The decision, the new record and the deletion commit in one
// batch. Afterwards the sequence starts again from zero, so sync tokens
// issued earlier mean nothing. It returns how many records (live and
// tombstones) were removed. Errors: *contract.Error (refused, nothing
// removed), ErrInvalid, ErrClosed, ErrCorrupt.
func (s *Store) Cleanup(resource string, a Authority) (int, error) {
	if err := validResource(resource); err != nil {
		return 0, err
	}
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()
	d, err := s.admit(s.db, resource, contract.OpCleanup, a, s.now())
	if err != nil {
		return 0, err
	}
	return s.deleteAllLocked(resource, d)
}

// deleteAllLocked deletes the resource's records and persists d's record
// in the same batch; the resource lock is held.
func (s *Store) deleteAllLocked(resource string, d contract.Decision) (int, error) {

	b := s.db.NewBatch()
	defer b.Close()
	// Tombstones' expiry entries are keyed by time first, so they are found
	// through the records; everything else is a range per resource.
	prefix := resPrefix(famRecord, resource)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return 0, fmt.Errorf("store: delete all: %w", err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
		e, derr := decodeEntry(it.Value())
		if derr != nil {
			// The range delete removes it anyway; a lost expiry entry is
			// harmless because the sweep re-checks the record.
			continue
		}
		if e.Deleted {
			if err := b.Delete(expiryKey(e.expiresAt, resource, e.ID), nil); err != nil {
				_ = it.Close()
				return 0, fmt.Errorf("store: delete all: %w", err)
			}
		}
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("store: delete all: %w", err)
	}
	for _, fam := range []byte{famRecord, famChange, famKind, famTime, famDigest} {
		p := resPrefix(fam, resource)
		if err := b.DeleteRange(p, prefixEnd(p), nil); err != nil {
			return 0, fmt.Errorf("store: delete all: %w", err)
		}
	}
	// The authority record stays: it is what refuses a request routed
	// here by a stale read once the records are gone.
	if err := persist(b, resource, d); err != nil {
		return 0, err
	}
	if err := b.Delete(stateKey(resource), nil); err != nil {
		return 0, fmt.Errorf("store: delete all: %w", err)
	}
	if err := b.Commit(s.write); err != nil {
		return 0, fmt.Errorf("store: delete all: commit: %w", err)
	}
	return n, nil
}

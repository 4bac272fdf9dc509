package store

import (
	"fmt"

	"github.com/cockroachdb/pebble"
)

// Put writes a record on the user path: a new write (create=true) or an
// update (create=false). The store assigns Version, Seq and UpdatedAt, and
// CreatedAt if rec.CreatedAt is 0; rec.Version, rec.Seq, rec.UpdatedAt and
// rec.DeletedAt are ignored. An update keeps the stored CreatedAt and, when
// rec.Kind is empty, the stored Kind. It returns the record as stored.
//
// The fence is checked in the same atomic step as the write (DESIGN.md "Two
// layers of enforcement"): an active write fence returns a *FencedError
// (errors.Is ErrFenced) and nothing is written. A hard-delete fence does not
// affect Put.
//
// Errors: ErrInvalid (bad resource, id, kind, refs, negative CreatedAt,
// rec.Deleted set), *FencedError, ErrExists (create, id live; the existing
// record is returned), ErrDeleted (create, id tombstoned: never resurrected),
// ErrNotFound (update of a missing or tombstoned id), ErrClosed, ErrCorrupt.
func (s *Store) Put(resource string, rec Record, create bool) (Record, error) {
	return s.PutRouted(resource, rec, create, 0)
}

// PutRouted is Put for a write whose routing decision was taken on the
// routing document of revision routedRev: a post-swap write fence older
// than that revision lets it through (Fence.Yields): the resource has been
// moved back here since. Errors as Put.
func (s *Store) PutRouted(resource string, rec Record, create bool, routedRev uint64) (Record, error) {
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
	fr, err := s.getFenceRecord(s.db, resource)
	if err != nil {
		return Record{}, err
	}
	if err := checkRouted(fr, routedRev); err != nil {
		return Record{}, err
	}
	fence := fr.Fence
	if fence.Active(now) && fence.Level >= FenceWrite && !fence.Yields(routedRev) {
		return Record{}, fenceErr(fence, now)
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
	if err := t.commit(); err != nil {
		return Record{}, err
	}
	return next.Record, nil
}

// Delete deletes a record on the user path, deciding by the fence in the same
// atomic step (paper 001 Table 4): an active write fence refuses with a
// *FencedError; an active hard-delete fence writes a tombstone (Deleted,
// Data and Refs stripped, Version+1, a new Seq, DeletedAt now, expiring after
// Options.TombstoneTTL) so that the delete is exported (paper 001 §4.3);
// without a fence the record is removed physically with its index entries
// and digest contribution.
//
// Errors: ErrInvalid, *FencedError, ErrNotFound (missing or already
// tombstoned), ErrClosed, ErrCorrupt.
func (s *Store) Delete(resource, id string) (DeleteResult, error) {
	return s.DeleteRouted(resource, id, false, 0)
}

// DeleteTombstone is Delete for a caller whose routing decision already
// says "tombstone" (the hard-delete lock is in force at the routing
// document, paper 001 Table 4): it always writes a tombstone, even before
// the orchestrator has set the store's hard-delete fence. An active write
// fence still refuses. Errors as Delete.
func (s *Store) DeleteTombstone(resource, id string) (DeleteResult, error) {
	return s.DeleteRouted(resource, id, true, 0)
}

// DeleteRouted is Delete (DeleteTombstone with forceTombstone) for a delete
// whose routing decision was taken on the routing document of revision
// routedRev: a post-swap write fence older than that revision lets it
// through, as PutRouted. Errors as Delete.
func (s *Store) DeleteRouted(resource, id string, forceTombstone bool, routedRev uint64) (DeleteResult, error) {
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
	fr, err := s.getFenceRecord(s.db, resource)
	if err != nil {
		return DeleteResult{}, err
	}
	if err := checkRouted(fr, routedRev); err != nil {
		return DeleteResult{}, err
	}
	fence := fr.Fence
	active := fence.Active(now) && !(fence.Level >= FenceWrite && fence.Yields(routedRev))
	if active && fence.Level >= FenceWrite {
		return DeleteResult{}, fenceErr(fence, now)
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
	if forceTombstone || (active && fence.Level == FenceHardDelete) {
		ts := s.tombstone(old.Record, now.UnixNano())
		ts.Seq = t.nextSeq()
		if err := t.replace(&old, &ts); err != nil {
			return DeleteResult{}, fmt.Errorf("store: delete: %w", err)
		}
		res = DeleteResult{Tombstoned: true, Tombstone: ts.Record}
	} else if err := t.replace(&old, nil); err != nil {
		return DeleteResult{}, fmt.Errorf("store: delete: %w", err)
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

// DeleteAll removes every trace of resource at this store: records,
// tombstones, indexes, digests and the sequence counter — but not the fence,
// which keeps the old location locked after a swap. It is the
// migration's cleanup (the target on rollback, the source after the cleanup
// window), not a user operation, so it ignores the fence. Afterwards the
// sequence starts again from zero, so sync tokens issued earlier mean
// nothing. It returns how many records (live and tombstones) were removed.
// Errors: ErrInvalid, ErrClosed, ErrCorrupt.
func (s *Store) DeleteAll(resource string) (int, error) {
	n, _, err := s.DeleteAllUnless(resource, nil)
	return n, err
}

// DeleteAllUnless is DeleteAll, but first asks keep, under the resource's
// lock, whether the records must stay: kept reports that keep said so and
// nothing was deleted. No mutation of the resource (a user write, an
// import) can interleave between keep's answer and the deletion. A source
// cleanup asks routing whether the resource is back here, or coming back
// (a later migration importing here): a cleanup request that arrives late
// then deletes nothing a later migration imported (any import after
// keep's answer commits after the deletion, and one before it means that
// migration pre-locked before keep read routing). keep nil: delete. An
// error from keep is returned and nothing is deleted.
func (s *Store) DeleteAllUnless(resource string, keep func() (bool, error)) (n int, kept bool, err error) {
	var k func() (bool, uint64, error)
	if keep != nil {
		k = func() (bool, uint64, error) {
			kept, err := keep()
			return kept, 0, err
		}
	}
	return s.DeleteAllUnlessRouted(resource, k)
}

// DeleteAllUnlessRouted is DeleteAllUnless whose keep also names the
// routing revision its answer was read from: when the records go, the
// resource's routing watermark here rises to it (checkRouted). An operation
// routed before the cleanup's routing — a read decided while this region
// was still the primary and delivered late — is then refused as moved
// instead of reading the emptied store (issue 15 #3; the freshness model's
// rollback and source cleanups).
func (s *Store) DeleteAllUnlessRouted(resource string, keep func() (bool, uint64, error)) (n int, kept bool, err error) {
	if err := validResource(resource); err != nil {
		return 0, false, err
	}
	if err := s.enter(); err != nil {
		return 0, false, err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()
	var rev uint64
	if keep != nil {
		k, r, err := keep()
		if err != nil {
			return 0, false, err
		}
		if k {
			return 0, true, nil
		}
		rev = r
	}
	if rev != 0 {
		fr, err := s.getFenceRecord(s.db, resource)
		if err != nil {
			return 0, false, err
		}
		if rev > fr.MinRev {
			fr.MinRev = rev
			if err := s.putFence(resource, fr); err != nil {
				return 0, false, err
			}
		}
	}
	n, err = s.deleteAllLocked(resource)
	return n, false, err
}

// deleteAllLocked deletes the resource's records; the resource lock is held.
func (s *Store) deleteAllLocked(resource string) (int, error) {

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
	// The fence is kept: after a swap the old location stays locked, and
	// cleaning its data up must not lift the backstop that refuses a write
	// routed there by a stale read (DESIGN.md "Two layers of enforcement").
	// It lapses with its own expiry, or ForceClearFence.
	if err := b.Delete(stateKey(resource), nil); err != nil {
		return 0, fmt.Errorf("store: delete all: %w", err)
	}
	if err := b.Commit(s.write); err != nil {
		return 0, fmt.Errorf("store: delete all: commit: %w", err)
	}
	return n, nil
}

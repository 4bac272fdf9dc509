package store

import (
	"fmt"

	"github.com/cutover/cutover/services/contract"
)

// Import applies a page of exported records at the target (paper 001
// §5.1) under the authority a, which must make this store an importing one
// (contract.Admit): a is joined into the resource's authority record and
// decided on under the resource's lock, in the batch that applies the page,
// so a page of an attempt that has ended (a stamp older than the record:
// rolled back, swapped, reset by a later attempt) changes nothing. With
// reset, every record of the resource is removed first, under the same
// lock (the first page of an attempt's copy: a target holding an older copy
// keeps nothing the source no longer has).
//
// The page is idempotent (A3): an incoming record is applied when its
// Version is higher than the stored one, or equal and the incoming record
// is a tombstone while the stored one is live, or when the id is absent.
// So replaying pages in any order, or a page twice, converges; a tombstone
// beats any older live copy and an older (or equal) live copy never
// overwrites a tombstone (§4.3). Applied records keep Version, CreatedAt,
// UpdatedAt and DeletedAt, and get a fresh local Seq, so the target's own
// change index stays ordered. Incoming tombstones are stored without Data
// and Refs even if the sender sent them; a tombstone without DeletedAt gets
// the current time, which also starts its TTL. An invalid record
// (ErrInvalid, including Version 0) rejects the whole page.
//
// It returns how many records were applied and how many the reset removed.
// Errors: *contract.Error (refused), ErrInvalid, ErrClosed, ErrCorrupt.
func (s *Store) Import(resource string, a Authority, reset bool, recs []Record) (applied, removed int, err error) {
	if err := validResource(resource); err != nil {
		return 0, 0, err
	}
	for i := range recs {
		if err := validateRecord(&recs[i]); err != nil {
			return 0, 0, err
		}
		if recs[i].Version == 0 {
			return 0, 0, invalidf("record %q: version 0", recs[i].ID)
		}
	}
	if err := s.enter(); err != nil {
		return 0, 0, err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()
	op := contract.OpImport
	if reset {
		op = contract.OpReset
	}
	d, err := s.admit(s.db, resource, op, a, s.now())
	if err != nil {
		return 0, 0, err
	}
	if reset {
		// The reset commits on its own, with the record: the page is then
		// applied to an empty resource.
		if removed, err = s.deleteAllLocked(resource, d); err != nil {
			return 0, 0, err
		}
		d.Persist = false
	}
	applied, err = s.applyLocked(resource, recs, d)
	return applied, removed, err
}

// applyLocked applies recs and persists d's record in one batch; the
// resource's lock is held.
func (s *Store) applyLocked(resource string, recs []Record, d contract.Decision) (applied int, err error) {
	now := s.now()
	b := s.db.NewBatch()
	defer b.Close()
	t, err := s.newTxn(resource, b, now)
	if err != nil {
		return 0, err
	}
	for i := range recs {
		in := recs[i]
		old, exists, err := t.get(in.ID)
		if err != nil {
			return 0, err
		}
		if exists && !supersedes(&in, &old.Record) {
			continue
		}
		next := entry{Record: in}
		if next.Deleted {
			stripTombstone(&next.Record)
			if next.DeletedAt == 0 {
				next.DeletedAt = now.UnixNano()
			}
			next.expiresAt = s.expiry(next.DeletedAt)
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
			return 0, fmt.Errorf("store: import: %w", err)
		}
		applied++
	}
	if err := persist(b, resource, d); err != nil {
		return 0, err
	}
	if applied == 0 && !d.Persist {
		return 0, nil
	}
	if err := t.commit(); err != nil {
		return 0, err
	}
	return applied, nil
}

// supersedes reports whether incoming replaces stored under the import rule.
func supersedes(incoming, stored *Record) bool {
	if incoming.Version != stored.Version {
		return incoming.Version > stored.Version
	}
	return incoming.Deleted && !stored.Deleted
}

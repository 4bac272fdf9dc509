package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
)

// The store's user path and its import and cleanup are the participant
// kit's (services/participant) over the store itself (kit.go): the kit
// decides — admission by the authority record in the batch of the
// operation, tombstones under the hard-delete rule, the import rule,
// digests — and these methods keep the store's own API and sentinels.

// kit is the participant kit over s.
func (s *Store) kit() *participant.Participant {
	s.kitOnce.Do(func() {
		s.k = participant.New("", s, participant.Options{SliceWidth: s.opts.SliceWidth, Now: s.now})
	})
	return s.k
}

// open reports ErrClosed once the store is closed (a call that races
// Close may still see the kit's unavailable).
func (s *Store) open() error {
	if err := s.enter(); err != nil {
		return err
	}
	s.leave()
	return nil
}

// fromKit gives the kit's outcomes the store's sentinels: ErrExists,
// ErrDeleted and ErrNotFound (naming id); a CodeInvalid *contract.Error
// wrapped with ErrInvalid as well (both errors.Is and errors.As find
// theirs); a refusal stays a *contract.Error, a storage error itself.
func fromKit(err error, id string) error {
	var ce *contract.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, participant.ErrExists):
		return fmt.Errorf("%w: %q", ErrExists, id)
	case errors.Is(err, participant.ErrDeleted):
		return fmt.Errorf("%w: %q", ErrDeleted, id)
	case errors.Is(err, participant.ErrNotFound):
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	case errors.As(err, &ce) && ce.Code == contract.CodeInvalid:
		return fmt.Errorf("%w: %w", ErrInvalid, ce)
	}
	return err
}

// Put is PutAt without a stamp: the authority record alone decides.
func (s *Store) Put(resource string, rec Record, create bool) (Record, error) {
	return s.PutAt(resource, rec, create, Authority{})
}

// PutAt writes a record on the user path (participant.Participant.Put): a
// new write (create=true) or an update (create=false), routed by the
// authority a (the router's stamp, kvrouting.Decision.Authority; zero:
// none). The store assigns Version, Seq and UpdatedAt, and CreatedAt if
// rec.CreatedAt is 0; an update keeps the stored CreatedAt and, when
// rec.Kind is empty, the stored Kind. It returns the record as stored.
//
// Errors: *contract.Error (moved, locked under the write fence), ErrInvalid
// (bad resource, id, kind, refs, negative CreatedAt, rec.Deleted set),
// ErrExists (create, id live; the existing record is returned), ErrDeleted
// (create, id tombstoned: never resurrected), ErrNotFound (update of a
// missing or tombstoned id), ErrClosed, ErrCorrupt.
func (s *Store) PutAt(resource string, rec Record, create bool, a Authority) (Record, error) {
	if err := s.open(); err != nil {
		return Record{}, err
	}
	got, err := s.kit().Put(context.Background(), resource, rec, create, a)
	return got, fromKit(err, rec.ID)
}

// Delete is DeleteAt without a stamp, removing physically unless the
// authority record says tombstone.
func (s *Store) Delete(resource, id string) (DeleteResult, error) {
	return s.DeleteAt(resource, id, false, Authority{})
}

// DeleteAt deletes a record on the user path
// (participant.Participant.Delete), routed by the authority a (zero: none):
// under the write fence it is refused; where the joined authority
// tombstones deletes (the hard-delete lock), or keepID asks for it (a
// service that keeps deleted ids reserved), it writes a tombstone (Data and
// Refs stripped, Version+1, a new Seq, DeletedAt now, expiring after
// Options.TombstoneTTL) so that the delete is exported (paper 001 §4.3);
// otherwise the record is removed with its index entries and digest
// contribution. DeleteResult.Tombstoned reports whether admission demanded
// the tombstone.
//
// Errors: *contract.Error (moved, locked), ErrInvalid, ErrNotFound
// (missing or already tombstoned), ErrClosed, ErrCorrupt.
func (s *Store) DeleteAt(resource, id string, keepID bool, a Authority) (DeleteResult, error) {
	if err := s.open(); err != nil {
		return DeleteResult{}, err
	}
	ts, err := s.kit().Delete(context.Background(), resource, id, keepID, a)
	if err != nil {
		return DeleteResult{}, fromKit(err, id)
	}
	return DeleteResult{Tombstoned: ts}, nil
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
// secondary for it (participant.Participant.Cleanup). Afterwards the
// sequence starts again from zero. It returns how many records (live and
// tombstones) were removed. Errors: *contract.Error (refused, nothing
// removed; or a storage failure), ErrClosed.
func (s *Store) Cleanup(resource string, a Authority) (int, error) {
	if err := s.open(); err != nil {
		return 0, err
	}
	n, err := s.kit().Cleanup(context.Background(), resource, a)
	return n, fromKit(err, "")
}

// Import applies a page of exported records at the target
// (participant.Participant.Import) under the authority a, which must make
// this store an importing one: with reset, every record of the resource is
// removed first; the page is idempotent (paper 001 A3): a record replaces
// the stored one when its Version is higher, or equal and it is a tombstone
// while the stored one is live, or when the id is absent. It returns how
// many records were applied and how many the reset removed. Errors:
// *contract.Error (refused; or a storage failure), ErrInvalid (an invalid
// record, including Version 0: the whole page), ErrClosed.
func (s *Store) Import(resource string, a Authority, reset bool, recs []Record) (applied, removed int, err error) {
	if err := s.open(); err != nil {
		return 0, 0, err
	}
	res, err := s.kit().Import(context.Background(), contract.ImportRequest{Resource: resource, Authority: a, Reset: reset,
		Page: &contract.Page{Records: recs}})
	return res.Applied, res.Removed, fromKit(err, "")
}

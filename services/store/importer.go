package store

import (
	"fmt"
)

// Import applies a page of exported records at the target (paper 001 §5.1).
// It is idempotent (A3): an incoming record is applied when its Version is
// higher than the stored one, or equal and the incoming record is a tombstone
// while the stored one is live, or when the id is absent. So replaying pages
// in any order, or a page twice, converges; a tombstone beats any older live
// copy and an older (or equal) live copy never overwrites a tombstone (§4.3).
// Applied records keep Version, CreatedAt, UpdatedAt and DeletedAt, and get
// a fresh local Seq, so the target's own change index stays ordered.
// Incoming tombstones are stored without Data and Refs even if the sender
// sent them; a tombstone without DeletedAt gets the current time, which also
// starts its TTL.
//
// Imports are migration writes, not user writes: they do not check the fence
// (the target is fenced against users before cutover). The page is applied in
// one atomic batch; an invalid record (ErrInvalid, including Version 0)
// rejects the whole page. It returns how many records were applied. Errors:
// ErrInvalid, ErrClosed, ErrCorrupt.
//
// Import is the ungated primitive for tools and tests; a migration imports
// with ImportGranted.
func (s *Store) Import(resource string, recs []Record) (applied int, err error) {
	return s.importRecords(resource, recs, nil)
}

// importRecords implements Import and ImportGranted; gate, if set, runs
// under the resource's lock before anything is read or written.
func (s *Store) importRecords(resource string, recs []Record, gate func() error) (applied int, err error) {
	if err := validResource(resource); err != nil {
		return 0, err
	}
	for i := range recs {
		if err := validateRecord(&recs[i]); err != nil {
			return 0, err
		}
		if recs[i].Version == 0 {
			return 0, invalidf("record %q: version 0", recs[i].ID)
		}
	}
	if len(recs) == 0 {
		return 0, nil
	}
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()
	if gate != nil {
		if err := gate(); err != nil {
			return 0, err
		}
	}

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
	if applied == 0 {
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

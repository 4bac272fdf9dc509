package participant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cutover/cutover/services/contract"
)

// The user path: what a service's own API does with a request its router
// stamped with authority a (kvrouting.Decision.Authority; the zero
// Authority: unstamped, decided by the record alone). Each operation is
// admitted (contract.Admit) in the transaction that carries it out, so a
// request routed by a stale document, or reaching a region that is not
// the resource's location, changes nothing.

// Put writes rec on the user path: a new record (create) or an update of a
// live one. The kit assigns Version, Seq and UpdatedAt, and CreatedAt when
// rec.CreatedAt is 0 (an update keeps the stored CreatedAt and, when
// rec.Kind is empty, the stored Kind). It returns the record as stored.
//
// Errors: ErrExists (wrapped) for a create of a live id, with the stored
// record, so a retried post can compare; ErrDeleted for a create of a
// deleted id (never resurrected, paper 001 §4.3); ErrNotFound for an
// update of a missing or deleted id; *contract.Error: CodeLocked (lock
// "moved", or "fence write" with its Retry-After), CodeInvalid (bad
// resource, id, kind, refs, a negative time, rec.Deleted set); otherwise
// the storage's own error (nothing written). ToError maps them all to the
// contract's codes (a storage error: CodeUnavailable).
func (p *Participant) Put(ctx context.Context, resource string, rec contract.Record, create bool, a contract.Authority) (contract.Record, error) {
	if err := p.validRecord(&rec); err != nil {
		return contract.Record{}, err
	}
	if rec.Deleted {
		return contract.Record{}, contract.Errorf(contract.CodeInvalid, "record %q: Put cannot write a tombstone; use Delete", rec.ID)
	}
	op := contract.OpUpdate
	if create {
		op = contract.OpCreate
	}
	var out contract.Record
	var existing *contract.Record
	err := p.run(ctx, resource, func(tx Tx) error {
		existing = nil
		if _, err := p.admit(tx, tx, resource, op, a); err != nil {
			return err
		}
		old, found, err := tx.Get(rec.ID)
		if err != nil {
			return err
		}
		now := p.o.Now().UnixNano()
		next := contract.Record{ID: rec.ID, Kind: rec.Kind, CreatedAt: rec.CreatedAt, UpdatedAt: now, Data: rec.Data, Refs: rec.Refs}
		switch {
		case create && found && old.Deleted:
			return fmt.Errorf("%w: %q", ErrDeleted, rec.ID)
		case create && found:
			existing = &old
			return fmt.Errorf("%w: %q", ErrExists, rec.ID)
		case create:
			next.Version = 1
			if next.CreatedAt == 0 {
				next.CreatedAt = now
			}
		case !found || old.Deleted:
			return fmt.Errorf("%w: %q", ErrNotFound, rec.ID)
		default:
			next.Version = old.Version + 1
			next.CreatedAt = old.CreatedAt
			if next.Kind == "" {
				next.Kind = old.Kind
			}
		}
		if err := p.replace(tx, found, &old, &next); err != nil {
			return err
		}
		out = next
		return nil
	})
	if existing != nil {
		return *existing, err
	}
	return out, err
}

// Delete deletes the live record id on the user path (paper 001 Table 4):
// refused under the write fence; where the authority tombstones deletes
// (the hard-delete lock), or keepID asks for it (a service that keeps
// deleted ids reserved), it writes a tombstone (Data and Refs stripped,
// Version+1, a new Seq, DeletedAt now) that the delta export carries;
// otherwise the record is removed. tombstoned reports that admission
// demanded the tombstone. Errors: as Put's; ErrNotFound for a missing or
// deleted id.
func (p *Participant) Delete(ctx context.Context, resource, id string, keepID bool, a contract.Authority) (tombstoned bool, err error) {
	if err := validID(id); err != nil {
		return false, err
	}
	err = p.run(ctx, resource, func(tx Tx) error {
		tombstoned = false
		d, err := p.admit(tx, tx, resource, contract.OpDelete, a)
		if err != nil {
			return err
		}
		old, found, err := tx.Get(id)
		if err != nil {
			return err
		}
		if !found || old.Deleted {
			return fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		if !keepID && d.Verdict != contract.Tombstone {
			return p.replace(tx, true, &old, nil)
		}
		now := p.o.Now().UnixNano()
		ts := contract.Record{ID: old.ID, Kind: old.Kind, Version: old.Version + 1,
			CreatedAt: old.CreatedAt, UpdatedAt: now, Deleted: true, DeletedAt: now}
		tombstoned = d.Verdict == contract.Tombstone
		return p.replace(tx, true, &old, &ts)
	})
	return tombstoned, err
}

// Get returns the live record id for a read stamped a, admitted on the
// snapshot it is read from. Tombstones are invisible. Errors: ErrNotFound;
// *contract.Error (locked "moved", invalid, unavailable).
func (p *Participant) Get(ctx context.Context, resource, id string, a contract.Authority) (contract.Record, error) {
	if err := validResource(resource); err != nil {
		return contract.Record{}, err
	}
	if err := validID(id); err != nil {
		return contract.Record{}, err
	}
	var out contract.Record
	err := p.st.View(ctx, resource, func(r Reader) error {
		if _, err := p.admit(r, nil, resource, contract.OpRead, a); err != nil {
			return err
		}
		rec, found, err := r.Get(id)
		if err != nil {
			return err
		}
		if !found || rec.Deleted {
			return fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		out = rec
		return nil
	})
	return out, err
}

// List returns, for a read stamped a, up to limit live records with
// CreatedAt in [from, to), ordered by (CreatedAt, ID), after (afterCreated,
// afterID) (afterCreated < from: from the start). limit <= 0 is
// contract.DefaultPageLimit, at most MaxPageRecords. Errors: as Get's.
func (p *Participant) List(ctx context.Context, resource string, from, to, afterCreated int64, afterID string, limit int, a contract.Authority) ([]contract.Record, error) {
	return p.list(ctx, resource, from, to, afterCreated, afterID, limit, &a)
}

// list is List, admitted when a is not nil.
func (p *Participant) list(ctx context.Context, resource string, from, to, afterCreated int64, afterID string, limit int, a *contract.Authority) ([]contract.Record, error) {
	if err := validResource(resource); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = contract.DefaultPageLimit
	}
	limit = min(limit, MaxPageRecords)
	var out []contract.Record
	err := p.st.View(ctx, resource, func(r Reader) error {
		if a != nil {
			if _, err := p.admit(r, nil, resource, contract.OpRead, *a); err != nil {
				return err
			}
		}
		var err error
		out, err = r.Live(from, to, afterCreated, afterID, limit)
		return err
	})
	return out, err
}

// The user path's outcomes that are not the contract's (ToError maps
// them: not_found, conflict, conflict).
var (
	ErrNotFound = errors.New("participant: record not found")
	ErrExists   = errors.New("participant: record exists")
	ErrDeleted  = errors.New("participant: record deleted")
)

// ToError is err as the *contract.Error a service answers with.
func ToError(err error) *contract.Error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound):
		return &contract.Error{Code: contract.CodeNotFound, Message: err.Error()}
	case errors.Is(err, ErrExists), errors.Is(err, ErrDeleted):
		return &contract.Error{Code: contract.CodeConflict, Message: err.Error()}
	}
	return contract.AsError(fail(err))
}

// Limits of what the kit stores (docs/participant.md "Records").
const (
	maxIDLen       = 128
	maxResourceLen = 256
)

func validResource(res string) error {
	if res == "" || len(res) > maxResourceLen || strings.IndexByte(res, 0) >= 0 {
		return contract.Errorf(contract.CodeInvalid, "resource %q: want 1..%d bytes without NUL", trim(res), maxResourceLen)
	}
	return nil
}

func validID(id string) error {
	if id == "" || len(id) > maxIDLen || strings.IndexByte(id, 0) >= 0 {
		return contract.Errorf(contract.CodeInvalid, "record id %q: want 1..%d bytes without NUL", trim(id), maxIDLen)
	}
	return nil
}

// validRecord checks what a write or an import may store.
func (p *Participant) validRecord(r *contract.Record) error {
	if err := validID(r.ID); err != nil {
		return err
	}
	if len(r.Kind) > maxIDLen || strings.IndexByte(r.Kind, 0) >= 0 {
		return contract.Errorf(contract.CodeInvalid, "record %q: kind %q: want at most %d bytes without NUL", r.ID, trim(r.Kind), maxIDLen)
	}
	if len(p.o.Kinds) > 0 && r.Kind != "" && !slices.Contains(p.o.Kinds, r.Kind) {
		return contract.Errorf(contract.CodeInvalid, "record %q: unknown kind %q (this service has %s)", r.ID, trim(r.Kind), strings.Join(p.o.Kinds, ", "))
	}
	if r.CreatedAt < 0 || r.UpdatedAt < 0 || r.DeletedAt < 0 {
		return contract.Errorf(contract.CodeInvalid, "record %q: negative timestamp", r.ID)
	}
	for _, ref := range r.Refs {
		if err := validResource(ref); err != nil {
			return contract.Errorf(contract.CodeInvalid, "record %q: ref: %s", r.ID, contract.AsError(err).Message)
		}
	}
	return nil
}

// trim shortens a value quoted in an error.
func trim(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%s…(%d bytes)", s[:64], len(s))
	}
	return s
}

// Held returns the authority record resource holds here, read from a
// snapshot (tools and checkers; it installs nothing).
func (p *Participant) Held(ctx context.Context, resource string) (contract.Authority, error) {
	if err := validResource(resource); err != nil {
		return contract.Authority{}, err
	}
	var a contract.Authority
	err := fail(p.st.View(ctx, resource, func(r Reader) error {
		var err error
		a, err = r.Authority()
		return err
	}))
	return a, err
}

// Records returns every record of resource here, live and tombstones, in
// change order, read from one snapshot without admission (tools and
// checkers).
func (p *Participant) Records(ctx context.Context, resource string) ([]contract.Record, error) {
	if err := validResource(resource); err != nil {
		return nil, err
	}
	var out []contract.Record
	err := fail(p.st.View(ctx, resource, func(r Reader) error {
		out = nil
		for after := uint64(0); ; {
			recs, err := r.Changes(after, ^uint64(0), MaxPageRecords)
			if err != nil {
				return err
			}
			out = append(out, recs...)
			if len(recs) < MaxPageRecords {
				return nil
			}
			after = recs[len(recs)-1].Seq
		}
	}))
	return out, err
}

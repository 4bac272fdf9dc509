package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/services/contract"
)

// The store keeps one authority record per resource (contract.Authority:
// the role it was last told, stamped with the routing revision that made
// it so) and decides every operation on the resource with
// contract.Admit against it, under the resource's lock, in the batch that
// carries the operation out: the record and the operation commit together
// or not at all. That is the whole backstop of DESIGN.md "Two layers of
// enforcement".

// Authority is the contract's per-resource authority record.
type Authority = contract.Authority

func (s *Store) getAuthority(r reader, res string) (Authority, error) {
	var a Authority
	err := s.getValue(r, authorityKey(res), &a)
	if errors.Is(err, ErrNotFound) {
		return Authority{}, nil
	}
	if err != nil {
		return Authority{}, err
	}
	return a, nil
}

// setAuthority writes a as res's record into b.
func setAuthority(b *pebble.Batch, res string, a Authority) error {
	v, err := msgpack.Marshal(&a)
	if err != nil {
		return fmt.Errorf("store: encode authority: %w", err)
	}
	return b.Set(authorityKey(res), v, nil)
}

// admit decides op on res for a request stamped a, from the record r
// holds; the caller holds res's lock for a mutation (r is then the DB) or
// reads from a snapshot. A refusal is a *contract.Error; the decision says
// whether its record must be written with the operation (Persist).
func (s *Store) admit(r reader, res string, op contract.Op, a Authority, now time.Time) (contract.Decision, error) {
	rec, err := s.getAuthority(r, res)
	if err != nil {
		return contract.Decision{}, err
	}
	d := contract.Admit(rec, op, a, now)
	if e := d.Err(res); e != nil {
		return d, e
	}
	return d, nil
}

// Authority returns resource's authority record (the zero Authority, the
// primary at revision 0, when it was never told one). Errors: ErrInvalid,
// ErrClosed, ErrCorrupt.
func (s *Store) Authority(resource string) (Authority, error) {
	if err := validResource(resource); err != nil {
		return Authority{}, err
	}
	if err := s.enter(); err != nil {
		return Authority{}, err
	}
	defer s.leave()
	return s.getAuthority(s.db, resource)
}

// Admit installs a for op at resource (contract.Admit) and commits the
// record, without carrying anything else out: the migration's operations
// that read after the install (an export, the digests) and Authorize
// (contract.OpAuthorize). Once it returns, every later operation on the
// resource is decided by the record it installed. It returns the record
// held afterwards. Errors: *contract.Error for a refusal, ErrInvalid,
// ErrClosed, ErrCorrupt.
func (s *Store) Admit(resource string, op contract.Op, a Authority) (Authority, error) {
	if err := validResource(resource); err != nil {
		return Authority{}, err
	}
	if err := s.enter(); err != nil {
		return Authority{}, err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()
	d, err := s.admit(s.db, resource, op, a, s.now())
	if err != nil {
		return d.Next, err
	}
	if d.Persist {
		b := s.db.NewBatch()
		defer b.Close()
		if err := setAuthority(b, resource, d.Next); err != nil {
			return Authority{}, err
		}
		if err := b.Commit(s.write); err != nil {
			return Authority{}, fmt.Errorf("store: commit authority: %w", err)
		}
	}
	return d.Next, nil
}

// Repair replaces resource's authority record with a whatever the record
// holds (the operator's repair, `cutover fence clear`, whose approvals the
// caller checks), and returns the record it replaced. A corrupt record is
// replaced too. Errors: ErrInvalid (a malformed a), ErrClosed.
func (s *Store) Repair(resource string, a Authority) (Authority, error) {
	if err := validResource(resource); err != nil {
		return Authority{}, err
	}
	if err := a.Validate(); err != nil {
		return Authority{}, invalidf("%v", contract.AsError(err).Message)
	}
	if err := s.enter(); err != nil {
		return Authority{}, err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()
	prev, err := s.getAuthority(s.db, resource)
	if err != nil && !errors.Is(err, ErrCorrupt) {
		return Authority{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := setAuthority(b, resource, a); err != nil {
		return Authority{}, err
	}
	if err := b.Commit(s.write); err != nil {
		return Authority{}, fmt.Errorf("store: repair authority: %w", err)
	}
	return prev, nil
}

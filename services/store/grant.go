package store

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// An import grant says "this store is the target of the migration attempt
// holding token, until expiry": imports of that attempt are applied only
// while it is in force, checked under the resource's lock in the same step
// as the write (issue 14 #1). The orchestrator grants before it copies and
// revokes after the last delta import, before validation, and on rollback;
// a revoked token is retired, so a late grant request of a finished attempt
// cannot open the store again, and a late import (a redelivered step on a
// second worker, a request buffered across a reconnect, one queued behind
// the contract server's slots) changes nothing.

// storedGrant is the msgpack form of a resource's grant state.
type storedGrant struct {
	Token  string `msgpack:"t,omitempty"`
	Expiry int64  `msgpack:"e,omitempty"`
	// Retired are revoked tokens, most recent last (at most maxRetired).
	Retired []string `msgpack:"r,omitempty"`
}

func (s *Store) getGrant(r reader, res string) (storedGrant, error) {
	var g storedGrant
	err := s.getValue(r, grantKey(res), &g)
	if errors.Is(err, ErrNotFound) {
		return storedGrant{}, nil
	}
	return g, err
}

func (s *Store) putGrant(res string, g storedGrant) error {
	if g.Token == "" && len(g.Retired) == 0 {
		if err := s.db.Delete(grantKey(res), s.write); err != nil {
			return fmt.Errorf("store: clear grant: %w", err)
		}
		return nil
	}
	b, err := msgpack.Marshal(&g)
	if err != nil {
		return fmt.Errorf("store: encode grant: %w", err)
	}
	if err := s.db.Set(grantKey(res), b, s.write); err != nil {
		return fmt.Errorf("store: set grant: %w", err)
	}
	return nil
}

// GrantImport lets imports carrying token be applied to resource until
// expiry. Granting the token in force again moves its expiry to the later
// of the two (a replayed step renews, never shortens); another token
// replaces the grant (one migration of a resource is in flight at a time:
// the routing lock sees to that). Errors: ErrInvalid (empty token, zero
// expiry), ErrTokenRetired (the token was revoked here before: a late
// request of a finished attempt; nothing changes), ErrClosed, ErrCorrupt.
func (s *Store) GrantImport(resource, token string, expiry time.Time) error {
	if err := validResource(resource); err != nil {
		return err
	}
	if token == "" || expiry.IsZero() {
		return invalidf("grant: empty token or zero expiry")
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()
	g, err := s.getGrant(s.db, resource)
	if err != nil {
		return err
	}
	if slices.Contains(g.Retired, token) {
		return fmt.Errorf("%w: the import grant of this token was revoked", ErrTokenRetired)
	}
	e := expiry.UnixNano()
	if g.Token == token && g.Expiry > e {
		e = g.Expiry
	}
	g.Token, g.Expiry = token, e
	return s.putGrant(resource, g)
}

// RevokeImport ends the import grant of token at resource and retires the
// token: later imports and grants under it are refused. Revoking a token
// that holds no grant still retires it (a revoke may overtake its grant on
// the wire). Errors: ErrInvalid, ErrClosed, ErrCorrupt.
func (s *Store) RevokeImport(resource, token string) error {
	if err := validResource(resource); err != nil {
		return err
	}
	if token == "" {
		return invalidf("revoke: empty token")
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()
	g, err := s.getGrant(s.db, resource)
	if err != nil {
		return err
	}
	if g.Token == token {
		g.Token, g.Expiry = "", 0
	}
	if !slices.Contains(g.Retired, token) {
		g.Retired = append(g.Retired, token)
		if len(g.Retired) > maxRetired {
			g.Retired = g.Retired[len(g.Retired)-maxRetired:]
		}
	}
	return s.putGrant(resource, g)
}

// ImportGranted is Import for a migration: the page is applied only if an
// import grant of token is in force at resource, decided under the
// resource's lock in the same step as the write. Errors: those of Import,
// and ErrNoGrant (no grant, another token's, a revoked or an expired one;
// nothing changes).
func (s *Store) ImportGranted(resource, token string, recs []Record) (int, error) {
	if token == "" {
		return 0, invalidf("import: empty grant token")
	}
	return s.importRecords(resource, recs, func() error { return s.granted(resource, token) })
}

// granted is nil if an import grant of token is in force at resource, else
// ErrNoGrant; the resource's lock is held.
func (s *Store) granted(resource, token string) error {
	g, err := s.getGrant(s.db, resource)
	if err != nil {
		return err
	}
	if g.Token != token || s.now().UnixNano() >= g.Expiry {
		return ErrNoGrant
	}
	return nil
}

// ResetGranted deletes every record of resource (live and tombstones, with
// their indexes and digests; the fence and the grant stay) if an import
// grant of token is in force, decided under the resource's lock. It starts
// a full copy into a region that still holds an older copy of the resource
// (a move back within the cleanup window, issue 14 #16): records the
// source no longer has (a physical delete there) must not survive at the
// target. Errors: ErrInvalid, ErrNoGrant (nothing deleted), ErrClosed,
// ErrCorrupt.
func (s *Store) ResetGranted(resource, token string) (int, error) {
	if err := validResource(resource); err != nil {
		return 0, err
	}
	if token == "" {
		return 0, invalidf("reset: empty grant token")
	}
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()
	if err := s.granted(resource, token); err != nil {
		return 0, err
	}
	return s.deleteAllLocked(resource)
}

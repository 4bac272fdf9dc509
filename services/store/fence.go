package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// FenceLevel is how much of the user path a fence blocks (paper 001 Table 4).
type FenceLevel uint8

const (
	// FenceNone blocks nothing.
	FenceNone FenceLevel = iota
	// FenceHardDelete turns deletes into tombstones (paper 001 §4.3); set
	// before the historical export starts.
	FenceHardDelete
	// FenceWrite refuses updates, new writes and deletes with a
	// *FencedError (HTTP 423); set before the delta export, and kept on the
	// old location after the swap.
	FenceWrite
)

// String returns "none", "hard-delete", "write" or "level(N)".
func (l FenceLevel) String() string {
	switch l {
	case FenceNone:
		return "none"
	case FenceHardDelete:
		return "hard-delete"
	case FenceWrite:
		return "write"
	}
	return fmt.Sprintf("level(%d)", uint8(l))
}

// Fence is the per-resource backstop of a migration lock (DESIGN.md "Two
// layers of enforcement"). It carries the lock's token and expiry, so a
// crashed orchestrator cannot fence a resource forever.
type Fence struct {
	// Level is what the fence blocks.
	Level FenceLevel
	// Token is the migration lock token. It authorises changing or clearing
	// the fence and must never be logged whole.
	Token string
	// Expiry is when the fence stops being active, by the store's clock.
	Expiry time.Time
	// SetAt is when the store last wrote the fence (set by the store).
	SetAt time.Time
}

// Active reports whether the fence blocks anything at now: a level above
// FenceNone and now before Expiry.
func (f Fence) Active(now time.Time) bool {
	return f.Level != FenceNone && now.Before(f.Expiry)
}

// storedFence is the msgpack form of a Fence; times are unix nanoseconds.
type storedFence struct {
	Level  uint8  `msgpack:"l"`
	Token  string `msgpack:"t"`
	Expiry int64  `msgpack:"e"`
	SetAt  int64  `msgpack:"a"`
}

func (s *Store) getFence(r reader, res string) (Fence, error) {
	var sf storedFence
	err := s.getValue(r, fenceKey(res), &sf)
	if errors.Is(err, ErrNotFound) {
		return Fence{}, nil
	}
	if err != nil {
		return Fence{}, err
	}
	return Fence{
		Level:  FenceLevel(sf.Level),
		Token:  sf.Token,
		Expiry: time.Unix(0, sf.Expiry),
		SetAt:  time.Unix(0, sf.SetAt),
	}, nil
}

// GetFence returns the stored fence of resource, expired or not (check
// Fence.Active), or the zero Fence if there is none. Errors: ErrInvalid,
// ErrClosed, ErrCorrupt.
func (s *Store) GetFence(resource string) (Fence, error) {
	if err := validResource(resource); err != nil {
		return Fence{}, err
	}
	if err := s.enter(); err != nil {
		return Fence{}, err
	}
	defer s.leave()
	return s.getFence(s.db, resource)
}

// SetFence installs or changes the fence of resource. f.Token must be
// non-empty, f.Level FenceHardDelete or FenceWrite, f.Expiry non-zero and
// within the unix-nanosecond range (years 1678-2262);
// f.SetAt is ignored. Rules:
//
//   - no fence, or the stored fence has expired: f is installed, whatever its
//     token;
//   - same token, higher level (hard-delete -> write): the level is raised and
//     the expiry replaced by f.Expiry (the write lock's shorter expiry);
//   - same token, same level: a renewal; the expiry becomes the later of the
//     two, so a replayed older renewal cannot shorten it;
//   - same token, lower level: nothing changes and nil is returned. Lowering
//     is never needed (the lock lifecycle only escalates, and rollback uses
//     ClearFence), and a stale replay of the hard-delete step arriving after
//     the write step must not re-open writes during the delta export; the
//     stronger fence is already at least what was asked;
//   - another token while the stored fence is active: ErrFenceHeld.
//
// Other errors: ErrInvalid, ErrClosed, ErrCorrupt. Once SetFence returns with
// a write fence, no user mutation of the resource commits until the fence
// expires or is cleared.
func (s *Store) SetFence(resource string, f Fence) error {
	if err := validResource(resource); err != nil {
		return err
	}
	if f.Token == "" {
		return invalidf("empty fence token")
	}
	if f.Level != FenceHardDelete && f.Level != FenceWrite {
		return invalidf("fence level %s", f.Level)
	}
	if f.Expiry.IsZero() || !time.Unix(0, f.Expiry.UnixNano()).Equal(f.Expiry) {
		return invalidf("fence expiry %s not representable in unix nanoseconds", f.Expiry)
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()

	now := s.now()
	cur, err := s.getFence(s.db, resource)
	if err != nil {
		return err
	}
	next := Fence{Level: f.Level, Token: f.Token, Expiry: f.Expiry, SetAt: now}
	if cur.Active(now) {
		switch {
		case cur.Token != f.Token:
			return fmt.Errorf("%w: %s fence until %s", ErrFenceHeld, cur.Level,
				cur.Expiry.UTC().Format(time.RFC3339Nano))
		case f.Level < cur.Level:
			return nil
		case f.Level == cur.Level && cur.Expiry.After(f.Expiry):
			next.Expiry = cur.Expiry
		}
	}
	b, err := msgpack.Marshal(&storedFence{
		Level: uint8(next.Level), Token: next.Token,
		Expiry: next.Expiry.UnixNano(), SetAt: next.SetAt.UnixNano(),
	})
	if err != nil {
		return fmt.Errorf("store: encode fence: %w", err)
	}
	if err := s.db.Set(fenceKey(resource), b, s.write); err != nil {
		return fmt.Errorf("store: set fence: %w", err)
	}
	return nil
}

// ClearFence removes the fence of resource (rollback). token must match the
// stored fence's, unless that fence has expired. No fence: nil. Errors:
// ErrInvalid (bad resource or empty token), ErrFenceHeld, ErrClosed,
// ErrCorrupt.
func (s *Store) ClearFence(resource, token string) error {
	if err := validResource(resource); err != nil {
		return err
	}
	if token == "" {
		return invalidf("empty fence token")
	}
	return s.clearFence(resource, token)
}

// ForceClearFence removes the fence of resource whatever its token (the
// admin force-release, whose approvals are checked by the caller). Errors:
// ErrInvalid, ErrClosed.
func (s *Store) ForceClearFence(resource string) error {
	if err := validResource(resource); err != nil {
		return err
	}
	return s.clearFence(resource, "")
}

// clearFence clears the fence; token "" means force.
func (s *Store) clearFence(resource, token string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()

	if token != "" {
		cur, err := s.getFence(s.db, resource)
		if err != nil {
			return err
		}
		if cur.Level == FenceNone {
			return nil
		}
		if cur.Token != token && cur.Active(s.now()) {
			return fmt.Errorf("%w: %s fence until %s", ErrFenceHeld, cur.Level,
				cur.Expiry.UTC().Format(time.RFC3339Nano))
		}
	}
	if err := s.db.Delete(fenceKey(resource), s.write); err != nil {
		return fmt.Errorf("store: clear fence: %w", err)
	}
	return nil
}

// fenceErr returns the *FencedError for an active fence, token stripped.
func fenceErr(f Fence, now time.Time) error {
	f.Token = ""
	return &FencedError{Fence: f, Now: now}
}

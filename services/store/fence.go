package store

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/services/contract"
)

// FenceLevel is the contract's fence level (contract.FenceLevel), named
// here so that the store's API reads on its own.
type FenceLevel = contract.FenceLevel

// Fence levels (contract.FenceNone, ...).
const (
	// FenceNone blocks nothing.
	FenceNone = contract.FenceNone
	// FenceHardDelete turns deletes into tombstones (paper 001 §4.3).
	FenceHardDelete = contract.FenceHardDelete
	// FenceWrite refuses updates, new writes and deletes with a
	// *FencedError (HTTP 423).
	FenceWrite = contract.FenceWrite
)

// Fence is the contract's per-resource fence (contract.Fence), the
// backstop of a migration lock that the store keeps and checks atomically
// on every mutation (DESIGN.md "Two layers of enforcement").
type Fence = contract.Fence

// storedFence is the msgpack form of a Fence; times are unix nanoseconds.
type storedFence struct {
	Level  uint8  `msgpack:"l"`
	Token  string `msgpack:"t"`
	Expiry int64  `msgpack:"e"`
	SetAt  int64  `msgpack:"a"`
	// SwapRev is Fence.SwapRev (post-swap fences only).
	SwapRev uint64 `msgpack:"sr,omitempty"`
	// ReadRev is Fence.ReadRev.
	ReadRev uint64 `msgpack:"rr,omitempty"`
	// Retired are the tokens cleared at this store for this resource, most
	// recent last (at most maxRetired): a fence request carrying one of them
	// is a late delivery from a migration attempt that has already been
	// rolled back or superseded, and is refused.
	Retired []string `msgpack:"r,omitempty"`
	// MinRev is the resource's routing watermark here: the highest ReadRev
	// of any fence ever set at this store for it. It outlives the fence
	// (expiry and clearing keep it; it only grows), and every operation
	// routed by an older revision is refused as moved (checkRouted).
	MinRev uint64 `msgpack:"mr,omitempty"`
	// SwapIn is the highest routing revision a swap-in notice named: one
	// at which this region is the primary (SetFence, FenceNone with
	// SwapRev). A post-swap fence of an older swap is stale here.
	SwapIn uint64 `msgpack:"si,omitempty"`
}

// fenceRecord is what the store keeps per resource besides its records:
// the fence, the retired tokens and the routing watermark.
type fenceRecord struct {
	Fence
	Retired []string
	MinRev  uint64
	SwapIn  uint64
}

// maxRetired bounds the retired tokens kept per resource. A token is
// retired when its migration clears its fence (rollback) or a later
// migration clears it (moving back); a late request can only come from a
// recent attempt, so the last few suffice.
const maxRetired = 16

func (s *Store) getFence(r reader, res string) (Fence, error) {
	fr, err := s.getFenceRecord(r, res)
	return fr.Fence, err
}

// getFenceRecord returns the fence, the retired tokens and the routing
// watermark of res.
func (s *Store) getFenceRecord(r reader, res string) (fenceRecord, error) {
	var sf storedFence
	err := s.getValue(r, fenceKey(res), &sf)
	if errors.Is(err, ErrNotFound) {
		return fenceRecord{}, nil
	}
	if err != nil {
		return fenceRecord{}, err
	}
	f := Fence{Level: FenceLevel(sf.Level), Token: sf.Token}
	if f.Level != FenceNone {
		f.Expiry, f.SetAt, f.SwapRev, f.ReadRev = time.Unix(0, sf.Expiry), time.Unix(0, sf.SetAt), sf.SwapRev, sf.ReadRev
	}
	return fenceRecord{Fence: f, Retired: sf.Retired, MinRev: sf.MinRev, SwapIn: sf.SwapIn}, nil
}

// putFence stores fr (Level FenceNone: no fence). The watermark is raised
// to the fence's ReadRev, never lowered.
func (s *Store) putFence(res string, fr fenceRecord) error {
	f := fr.Fence
	sf := storedFence{Level: uint8(f.Level), Token: f.Token, Retired: fr.Retired, MinRev: max(fr.MinRev, f.ReadRev), SwapIn: fr.SwapIn}
	if f.Level != FenceNone {
		sf.Expiry, sf.SetAt, sf.SwapRev, sf.ReadRev = f.Expiry.UnixNano(), f.SetAt.UnixNano(), f.SwapRev, f.ReadRev
	} else {
		sf.Token = ""
	}
	if sf.Level == uint8(FenceNone) && len(sf.Retired) == 0 && sf.MinRev == 0 && sf.SwapIn == 0 {
		if err := s.db.Delete(fenceKey(res), s.write); err != nil {
			return fmt.Errorf("store: clear fence: %w", err)
		}
		return nil
	}
	b, err := msgpack.Marshal(&sf)
	if err != nil {
		return fmt.Errorf("store: encode fence: %w", err)
	}
	if err := s.db.Set(fenceKey(res), b, s.write); err != nil {
		return fmt.Errorf("store: set fence: %w", err)
	}
	return nil
}

// checkRouted refuses, with ErrMoved, an operation routed by revision
// routedRev (0: not routed, never refused) below the resource's watermark
// fr.MinRev: the routing that sent it here predates a write fence (or a
// post-swap fence) this store has seen, so the resource has been moving or
// has moved since, and the router must resolve it again (issue 15 #2, #3).
//
// Why a watermark and not only the fences: with fence-driven convergence
// (issue 15 #1) a cache may hold the unlocked document from before the
// pre-lock for its whole TTL (minutes). Locked documents are never cached
// (kvrouting.Document.Cacheable), so every stale routing that can still
// name this region primary is older than the write lock's revision, which
// the Phase 3 write fence brings here as its ReadRev. The watermark keeps
// refusing such routing after the fence has expired or been cleared, or
// when a replayed swap could not set its post-swap fence because a later
// migration had already pre-locked this location (docs/verification.md).
func checkRouted(fr fenceRecord, routedRev uint64) error {
	if routedRev != 0 && routedRev < fr.MinRev {
		return ErrMoved
	}
	return nil
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
//   - another token while the stored fence is active: ErrFenceHeld;
//   - f.SwapRev marks a post-swap fence (Fence.Yields); a renewal without it
//     keeps the stored one; f.ReadRev (Fence.RefusesRead) is never lowered
//     by the same token;
//   - f.Level FenceNone is a routing notice (routingNotice): f.ReadRev
//     raises the routing watermark (checkRouted), f.SwapRev clears a
//     post-swap fence of an older swap, whatever the stored fence and
//     token; every refused request with a ReadRev raises the watermark too;
//   - a post-swap fence (f.SwapRev set) older than a swap-in notice:
//     ErrTokenRetired;
//   - a retired token (one ClearFence named before): ErrTokenRetired. A
//     fence request delivered late, after its attempt was rolled back or a
//     later migration moved the resource back here, must not fence a
//     primary (found by `cutover chaos`: hour-long fences on a primary).
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
	if f.Level == FenceNone && (f.ReadRev != 0 || f.SwapRev != 0) {
		return s.routingNotice(resource, f.ReadRev, f.SwapRev)
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
	fr, err := s.getFenceRecord(s.db, resource)
	if err != nil {
		return err
	}
	// A refused request still raises the watermark to its ReadRev: that
	// revision is one at which this region stopped being authoritative
	// (a write lock, a swap away), so routing older than it is stale here
	// whoever asks, and a late request of a retired token is as good a
	// witness as any (store.checkRouted).
	refuse := func(err error) error {
		if f.ReadRev > fr.MinRev {
			fr.MinRev = f.ReadRev
			if perr := s.putFence(resource, fr); perr != nil {
				return perr
			}
		}
		return err
	}
	cur := fr.Fence
	if slices.Contains(fr.Retired, f.Token) {
		return refuse(fmt.Errorf("%w: the fence of this token was cleared", ErrTokenRetired))
	}
	if f.SwapRev != 0 && f.SwapRev < fr.SwapIn {
		return refuse(fmt.Errorf("%w: a post-swap fence of revision %d, and a later swap (revision %d) made this region the primary", ErrTokenRetired, f.SwapRev, fr.SwapIn))
	}
	next := Fence{Level: f.Level, Token: f.Token, Expiry: f.Expiry, SetAt: now, SwapRev: f.SwapRev, ReadRev: f.ReadRev}
	if cur.Active(now) {
		switch {
		case cur.Token != f.Token:
			return refuse(fmt.Errorf("%w: %s fence until %s", ErrFenceHeld, cur.Level,
				cur.Expiry.UTC().Format(time.RFC3339Nano)))
		case f.Level < cur.Level:
			return refuse(nil)
		case f.Level == cur.Level && cur.Expiry.After(f.Expiry):
			next.Expiry = cur.Expiry
		}
		if f.Token == cur.Token && f.Level >= cur.Level {
			if next.SwapRev == 0 && f.Level == cur.Level {
				next.SwapRev = cur.SwapRev // a renewal without it keeps it
			}
			next.ReadRev = max(next.ReadRev, cur.ReadRev) // never lowered
		}
	}
	fr.Fence = next
	return s.putFence(resource, fr)
}

// routingNotice is SetFence with FenceNone: a notice, not a fence. readRev
// raises the routing watermark (never lowers it). swapRev is a revision at
// which this region is the primary (a swap brought the resource here): a
// post-swap fence of an older swap is stale — the resource left and came
// back — and is cleared whatever its token (which is retired), and a late
// request for one is refused from then on. A move back therefore clears
// the previous migration's fence even when it cannot tell which migration
// (or which of its attempts' tokens) set it.
func (s *Store) routingNotice(resource string, readRev, swapRev uint64) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()
	fr, err := s.getFenceRecord(s.db, resource)
	if err != nil {
		return err
	}
	changed := false
	if readRev > fr.MinRev {
		fr.MinRev, changed = readRev, true
	}
	if swapRev > fr.SwapIn {
		fr.SwapIn, changed = swapRev, true
	}
	if cur := fr.Fence; cur.Level != FenceNone && cur.SwapRev != 0 && cur.SwapRev < swapRev {
		if !slices.Contains(fr.Retired, cur.Token) {
			fr.Retired = append(fr.Retired, cur.Token)
			if len(fr.Retired) > maxRetired {
				fr.Retired = slices.Clone(fr.Retired[len(fr.Retired)-maxRetired:])
			}
		}
		fr.Fence, changed = Fence{}, true
	}
	if !changed {
		return nil
	}
	return s.putFence(resource, fr)
}

// ClearFence removes the fence of resource (rollback, or a migration moving
// the resource back clearing its predecessor's post-swap fence) and retires
// token: SetFence refuses it from then on, so a fence request of that token
// delivered late changes nothing. token must match the stored fence's,
// unless that fence has expired; the token is retired either way. No
// fence: nil. Errors:
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

// clearFence clears the fence and retires token; token "" means force
// (the current fence's token is retired).
func (s *Store) clearFence(resource, token string) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()

	fr, err := s.getFenceRecord(s.db, resource)
	if errors.Is(err, ErrCorrupt) && token == "" {
		// The admin path works on a corrupt fence: it goes, and with it
		// the retired tokens and the watermark it held.
		fr, err = fenceRecord{}, nil
	}
	if err != nil {
		return err
	}
	cur, retired := fr.Fence, fr.Retired
	retire := token
	if token == "" {
		retire = cur.Token
	}
	if retire != "" && !slices.Contains(retired, retire) {
		retired = append(retired, retire)
		if len(retired) > maxRetired {
			retired = slices.Clone(retired[len(retired)-maxRetired:])
		}
	}
	var held error
	next := Fence{}
	if token != "" && cur.Level != FenceNone && cur.Token != token && cur.Active(s.now()) {
		// Another token's fence stays; ours is retired all the same.
		held = fmt.Errorf("%w: %s fence until %s", ErrFenceHeld, cur.Level, cur.Expiry.UTC().Format(time.RFC3339Nano))
		next = cur
	}
	if err := s.putFence(resource, fenceRecord{Fence: next, Retired: retired, MinRev: fr.MinRev, SwapIn: fr.SwapIn}); err != nil {
		return err
	}
	return held
}

// fenceErr returns the *FencedError for an active fence, token stripped.
func fenceErr(f Fence, now time.Time) error {
	f.Token = ""
	return &FencedError{Fence: f, Now: now}
}

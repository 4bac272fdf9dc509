package contract

import (
	"fmt"
	"time"
)

// FenceLevel is how much of the user path a fence blocks (paper 001 Table 4).
// It travels as one msgpack uint8, in Fence and in events.Fenced.
type FenceLevel uint8

// Fence levels, in increasing strength.
const (
	// FenceNone blocks nothing.
	FenceNone FenceLevel = iota
	// FenceHardDelete turns deletes into tombstones (paper 001 §4.3); set
	// before the historical export starts.
	FenceHardDelete
	// FenceWrite refuses updates, new writes and deletes (CodeLocked, HTTP
	// 423); set before the delta export, and kept on the old location after
	// the swap.
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

// Fence is the per-resource backstop of a migration lock that a service
// keeps in its own store (DESIGN.md "Two layers of enforcement"). It
// carries the lock's token and expiry, so a crashed orchestrator cannot
// fence a resource forever.
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
	// SwapRev is, on a post-swap fence (the old location of a committed
	// swap), the routing revision of that swap; 0 on every other fence.
	// A request with Level FenceNone is a routing notice, not a fence:
	// SwapRev then names a revision at which this region is the primary
	// (post-swap fences of older swaps here are stale and go), and ReadRev
	// raises the store's routing watermark (operations routed by an older
	// revision are refused as moved).
	// Such a fence yields to a write whose routing decision was taken on a
	// later revision (Yields).
	SwapRev uint64 `msgpack:",omitempty"`
	// ReadRev, when set, refuses reads decided on a routing revision below
	// it (Refuses): the write lock's revision on the write fence of Phase
	// 3, the swap's on a post-swap fence. A reader whose routing is older
	// resolves again (the resource is moving, or has moved: its copy here
	// may miss writes acknowledged at the new primary).
	ReadRev uint64 `msgpack:",omitempty"`
}

// RefusesRead reports whether f, active, refuses a read decided on the
// routing revision routedRev (0: a read that no routing decided, such as a
// migration's own validation, which is never refused).
func (f Fence) RefusesRead(routedRev uint64) bool {
	return f.ReadRev != 0 && routedRev != 0 && routedRev < f.ReadRev
}

// Yields reports whether f lets through a write routed by a routing
// document of revision routedRev that made this region's decision Allow.
// Only a post-swap fence yields, and only to a revision after its swap:
// the swap made this region a secondary, so a later revision that names it
// primary was written by a later swap that moved the resource back. Users
// at the new primary are then not refused by the previous migration's
// fence while it waits to be cleared, and a router whose routing predates
// the swap (revision ≤ SwapRev, or none: 0) is still refused.
func (f Fence) Yields(routedRev uint64) bool {
	return f.SwapRev != 0 && routedRev > f.SwapRev
}

// Active reports whether the fence blocks anything at now: a level above
// FenceNone and now before Expiry.
func (f Fence) Active(now time.Time) bool {
	return f.Level != FenceNone && now.Before(f.Expiry)
}

// FenceFor builds the fence for a lock: level, token and the lock's expiry
// plus the enforcers' skew (the fence holds as long as any enforcer honours
// the lock; kvrouting.Lock.InForce).
func FenceFor(level FenceLevel, token string, expiry time.Time, skew time.Duration) Fence {
	return Fence{Level: level, Token: token, Expiry: expiry.Add(skew)}
}

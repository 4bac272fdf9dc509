// Package model is an explicit-state, exhaustive model check of the routing
// lock protocol (paper 000 §3–§5.4, paper 001 §4.6): every lock mutation is a
// compare-and-swap on (token, revision) exactly as kvrouting does it, cache
// tiers serve possibly stale copies but read through on an active lock, a
// client writes at the region it resolved, and the source's write fence (its
// exporting authority, contract 2.0) is checked atomically by that write.
// Explore enumerates every reachable state of a small scope breadth-first and
// checks the invariants in each. ExploreAuthority (authority.go) takes this
// protocol as given and checks the data: what the stores do with the
// authorities their requests carry. See docs/verification.md.
package model

import (
	"fmt"
	"strings"
)

// Variant selects the protocol under check: the real one, or a deliberately
// broken one that a test proves the checker catches.
type Variant uint8

// Variants.
const (
	// Correct is the protocol as kvrouting implements it.
	Correct Variant = iota
	// SwapIgnoresToken swaps with any holder's write lock as long as the
	// revision matches (a swap that does not check the token).
	SwapIgnoresToken
	// NoFence makes the client write at the source ignore the write fence:
	// only the routing decision taken earlier protects it.
	NoFence
	// CacheServesLocked serves cached copies that carry an active lock
	// instead of reading through. Not a safety hole by itself: the
	// source's write fence refuses the write the stale decision allowed
	// (TestCacheServingLockedIsMaskedByTheFence); read-through on a lock
	// spares users a 423, it is not what keeps a write from being lost.
	CacheServesLocked
	// FenceExpiresEarly sets the write fence to lapse one tick before the
	// write lock: a client write then lands at the source after the final
	// export and is lost at the swap, with no fence and no swap in sight.
	FenceExpiresEarly
	// NoSkewMargin drops the skew margin from the holders' and takers'
	// rules while one orchestrator's clock lags by a tick (Config.Skew).
	NoSkewMargin
)

var variantNames = [...]string{"correct", "swap-ignores-token", "no-fence", "cache-serves-locked", "fence-expires-early",
	"no-skew-margin"}

// String returns the variant's name.
func (v Variant) String() string { return variantNames[v] }

// Config bounds the scope. Zero values take DefaultConfig's.
type Config struct {
	Variant Variant
	// MaxClock is the last clock value; time advances one step at a time.
	MaxClock uint8
	// MaxCrashes bounds each orchestrator's crashes (each restart takes a
	// fresh token).
	MaxCrashes uint8
	// MaxWrites bounds the client writes.
	MaxWrites uint8
	// TTL is every cache tier's TTL; the convergence delay equals it.
	TTL uint8
	// Leases in clock steps: pre-lock (after the convergence delay),
	// hard-delete and write.
	PreLease, HardDeleteLease, WriteLease uint8
	// StopAtFirst ends the search at the first violation.
	StopAtFirst bool
	// FenceConvergence drops the convergence wait: the hard-delete lock
	// may follow the pre-lock at once, while cache tiers still serve
	// copies fetched before it for up to their TTL.
	FenceConvergence bool
	// Renewals lets a hard-delete holder renew its lock (up to the parent
	// pre-lock lease).
	Renewals bool
	// Skew makes orchestrator 0's clock lag the store's by one tick, and
	// the protocol allow for it: a holder stops one tick early, a taker
	// treats a lock as held one tick past its expiry (paper 000 §4.1,
	// kvrouting.LockConfig.ClockSkew).
	Skew bool
}

// DefaultConfig is the scope the tests and docs/verification.md report.
func DefaultConfig() Config {
	return Config{MaxClock: 4, MaxCrashes: 1, MaxWrites: 2, TTL: 1, PreLease: 2, HardDeleteLease: 2, WriteLease: 2}
}

// SkewConfig is the skew scope: DefaultConfig's client write through the
// cache tiers, with a clock skew of one tick within the margin and
// renewals: pre-lock 4, hard-delete 3, write 3, clock 0..6, one write.
func SkewConfig() Config {
	return Config{Skew: true, Renewals: true, MaxCrashes: 1, MaxClock: 6, MaxWrites: 1, TTL: 1,
		PreLease: 4, HardDeleteLease: 3, WriteLease: 3}
}

// FenceConfig is the fence-convergence scope: SkewConfig's
// client write through the cache tiers, with no convergence wait while
// the tiers keep copies for two ticks — as long as the write lease — so a
// copy fetched before the pre-lock is still served under the write lock.
func FenceConfig() Config {
	c := SkewConfig()
	c.FenceConvergence, c.TTL = true, 2
	return c
}

func (c *Config) ensureDefaults() {
	d := DefaultConfig()
	if c.MaxClock == 0 {
		c.MaxClock = d.MaxClock
	}
	if c.MaxWrites == 0 {
		c.MaxWrites = d.MaxWrites
	}
	if c.TTL == 0 {
		c.TTL = d.TTL
	}
	if c.PreLease == 0 {
		c.PreLease = d.PreLease
	}
	if c.HardDeleteLease == 0 {
		c.HardDeleteLease = d.HardDeleteLease
	}
	if c.WriteLease == 0 {
		c.WriteLease = d.WriteLease
	}
}

// Regions.
const (
	regS uint8 = iota // the source
	regT              // the target
)

// Lock types, as kvrouting.LockType.
const (
	lockNone uint8 = iota
	lockPre
	lockHD
	lockWrite
)

var lockNames = [...]string{"none", "pre", "hd", "write"}

// doc is the routing document (the fields the protocol decides on).
type doc struct {
	Rev, Primary uint8
	LType, LTok  uint8
	LNB, LExp    uint8 // lock not-before and expiry
	PreExp       uint8 // the parent lease: no lock outlives it
	SecTok       uint8 // token of the locked secondary (target before cutover, source after)
	SwappedBy    uint8 // token whose swap made the target primary (0: none)
}

// inForce is kvrouting.Lock.InForce with zero skew.
func (d doc) inForce(now uint8) bool { return d.LType != lockNone && now >= d.LNB && now < d.LExp }

// Orchestrator phases.
const (
	phIdle   uint8 = iota // no token
	phPre                 // believes it holds the pre-lock
	phHD                  // ... the hard-delete lock
	phWrite               // ... the write lock, fence not yet set
	phFenced              // ... the write lock, fence set at the source
	phDone                // finished (swapped, released or gave up)
)

var phaseNames = [...]string{"idle", "pre", "hd", "write", "fenced", "done"}

type orch struct {
	Phase, Tok, Rev, Exp, NB, Crashes uint8
}

// tier is a cache tier's copy (Valid == false: empty).
type tier struct {
	Valid   bool
	Fetched uint8
	Copy    doc
}

type client struct {
	Writes  uint8
	Pending bool  // a decided write not yet applied
	Region  uint8 // where it resolved
	Allowed bool  // the decision taken on the resolved copy
}

// State is one global state. It is comparable: the BFS hashes it.
type State struct {
	Clock    uint8
	Store    doc
	FenceTok uint8 // the write fence at the source (0: none)
	FenceExp uint8
	O        [2]orch
	Tiers    [2]tier
	C        client
}

func (s State) String() string {
	var b strings.Builder
	d := s.Store
	fmt.Fprintf(&b, "t=%d store{rev=%d primary=%s lock=%s tok=%d nb=%d exp=%d sec=%d swapped=%d} fence{tok=%d exp=%d}",
		s.Clock, d.Rev, "ST"[d.Primary:d.Primary+1], lockNames[d.LType], d.LTok, d.LNB, d.LExp, d.SecTok, d.SwappedBy, s.FenceTok, s.FenceExp)
	for i, o := range s.O {
		fmt.Fprintf(&b, " o%d{%s tok=%d rev=%d exp=%d crashes=%d}", i, phaseNames[o.Phase], o.Tok, o.Rev, o.Exp, o.Crashes)
	}
	for i, t := range s.Tiers {
		if t.Valid {
			fmt.Fprintf(&b, " tier%d{rev=%d at=%d %s}", i, t.Copy.Rev, t.Fetched, lockNames[t.Copy.LType])
		}
	}
	fmt.Fprintf(&b, " client{writes=%d pending=%v region=%s allowed=%v}",
		s.C.Writes, s.C.Pending, "ST"[s.C.Region:s.C.Region+1], s.C.Allowed)
	return b.String()
}

// Step is one labelled transition of a trace.
type Step = StepOf[State]

// Trace is a counterexample of the lock protocol's model.
type Trace = TraceOf[State]

// Result is what Explore found.
type Result struct {
	// States is the number of distinct reachable states.
	States int
	// Violations holds one shortest counterexample per broken invariant.
	Violations []Trace
}

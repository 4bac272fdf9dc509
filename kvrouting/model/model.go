// Package model is an explicit-state, exhaustive model check of the routing
// lock protocol (paper 000 §3–§5.4, paper 001 §4.6): every lock mutation is a
// compare-and-swap on (token, revision) exactly as kvrouting does it, cache
// tiers serve possibly stale copies but read through on an active lock, a
// client writes at the region it resolved, and the orchestrator's write fence
// at the source is checked atomically by that write. Explore enumerates every
// reachable state of a small scope breadth-first and checks the invariants in
// each; see docs/verification.md.
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
	// UngatedImport applies every import at the target, whatever its
	// grant (Config.Data): a late import after the swap brings back a
	// record a user deleted at the new primary.
	UngatedImport
	// UnguardedCleanup cleans the target up on a rollback without reading
	// routing first (Config.Data): a late cleanup deletes the data of a
	// target in flight or of the new primary.
	UnguardedCleanup
	// LostSwapEvent recognises a swap only from the swap's own reply: an
	// orchestrator whose reply was lost replays, finds its lock gone, does
	// not consult the document's record of the swap (LastSwap), and rolls
	// back — clearing the source's post-swap fence (Config.Data).
	LostSwapEvent
	// NoSkewMargin drops the skew margin from the holders' and takers'
	// rules while one orchestrator's clock lags by a tick (Config.Skew).
	NoSkewMargin
	// GrantIgnoresRetired lets the grant an import request carries reopen
	// a retired token (Config.Data): a late import of a sealed or rolled
	// back attempt lands at the target.
	GrantIgnoresRetired
)

var variantNames = [...]string{"correct", "swap-ignores-token", "no-fence", "cache-serves-locked", "fence-expires-early",
	"ungated-import", "unguarded-cleanup", "lost-swap-event", "no-skew-margin", "grant-ignores-retired"}

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
	// Data adds the resource's data (one record at the source and the
	// target), the import grant at the target, one import in flight that
	// may land late, physical deletes at the primary (MaxDeletes), the
	// target cleanup of a rollback, and swaps whose reply is lost.
	Data bool
	// MaxDeletes bounds the client's deletes (Data; default 1).
	MaxDeletes uint8
	// FenceConvergence drops the convergence wait: the hard-delete lock
	// may follow the pre-lock at once, while cache tiers still serve
	// copies fetched before it for up to their TTL (issue 15 #1).
	FenceConvergence bool
	// Renewals lets a hard-delete holder renew its lock (up to the parent
	// pre-lock lease).
	Renewals bool
	// NoWrites leaves out the client's writes and the cache tiers they
	// resolve through (the data and skew scopes check other things; the
	// default scope checks those).
	NoWrites bool
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

// DataConfig is the data scope the tests and docs/verification.md report:
// the data layer (imports, grants, late imports, physical deletes,
// cleanups, lost swap replies), hard-delete renewals and a clock skew of
// one tick within the margin; no client writes (DefaultConfig checks
// those). Leases are longer so that a holder stopping a tick early still
// gets through: pre-lock 5, hard-delete 3, write 3, clock 0..7.
func DataConfig() Config {
	return Config{Data: true, NoWrites: true, Renewals: true, Skew: true, MaxCrashes: 1, MaxClock: 7,
		MaxWrites: 1, TTL: 1, PreLease: 5, HardDeleteLease: 3, WriteLease: 3, MaxDeletes: 1}
}

// SkewConfig is the skew scope: DefaultConfig's client write through the
// cache tiers, with a clock skew of one tick within the margin and
// renewals: pre-lock 4, hard-delete 3, write 3, clock 0..6, one write.
func SkewConfig() Config {
	return Config{Skew: true, Renewals: true, MaxCrashes: 1, MaxClock: 6, MaxWrites: 1, TTL: 1,
		PreLease: 4, HardDeleteLease: 3, WriteLease: 3}
}

// FenceConfig is the fence-convergence scope (issue 15 #1): SkewConfig's
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
	if c.Data && c.MaxDeletes == 0 {
		c.MaxDeletes = 1
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
	// Data: Validated is set by a validation that found the target equal
	// to the source after revoking the grant (the swap needs it); Cleanup
	// marks a rolled-back orchestrator whose target cleanup is still due.
	Validated, Cleanup bool
}

// imp is an import request in flight to the target: the page an export
// read (Val) under token Tok. It may land at any later time, or never.
type imp struct {
	Valid    bool
	Tok, Val uint8
	// Exp is the grant the request carries (PageInfo.GrantUntil): it
	// grants its own token until then as it lands, unless the token is
	// retired (contract.ApplyImport).
	Exp uint8
}

// data is the resource's data and the target's import gate (Config.Data).
type data struct {
	// S and T are the record at the source and at the target: 0 absent
	// (never written, deleted, or a tombstone), 1 present.
	S, T uint8
	// Deleted: a user's delete of the record was acknowledged.
	Deleted bool
	Deletes uint8
	// Grant is the token holding the target's import grant and GrantExp
	// its expiry (the holder's lock expiry); Retired the revoked tokens (a
	// bit per token).
	Grant, GrantExp, Retired uint8
	Imp                      imp
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
	D        data
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
	if d := s.D; d != (data{}) {
		fmt.Fprintf(&b, " data{S=%d T=%d deleted=%v grant=%d/%d retired=%b import=%v/%d/%d}",
			d.S, d.T, d.Deleted, d.Grant, d.GrantExp, d.Retired, d.Imp.Valid, d.Imp.Tok, d.Imp.Val)
	}
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

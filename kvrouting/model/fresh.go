package model

import (
	"fmt"
	"strings"
)

// The freshness model (issue 15 #5): fence-driven convergence from the
// clients' side. Explore checks the lock protocol — tokens, revisions,
// leases, skew — with client writes through caches bounded by their TTL.
// ExploreFreshness takes that protocol as given (one orchestrator, its CAS
// steps atomic) and checks what a cache of ANY age can do to the data once
// no convergence wait stands between it and the locks: resolvers that keep
// an unlocked routing document for as long as they like (they drop it at
// any moment, or when a store says "moved"), per-store fences with their
// read revision and swap revision, the stores' routing watermark, reads
// and writes decided on a copy and applied later, and migrations there and
// back, each of which may roll back, skip its post-swap fence or see it
// lapse. Invariants, in every reachable state:
//
//   - no lost write: every acknowledged post is at the current primary;
//   - no resurrection: no acknowledged delete is undone at the primary;
//   - no stale read: a read returns every post and delete acknowledged
//     before it started (a write concurrent with it may or may not show).

// FreshMutation selects the protocol under check: the real one, or one
// with a part removed that a test proves the checker catches.
type FreshMutation uint8

// Freshness mutations.
const (
	// FreshCorrect is the protocol as the stores implement it.
	FreshCorrect FreshMutation = iota
	// NoReadCheck serves reads without checking "moved" (the fence's read
	// revision and the watermark): a stale cache reads the old location.
	NoReadCheck
	// NoStoreFences drops the stores' fences (and so the watermark): only
	// the routing decisions protect the data.
	NoStoreFences
	// NoWatermark keeps the fences but no watermark: once a post-swap
	// fence lapses, or was never set, the old location serves stale
	// routing again.
	NoWatermark
)

var freshMutationNames = [...]string{"correct", "no-read-check", "no-store-fences", "no-watermark"}

func (m FreshMutation) String() string { return freshMutationNames[m] }

// FreshConfig bounds the freshness scope.
type FreshConfig struct {
	Mutation FreshMutation
	// MaxOps bounds the clients' operations in all (default 3).
	MaxOps uint8
	// Migrations bounds the migrations (default 2: there and back).
	Migrations uint8
	// StopAtFirst ends the search at the first violation.
	StopAtFirst bool
}

// DefaultFreshConfig is the scope `make test` checks: three operations.
func DefaultFreshConfig() FreshConfig { return FreshConfig{MaxOps: 3, Migrations: 2} }

// FullFreshConfig is the larger scope docs/verification.md reports (four
// operations; about two minutes and several GB; CUTOVER_MODEL_FULL=1).
func FullFreshConfig() FreshConfig { return FreshConfig{MaxOps: 4, Migrations: 2} }

const (
	freshMsgs    = 2  // message ids
	freshClients = 2  // each with its own resolver cache
	freshRevs    = 12 // routing revisions kept
)

// rdoc is one routing revision as a resolver sees it.
type rdoc struct {
	Primary uint8
	// Locked: the primary holds a lock (never served from a cache in
	// fence mode: its not-before is now). Write: that lock is the write
	// lock (writes refused).
	Locked, Write bool
}

// fstore is one region's store of the resource.
type fstore struct {
	// Msgs: 0 absent, 1 present, 2 tombstone.
	Msgs [freshMsgs]uint8
	// The fence: Active, its read revision and swap revision.
	Fence            bool
	ReadRev, SwapRev uint8
	// MinRev is the routing watermark (store.checkRouted).
	MinRev uint8
}

// merge is an import: a tombstone wins, a record is never resurrected.
func (s *fstore) merge(from fstore) {
	for m := range s.Msgs {
		s.Msgs[m] = max(s.Msgs[m], from.Msgs[m])
	}
}

// Migration phases (one migration at a time holds the lock; the previous
// one may still have its post-swap steps to do).
const (
	mIdle uint8 = iota
	mPre
	mHD
	mCopied
	mWrite
	mFenced
	mDelta
	mSwapped // post-swap fence and previous-fence clear pending
	mDone
)

var migNames = [...]string{"idle", "pre", "hd", "copied", "write", "fenced", "delta", "swapped", "done"}

type fmig struct {
	Phase, Src, Dst, W, SwapRev uint8
	// PostFenced / PrevCleared: the swap step's two follow-ups are done.
	PostFenced, PrevCleared bool
	// Cleaned: the source cleanup after the swap has run.
	Cleaned bool
}

// Client operations.
const (
	opNone uint8 = iota
	opPost
	opDelete
	opRead
)

var opNames = [...]string{"-", "post", "delete", "read"}

type fclient struct {
	// Cache is the revision of the cached document (0: none).
	Cache uint8
	// The operation in flight: decided at Region on revision Rev.
	Op, Msg, Region, Rev uint8
	// Posted / Deleted: the acknowledged posts and deletes when a read
	// started (bit per message).
	Posted, Deleted uint8
}

// FreshState is one global state of the freshness model.
type FreshState struct {
	Docs    [freshRevs]rdoc // Docs[r-1] is revision r
	Rev     uint8           // the current revision
	Stores  [2]fstore
	Mig     [2]fmig // migrations: at most two, one after the other
	NMig    uint8
	C       [freshClients]fclient
	Ops     uint8
	Posted  uint8 // acknowledged posts (bit per message)
	Deleted uint8 // acknowledged deletes
	Issued  uint8 // posts decided (each message posted at most once)
}

func (s FreshState) doc(rev uint8) rdoc { return s.Docs[rev-1] }

func (s *FreshState) write(d rdoc) uint8 {
	s.Rev++
	s.Docs[s.Rev-1] = d
	return s.Rev
}

func (s FreshState) String() string {
	var b strings.Builder
	d := s.doc(s.Rev)
	fmt.Fprintf(&b, "rev=%d primary=%s locked=%v write=%v", s.Rev, "ST"[d.Primary:d.Primary+1], d.Locked, d.Write)
	for r, st := range s.Stores {
		fmt.Fprintf(&b, " %s{msgs=%v fence=%v rr=%d sr=%d min=%d}", "ST"[r:r+1], st.Msgs, st.Fence, st.ReadRev, st.SwapRev, st.MinRev)
	}
	for i := range s.NMig {
		m := s.Mig[i]
		fmt.Fprintf(&b, " m%d{%s %s→%s w=%d swap=%d post=%v prev=%v}", i, migNames[m.Phase], "ST"[m.Src:m.Src+1], "ST"[m.Dst:m.Dst+1], m.W, m.SwapRev, m.PostFenced, m.PrevCleared)
	}
	for i, c := range s.C {
		fmt.Fprintf(&b, " c%d{cache=%d %s", i, c.Cache, opNames[c.Op])
		if c.Op != opNone {
			fmt.Fprintf(&b, " m%d at %s rev %d", c.Msg, "ST"[c.Region:c.Region+1], c.Rev)
		}
		b.WriteString("}")
	}
	fmt.Fprintf(&b, " acked{posted=%02b deleted=%02b}", s.Posted, s.Deleted)
	return b.String()
}

// FreshStep is one labelled transition of a freshness trace.
type FreshStep = StepOf[FreshState]

// FreshTrace is a counterexample of the freshness model.
type FreshTrace = TraceOf[FreshState]

// FreshResult is what ExploreFreshness found.
type FreshResult struct {
	States     int
	Violations []FreshTrace
}

// ExploreFreshness enumerates every reachable state of cfg's scope and
// checks the freshness invariants.
func ExploreFreshness(cfg FreshConfig) FreshResult {
	d := DefaultFreshConfig()
	if cfg.MaxOps == 0 {
		cfg.MaxOps = d.MaxOps
	}
	if cfg.Migrations == 0 {
		cfg.Migrations = d.Migrations
	}
	var init FreshState
	init.write(rdoc{Primary: regS}) // revision 1: the resource at S
	n, fs := search(init, cfg.StopAtFirst, freshCheck,
		func(s FreshState, emit func(string, FreshState, string)) { freshSuccessors(&cfg, s, emit) },
		freshNormalize)
	return FreshResult{States: n, Violations: traces(fs)}
}

// freshCheck checks the state invariants.
func freshCheck(s FreshState) string {
	p := s.Stores[s.doc(s.Rev).Primary]
	for m := range uint8(freshMsgs) {
		bit := uint8(1) << m
		if s.Posted&bit != 0 && p.Msgs[m] == 0 {
			return "no lost write: an acknowledged post is missing at the primary"
		}
		if s.Deleted&bit != 0 && p.Msgs[m] == 1 {
			return "no resurrection: an acknowledged delete is undone at the primary"
		}
	}
	return ""
}

func other(r uint8) uint8 { return 1 - r }

// routed is the store's check of an operation routed by revision rev:
// "moved" (the client resolves again) or nil. Reads also check the fence's
// read revision; writes the fence itself (with the post-swap fence's
// yield to a later revision).
func routedCheck(cfg *FreshConfig, st fstore, op, rev uint8) string {
	if cfg.Mutation == NoReadCheck && op == opRead {
		return ""
	}
	if rev < st.MinRev {
		return "moved"
	}
	if !st.Fence {
		return ""
	}
	if op == opRead {
		if rev < st.ReadRev {
			return "moved"
		}
		return ""
	}
	if st.SwapRev != 0 && rev > st.SwapRev {
		return "" // the post-swap fence yields to a later routing
	}
	if st.SwapRev != 0 {
		return "moved"
	}
	return "fenced"
}

// setFence installs a fence at st (and raises the watermark).
func setFence(cfg *FreshConfig, st *fstore, readRev, swapRev uint8) {
	if cfg.Mutation == NoStoreFences {
		return
	}
	st.Fence, st.ReadRev, st.SwapRev = true, readRev, swapRev
	if cfg.Mutation != NoWatermark {
		st.MinRev = max(st.MinRev, readRev)
	}
}

func clearFence(st *fstore) { st.Fence, st.ReadRev, st.SwapRev = false, 0, 0 }

// raise raises st's watermark to rev: a cleanup (to the revision its guard
// read), a skipped post-swap fence (to the revision that showed the old
// location moved on).
func raise(cfg *FreshConfig, st *fstore, rev uint8) {
	if cfg.Mutation != NoWatermark && cfg.Mutation != NoStoreFences {
		st.MinRev = max(st.MinRev, rev)
	}
}

func freshSuccessors(cfg *FreshConfig, s FreshState, emit func(string, FreshState, string)) {
	// ---- the orchestrator (paper 001 Algorithm 1, fence convergence) ----
	cur := -1
	if s.NMig > 0 {
		cur = int(s.NMig) - 1
	}
	if (cur < 0 || s.Mig[cur].Phase >= mSwapped) && s.NMig < cfg.Migrations && s.Rev < freshRevs {
		// A new migration from the current primary to the other region: its
		// pre-lock (no convergence wait).
		n := s
		src := s.doc(s.Rev).Primary
		n.Mig[n.NMig] = fmig{Phase: mPre, Src: src, Dst: other(src)}
		n.NMig++
		n.write(rdoc{Primary: src, Locked: true})
		emit(fmt.Sprintf("m%d pre-lock", s.NMig), n, "")
	}
	for i := range int(s.NMig) {
		m := s.Mig[i]
		name := func(a string) string { return fmt.Sprintf("m%d %s", i, a) }
		set := func(n FreshState, m fmig) FreshState { n.Mig[i] = m; return n }
		switch m.Phase {
		case mPre:
			n := s
			n.write(rdoc{Primary: m.Src, Locked: true})
			m.Phase = mHD
			emit(name("hard-delete lock"), set(n, m), "")
		case mHD:
			n := s
			n.Stores[m.Dst].merge(n.Stores[m.Src])
			m.Phase = mCopied
			emit(name("historical copy"), set(n, m), "")
		case mCopied:
			n := s
			m.W = n.write(rdoc{Primary: m.Src, Locked: true, Write: true})
			m.Phase = mWrite
			emit(name("write lock"), set(n, m), "")
		case mWrite:
			// The source's write fence, its read revision the write lock's.
			n := s
			setFence(cfg, &n.Stores[m.Src], m.W, 0)
			m.Phase = mFenced
			emit(name("fence source"), set(n, m), "")
		case mFenced:
			n := s
			n.Stores[m.Dst].merge(n.Stores[m.Src])
			m.Phase = mDelta
			emit(name("delta copy"), set(n, m), "")
		case mDelta:
			// The swap: ONE conditional write.
			n := s
			m.SwapRev = n.write(rdoc{Primary: m.Dst})
			m.Phase = mSwapped
			emit(name("swap"), set(n, m), "")
		case mSwapped:
			if !m.PostFenced {
				// The old location's post-swap fence — set, or skipped (a
				// replayed swap step that finds a later migration has
				// pre-locked it, a crash, a deferral). Once a later
				// migration has started, only the skip is possible.
				if i == int(s.NMig)-1 {
					n := s
					setFence(cfg, &n.Stores[m.Src], m.SwapRev, m.SwapRev)
					mm := m
					mm.PostFenced = true
					emit(name("post-swap fence"), set(n, finish(mm)), "")
				}
				n := s
				if d := s.doc(s.Rev); d.Primary != m.Src {
					raise(cfg, &n.Stores[m.Src], s.Rev)
				}
				mm := m
				mm.PostFenced = true
				emit(name("post-swap fence skipped"), set(n, finish(mm)), "")
			}
			if !m.PrevCleared {
				// Clear the previous migration's post-swap fence at our new
				// primary (the watermark stays).
				n := s
				clearFence(&n.Stores[m.Dst])
				mm := m
				mm.PrevCleared = true
				emit(name("clear previous fence"), set(n, finish(mm)), "")
			}
		}
		if m.Phase >= mPre && m.Phase < mSwapped {
			// Rollback: release (the source stays primary), clear the
			// source's fence, clean the target up.
			n := s
			r := n.write(rdoc{Primary: m.Src})
			clearFence(&n.Stores[m.Src])
			n.Stores[m.Dst].Msgs = [freshMsgs]uint8{}
			raise(cfg, &n.Stores[m.Dst], r)
			emit(name("roll back"), set(n, fmig{Phase: mDone, Src: m.Src, Dst: m.Dst, Cleaned: true}), "")
		}
		if m.SwapRev != 0 && !m.Cleaned && s.doc(s.Rev).Primary != m.Src && !s.targets(m.Src) {
			// The source cleanup after the window, guarded by routing: not
			// where the resource is, or is moving to.
			n := s
			n.Stores[m.Src].Msgs = [freshMsgs]uint8{}
			raise(cfg, &n.Stores[m.Src], s.Rev)
			m.Cleaned = true
			emit(name("source cleanup"), set(n, m), "")
		}
	}
	// A post-swap fence lapses (its lease), whenever.
	for r := range uint8(2) {
		if st := s.Stores[r]; st.Fence && st.SwapRev != 0 {
			n := s
			clearFence(&n.Stores[r])
			emit(fmt.Sprintf("post-swap fence at %s lapses", "ST"[r:r+1]), n, "")
		}
	}

	// ---- the clients ----
	for i, c := range s.C {
		name := func(a string) string { return fmt.Sprintf("c%d %s", i, a) }
		if c.Cache != 0 {
			n := s
			n.C[i].Cache = 0
			emit(name("cache entry dropped"), n, "")
		}
		if c.Op == opNone {
			if s.Ops >= cfg.MaxOps {
				continue
			}
			// Resolve: the cached copy, or the leader (cached if unlocked).
			rev, cache := c.Cache, c.Cache
			if rev == 0 {
				rev = s.Rev
				if !s.doc(rev).Locked {
					cache = rev
				}
			}
			d := s.doc(rev)
			decide := func(op, msg uint8) {
				n := s
				n.Ops++
				n.C[i] = fclient{Cache: cache, Op: op, Msg: msg, Region: d.Primary, Rev: rev, Posted: s.Posted, Deleted: s.Deleted}
				label := fmt.Sprintf("%s m%d at %s (rev %d)", opNames[op], msg, "ST"[d.Primary:d.Primary+1], rev)
				if op != opRead && d.Write {
					// Refused by the routing decision (423, nothing written).
					n.C[i] = fclient{Cache: cache}
					label += ": 423 write lock"
				} else if op == opPost {
					n.Issued |= 1 << msg
				}
				emit(name(label), n, "")
			}
			for m := range uint8(freshMsgs) {
				bit := uint8(1) << m
				if s.Issued&bit == 0 {
					decide(opPost, m)
				}
				if s.Posted&bit != 0 && s.Deleted&bit == 0 {
					decide(opDelete, m)
				}
			}
			decide(opRead, 0)
			continue
		}
		// Apply the decided operation at its region's store.
		n := s
		st := &n.Stores[c.Region]
		n.C[i] = fclient{Cache: c.Cache}
		switch routedCheck(cfg, *st, c.Op, c.Rev) {
		case "moved":
			n.C[i].Cache = 0 // resolve again (the API re-runs it once)
			emit(name(opNames[c.Op]+": moved"), n, "")
			continue
		case "fenced":
			emit(name(opNames[c.Op]+": 423 fence"), n, "")
			continue
		}
		bit := uint8(1) << c.Msg
		switch c.Op {
		case opPost:
			st.Msgs[c.Msg] = max(st.Msgs[c.Msg], 1)
			n.Posted |= bit
			emit(name("post applied, acknowledged"), n, "")
		case opDelete:
			st.Msgs[c.Msg] = 2
			n.Deleted |= bit
			emit(name("delete applied, acknowledged"), n, "")
		case opRead:
			inv := ""
			for m := range uint8(freshMsgs) {
				b := uint8(1) << m
				switch {
				case c.Deleted&b != 0 && st.Msgs[m] == 1:
					inv = "no stale read: a read shows a message whose delete was acknowledged before it started"
				case c.Posted&b != 0 && st.Msgs[m] == 0:
					inv = "no stale read: a read misses a post acknowledged before it started"
				}
			}
			emit(name(fmt.Sprintf("read at %s returns %v", "ST"[c.Region:c.Region+1], st.Msgs)), n, inv)
		}
	}
}

// freshNormalize merges states no future step tells apart: a revision no
// cache and no operation in flight refers to (and not the current one) is
// never looked up again.
func freshNormalize(s FreshState) FreshState {
	var keep [freshRevs + 1]bool
	keep[s.Rev] = true
	for _, c := range s.C {
		keep[c.Cache] = true
		if c.Op != opNone {
			keep[c.Rev] = true
		}
	}
	for r := uint8(1); r <= s.Rev; r++ {
		if !keep[r] {
			s.Docs[r-1] = rdoc{}
		}
	}
	return s
}

// targets reports whether a migration in flight is moving to region r.
func (s FreshState) targets(r uint8) bool {
	for i := range s.NMig {
		if m := s.Mig[i]; m.Phase >= mPre && m.Phase < mSwapped && m.Dst == r {
			return true
		}
	}
	return false
}

// finish marks a swapped migration done once both follow-ups are.
func finish(m fmig) fmig {
	if m.PostFenced && m.PrevCleared {
		m.Phase = mDone
	}
	return m
}

package model

import (
	"fmt"
	"strings"
	"time"

	"github.com/cutover/cutover/services/contract"
)

// The authority model: the migration contract 2.0 (docs/participant.md)
// from the data's side. Explore checks the lock protocol — tokens,
// revisions, leases, skew — with client writes through caches bounded by
// their TTL; ExploreAuthority takes that protocol as given (its CAS steps
// atomic) and checks what the stores do with the authorities the
// orchestrator and the routers stamp their requests with, deciding every
// operation with the real contract.Join and contract.Admit:
//
//   - migrations there and back, one holding the lock at a time; each copies
//     page by page (one message a page), the first page resetting the
//     target, validates and swaps, or rolls back at any point before the
//     swap; a lock may expire, its store authorities lapse with it, and
//     another migration take the resource over before the rollback runs;
//   - every request the orchestrator sends a store (an import, a reset, an
//     authority, a cleanup) may also be delivered again later, in any
//     order, or never (a lost reply and the step that retries it, a
//     request held in a buffer, a redelivered step on a second worker);
//     the steps after the swap and the rollback's are steps of their own,
//     so any of them may run late;
//   - clients resolving through caches of any age (an unlocked document,
//     kept as long as they like), deciding at the primary they found, and
//     applying later; a store refusal "moved" drops the cache entry.
//
// Invariants, in every reachable state:
//
//   - no lost write: every acknowledged post not deleted since is at the
//     current primary;
//   - no resurrection: no acknowledged delete is undone at the primary;
//   - no stale read: a read returns every post and delete acknowledged
//     before it started (a delete acknowledged while it runs may show);
//   - no data where the resource never lives: a region that is not the
//     primary holds records only while a migration copies into it, or
//     rolls back from it, or until its source cleanup after a swap;
//   - no refusal at a primary with no migration in flight: the primary's
//     stores admit a write routed by the current, unlocked document.

// AuthorityMutation selects the contract under check: the real one, or one
// with a rule broken that a test proves the checker catches.
type AuthorityMutation uint8

// Authority mutations.
const (
	// AuthorityCorrect is contract.Join and contract.Admit as they are.
	AuthorityCorrect AuthorityMutation = iota
	// AcceptLower installs a stamp older than the record as if it were
	// newer.
	AcceptLower
	// ImportUnchecked applies imports without admission.
	ImportUnchecked
	// ResetWithoutAuthority empties the target on a reset without
	// installing the reset's authority.
	ResetWithoutAuthority
	// WriteAtExporting admits user writes and deletes at an exporting
	// store, whatever their stamp: no write fence, only the routers'
	// decisions.
	WriteAtExporting
	// CleanupUnchecked removes records on a cleanup whatever the
	// authority.
	CleanupUnchecked
	// RollbackKeepsTarget skips a rollback's target cleanup once its lock
	// is no longer in the document (released, expired and taken over).
	RollbackKeepsTarget
	// NoReadCheck serves every stamped read from the store's copy,
	// whatever its authority: a reader with a stale copy of routing
	// reads the old location.
	NoReadCheck
	// ReverseSkipsTombstones: a move back's incremental copy leaves out
	// the tombstones written at the new primary since the swap (scopes
	// with Reverse).
	ReverseSkipsTombstones
	// ReverseLaterToken: a move back's incremental copy starts from a
	// change sequence taken after the swap (the source's changes before
	// it are not copied).
	ReverseLaterToken
	// EmptyDeltaUnfenced: the delta found empty sends the target nothing
	// without the source's write fence installed by the export that
	// found it empty.
	EmptyDeltaUnfenced
	// StaleCopyDigests: the target's digests kept from the last
	// historical import are those from before it (a copy missing its last
	// page).
	StaleCopyDigests
)

var authorityMutationNames = [...]string{"correct", "accept-lower", "import-unchecked", "reset-without-authority", "write-at-exporting", "cleanup-unchecked", "rollback-keeps-target", "no-read-check",
	"reverse-skips-tombstones", "reverse-later-token", "empty-delta-unfenced", "stale-copy-digests"}

func (m AuthorityMutation) String() string { return authorityMutationNames[m] }

// AuthorityConfig bounds the scope.
type AuthorityConfig struct {
	Mutation AuthorityMutation
	// MaxOps bounds the clients' operations in all (at least 1).
	MaxOps uint8
	// Migrations bounds the migrations (at least 1; 2 is there and back).
	Migrations uint8
	// Late bounds the requests kept to be delivered again later (at most
	// 2).
	Late uint8
	// Expiry lets a migration's lock expire before its swap.
	Expiry bool
	// Reverse adds the reverse window (orchestrator/reverse.go): a swap
	// makes the new primary delete as tombstones until its window ends (a
	// step of its own), every copy's delta pass copies only what changed
	// since its historical pass began (its sync token), and a move back
	// within the window whose old copy is the one validated at the swap
	// copies only what changed at the new primary since then, without a
	// reset.
	Reverse bool
	// StopAtFirst ends the search at the first violation.
	StopAtFirst bool
}

// AuthorityScopes are the scopes `make test` checks: two operations with
// no late request, and one operation with one late request.
func AuthorityScopes() []AuthorityConfig {
	return []AuthorityConfig{
		{MaxOps: 2, Migrations: 2, Late: 0, Expiry: true},
		{MaxOps: 1, Migrations: 2, Late: 1, Expiry: true},
	}
}

// ReverseScopes are the scopes of the reverse window `make test` checks:
// there and back with the reverse window, two operations.
func ReverseScopes() []AuthorityConfig {
	return []AuthorityConfig{
		{MaxOps: 2, Migrations: 2, Late: 0, Expiry: true, Reverse: true},
	}
}

// FullAuthorityScopes are the larger scopes docs/verification.md reports
// (`make model-full`): three operations, or two with a late request.
func FullAuthorityScopes() []AuthorityConfig {
	return []AuthorityConfig{
		{MaxOps: 3, Migrations: 2, Late: 0, Expiry: true},
		{MaxOps: 2, Migrations: 2, Late: 1, Expiry: true},
	}
}

const (
	aMsgs    = 2  // message ids
	aClients = 2  // each with its own resolver cache
	aRevs    = 14 // routing revisions kept
	aMigs    = 3
	aLate    = 2
)

// adoc is one routing revision.
type adoc struct {
	Primary uint8
	// Lock is the primary's lock (lockNone, lockPre, lockHD, lockWrite),
	// held by migration Mig-1.
	Lock, Mig uint8
	// Rw is the migration (+1) whose swap's reverse window the document
	// carries (SwapRecord.ReverseUntil); Last is the migration (+1) that
	// last swapped or released (LastMigrationID).
	Rw, Last uint8
}

// Model roles, as contract.Role (with tombstoning primaries apart).
const (
	roPrimary uint8 = iota
	roTomb
	roExporting
	roImporting
	roSecondary
)

var roleNames = [...]string{"primary", "tombstone", "exporting", "importing", "secondary"}

// auth is a store's authority record, or a stamp: the revision, the role,
// and the migration whose lock ends it (Until).
type auth struct{ Rev, Role, Mig uint8 }

func (a auth) String() string {
	if a.Rev == 0 {
		return "-"
	}
	return fmt.Sprintf("%s@%d", roleNames[a.Role], a.Rev)
}

// astore is one region's store of the resource.
type astore struct {
	// Msgs: 0 absent, 1 live, 2 tombstone.
	Msgs [aMsgs]uint8
	Auth auth
	// Dirty (Reverse scopes) marks the messages changed since the store
	// was last validated as a migration's target (the change sequence the
	// swap records); DirtyT those changed since the current copy's sync
	// token. A reset or cleanup marks everything (a cleared store's
	// sequence starts again).
	Dirty, DirtyT uint8
}

// Request kinds the orchestrator sends a store.
const (
	rqNone uint8 = iota
	rqImport
	rqReset
	rqAuthorize
	rqCleanup
)

var rqNames = [...]string{"-", "import", "reset", "authority", "cleanup"}

// areq is a request to a store delivered late: its region, its stamp and,
// for an import, the message and its value.
type areq struct {
	Kind, Region, Msg, Val uint8
	Stamp                  auth
}

// Migration phases.
const (
	amIdle uint8 = iota
	amPre
	amHD    // historical pages (Pages: how many done, in key order)
	amWrite // delta pages
	amValid // validated, the swap next
	amSwapS // swapped: the source's authority to install
	amSwapT // ... then the target's
	amSwapped
	amRelease // rolling back: release
	amRbAuth  // ... the source's authority
	amRbClean // ... the target's cleanup
	amDone
)

var amNames = [...]string{"idle", "pre", "hd", "write", "validated", "swap:auth-src", "swap:auth-tgt", "swapped", "rb:release", "rb:auth-src", "rb:clean", "done"}

type amig struct {
	Phase, Src, Dst uint8
	// H, W, S: the revisions of its hard-delete lock, write lock, swap.
	H, W, S uint8
	Pages   uint8 // pages copied in the current pass
	Expired bool  // its lock expired (before the swap); its reverse window ended (after)
	Cleaned bool  // the source cleanup after the swap has run
	// Sum is the target's live messages when validated (+0x80; 0: none):
	// what the old location must still hold for a move back to copy
	// incrementally. Inc: this migration copies incrementally.
	Sum uint8
	Inc bool
	// TD is the target's live messages (+0x80; 0: none) as its last
	// historical import answered them, kept while the delta may be
	// empty: validation then compares the source with these, and the
	// target must not have changed since (the invariant "no change at the
	// target after its copy's digests").
	TD uint8
}

// Client operations.
const (
	opNone uint8 = iota
	opPost
	opDelete
	opRead
)

var opNames = [...]string{"-", "post", "delete", "read"}

type aclient struct {
	Cache                uint8 // cached revision (0: none)
	Op, Msg, Region, Rev uint8
	Posted, Deleted      uint8 // acknowledged when a read started
}

// AuthorityState is one global state of the authority model.
type AuthorityState struct {
	Docs    [aRevs]adoc
	Rev     uint8
	Stores  [2]astore
	Mig     [aMigs]amig
	NMig    uint8
	Late    [aLate]areq
	C       [aClients]aclient
	Ops     uint8
	Posted  uint8
	Deleted uint8
	Issued  uint8
}

func (s AuthorityState) doc(rev uint8) adoc { return s.Docs[rev-1] }

func (s *AuthorityState) write(d adoc) uint8 {
	s.Rev++
	s.Docs[s.Rev-1] = d
	return s.Rev
}

func (s AuthorityState) String() string {
	var b strings.Builder
	d := s.doc(s.Rev)
	fmt.Fprintf(&b, "rev=%d primary=%s lock=%s", s.Rev, "ST"[d.Primary:d.Primary+1], lockNames[d.Lock])
	for r, st := range s.Stores {
		fmt.Fprintf(&b, " %s{msgs=%v %s}", "ST"[r:r+1], st.Msgs, st.Auth)
	}
	for i := range s.NMig {
		m := s.Mig[i]
		fmt.Fprintf(&b, " m%d{%s %s→%s h=%d w=%d s=%d pages=%d", i, amNames[m.Phase], "ST"[m.Src:m.Src+1], "ST"[m.Dst:m.Dst+1], m.H, m.W, m.S, m.Pages)
		if m.Expired {
			b.WriteString(" expired")
		}
		b.WriteString("}")
	}
	for i, r := range s.Late {
		if r.Kind != rqNone {
			fmt.Fprintf(&b, " late%d{%s %s at %s m%d=%d}", i, rqNames[r.Kind], r.Stamp, "ST"[r.Region:r.Region+1], r.Msg, r.Val)
		}
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

// AuthorityTrace is a counterexample of the authority model.
type AuthorityTrace = TraceOf[AuthorityState]

// AuthorityResult is what ExploreAuthority found.
type AuthorityResult struct {
	States     int
	Violations []AuthorityTrace
	// Incremental counts the transitions into a move back that copies
	// incrementally (Reverse scopes).
	Incremental int
}

// ExploreAuthority enumerates every reachable state of cfg's scope and
// checks the invariants.
func ExploreAuthority(cfg AuthorityConfig) AuthorityResult {
	cfg.MaxOps = max(cfg.MaxOps, 1)
	cfg.Migrations = max(cfg.Migrations, 1)
	cfg.Migrations = min(cfg.Migrations, aMigs)
	cfg.Late = min(cfg.Late, aLate)
	var init AuthorityState
	init.write(adoc{Primary: regS}) // revision 1: the resource at S
	inc := 0
	n, fs := search(init, cfg.StopAtFirst, func(s AuthorityState) string { return authCheck(&cfg, s) },
		func(s AuthorityState, emit func(string, AuthorityState, string)) {
			authSuccessors(&cfg, s, func(label string, n AuthorityState, inv string) {
				if strings.HasSuffix(label, reverseProvenLabel) {
					inc++
				}
				emit(label, n, inv)
			})
		},
		authNormalize)
	return AuthorityResult{States: n, Violations: traces(fs), Incremental: inc}
}

// inForce reports whether the lock of doc d is in force (its migration's
// lock has not expired).
func (s AuthorityState) inForce(d adoc) bool {
	return d.Lock != lockNone && !s.Mig[d.Mig-1].Expired
}

// authAt is kvrouting.Document.AuthorityAt for revision rev at region.
func (s AuthorityState) authAt(rev, region uint8) auth {
	d := s.doc(rev)
	a := auth{Rev: rev, Role: roSecondary, Mig: d.Mig}
	switch {
	case region == d.Primary && d.Lock == lockWrite:
		a.Role = roExporting
	case region == d.Primary && d.Lock == lockHD:
		a.Role = roTomb
	case region == d.Primary && d.Rw != 0:
		a.Role, a.Mig = roTomb, d.Rw // the reverse window
	case region == d.Primary:
		a.Role, a.Mig = roPrimary, 0
	case d.Lock != lockNone:
		a.Role, a.Mig = roImporting, 0
	default:
		a.Mig = 0
	}
	return a
}

// The model's clock for contract.Admit: a lock in force ends at 3 ms, a
// lapsed one at 1 ms, and now is 2 ms.
var modelNow = time.UnixMilli(2)

// contractAuth is a as contract.Authority.
func (s AuthorityState) contractAuth(a auth) contract.Authority {
	if a.Rev == 0 {
		return contract.Authority{}
	}
	c := contract.Authority{Rev: uint64(a.Rev)}
	until := int64(3)
	if a.Mig != 0 && s.Mig[a.Mig-1].Expired {
		until = 1
	}
	switch a.Role {
	case roPrimary:
		c.Role = contract.RolePrimary
	case roTomb:
		c.Role, c.Deletes, c.Until = contract.RolePrimary, contract.DeletesTombstone, until
	case roExporting:
		c.Role, c.Until = contract.RoleExporting, until
	case roImporting:
		c.Role = contract.RoleImporting
	case roSecondary:
		c.Role = contract.RoleSecondary
	}
	return c
}

// admit decides op at store st for a request stamped a, with the real
// contract.Admit (and the mutation's change); it returns the verdict and
// the record to keep.
func (s AuthorityState) admit(cfg *AuthorityConfig, st astore, op contract.Op, a auth) (contract.Verdict, auth) {
	rec, stamp := st.Auth, a
	if cfg.Mutation == AcceptLower && stamp.Rev != 0 && stamp.Rev < rec.Rev {
		rec = auth{} // the older stamp replaces the record
	}
	d := contract.Admit(s.contractAuth(rec), op, s.contractAuth(stamp), modelNow)
	next := st.Auth
	if d.Persist {
		next = rec // the record held, the stricter at one revision
		if d.Next == s.contractAuth(stamp) {
			next = stamp
		}
	}
	v := d.Verdict
	switch {
	case cfg.Mutation == WriteAtExporting && (op == contract.OpCreate || op == contract.OpDelete) &&
		st.Auth.Role == roExporting && (v == contract.Locked || v == contract.Moved):
		v, next = contract.Allow, st.Auth
	case cfg.Mutation == ImportUnchecked && (op == contract.OpImport || op == contract.OpReset):
		v, next = contract.Allow, st.Auth
	case cfg.Mutation == CleanupUnchecked && op == contract.OpCleanup:
		v = contract.Allow
	case cfg.Mutation == NoReadCheck && op == contract.OpRead:
		v = contract.Allow
	case cfg.Mutation == ResetWithoutAuthority && op == contract.OpReset:
		next = st.Auth
	}
	return v, next
}

// deliver carries request r out at its store; it reports whether the store
// admitted it.
func (s *AuthorityState) deliver(cfg *AuthorityConfig, r areq) bool {
	st := &s.Stores[r.Region]
	op := map[uint8]contract.Op{rqImport: contract.OpImport, rqReset: contract.OpReset, rqAuthorize: contract.OpAuthorize, rqCleanup: contract.OpCleanup}[r.Kind]
	v, next := s.admit(cfg, *st, op, r.Stamp)
	if v != contract.Allow {
		return false
	}
	held := st.Auth
	st.Auth = next
	switch r.Kind {
	case rqReset:
		// A reset at the stamp already held removes nothing (a second
		// driver's, after pages of that revision: docs/participant.md
		// "Import"). It is there for validation to pass; validation, not
		// the reset, keeps a copy with extra records from being swapped
		// in, so a reset that never removed anything breaks no invariant
		// here (a scratch mutation found none in the scopes `make test`
		// checks): what this proves is that removing less is safe.
		if next != held || cfg.Mutation == ResetWithoutAuthority {
			st.Msgs = [aMsgs]uint8{}
			st.Dirty, st.DirtyT = allMsgs, allMsgs
		}
		if r.Val != 0 {
			st.Msgs[r.Msg] = max(st.Msgs[r.Msg], r.Val)
		}
	case rqImport:
		if r.Val != 0 && r.Val > st.Msgs[r.Msg] {
			st.Msgs[r.Msg] = r.Val
			st.changed(r.Msg)
		}
	case rqCleanup:
		st.Msgs = [aMsgs]uint8{}
		st.Dirty, st.DirtyT = allMsgs, allMsgs
	}
	return true
}

// reverseProvenLabel ends the label of a hard-delete lock whose move back
// copies incrementally.
const reverseProvenLabel = ", the reverse window proven"

// allMsgs marks every message.
const allMsgs = 1<<aMsgs - 1

// changed marks message m changed at st (a fresh change sequence).
func (st *astore) changed(m uint8) {
	st.Dirty |= 1 << m
	st.DirtyT |= 1 << m
}

// send carries request r out now and, where a late slot is free, emits the
// same step again with a copy of r kept to be delivered later.
func (s AuthorityState) send(cfg *AuthorityConfig, r areq, label string, emit func(string, AuthorityState, string), then func(n *AuthorityState, ok bool)) {
	n := s
	ok := n.deliver(cfg, r)
	then(&n, ok)
	emit(label, n, "")
	for i := range cfg.Late {
		if s.Late[i].Kind == rqNone {
			n.Late[i] = r
			emit(label+" (a copy delayed)", n, "")
			return
		}
	}
}

func authCheck(cfg *AuthorityConfig, s AuthorityState) string {
	cur := s.doc(s.Rev)
	p := s.Stores[cur.Primary]
	for m := range uint8(aMsgs) {
		bit := uint8(1) << m
		if s.Posted&bit != 0 && s.Deleted&bit == 0 && p.Msgs[m] == 0 {
			return "no lost write: an acknowledged post is missing at the primary"
		}
		if s.Deleted&bit != 0 && p.Msgs[m] == 1 {
			return "no resurrection: an acknowledged delete is undone at the primary"
		}
	}
	other := s.Stores[1-cur.Primary]
	if other.Msgs != [aMsgs]uint8{} && !s.mayHold(1-cur.Primary) {
		return "no data where the resource never lives: records at a region no migration copies into, rolls back from or has yet to clean up"
	}
	if !s.inForce(cur) && cur.Lock == lockNone {
		if v, _ := s.admit(&AuthorityConfig{}, p, contract.OpCreate, s.authAt(s.Rev, cur.Primary)); v != contract.Allow {
			return "no refusal at a primary with no migration in flight"
		}
	}
	return ""
}

// mayHold reports whether region r, not the primary, may hold records: a
// migration in flight copies into it or is rolling back from it, or it is
// the source of a swap whose cleanup has not run.
func (s AuthorityState) mayHold(r uint8) bool {
	for i := range s.NMig {
		m := s.Mig[i]
		switch {
		case m.Dst == r && m.Phase >= amPre && m.Phase <= amValid:
		case m.Dst == r && m.Phase >= amRelease && m.Phase <= amRbClean:
		case m.Src == r && m.Phase >= amSwapS && m.Phase <= amSwapped && !m.Cleaned:
		default:
			continue
		}
		return true
	}
	return false
}

func authSuccessors(cfg *AuthorityConfig, s AuthorityState, emit func(string, AuthorityState, string)) {
	cur := s.doc(s.Rev)
	// ---- a new migration: the resource unlocked, or locked by one whose
	// lock has expired (a takeover) ----
	if s.NMig < cfg.Migrations && s.Rev+4 <= aRevs && (cur.Lock == lockNone || !s.inForce(cur)) {
		n := s
		src := cur.Primary
		i := n.NMig
		n.Mig[i] = amig{Phase: amPre, Src: src, Dst: 1 - src}
		n.NMig++
		n.write(adoc{Primary: src, Lock: lockPre, Mig: i + 1, Rw: cur.Rw, Last: cur.Last})
		emit(fmt.Sprintf("m%d pre-lock", i), n, "")
	}
	for i := range s.NMig {
		m := s.Mig[i]
		name := func(a string) string { return fmt.Sprintf("m%d %s", i, a) }
		set := func(n *AuthorityState, mm amig) { n.Mig[i] = mm }
		holds := cur.Mig == i+1 && cur.Lock != lockNone && !m.Expired
		switch m.Phase {
		case amPre:
			if holds && s.Rev < aRevs {
				n := s
				mm := m
				mm.H, mm.Phase, mm.Pages = n.write(adoc{Primary: m.Src, Lock: lockHD, Mig: i + 1, Rw: cur.Rw, Last: cur.Last}), amHD, 0
				mm.Inc = cfg.Reverse && n.reverseProven(cfg, i, mm.H)
				set(&n, mm)
				emit(name(map[bool]string{false: "hard-delete lock", true: "hard-delete lock" + reverseProvenLabel}[mm.Inc]), n, "")
			}
		case amHD, amWrite:
			if !holds {
				break
			}
			lock, op := m.H, contract.OpExportHistorical
			if m.Phase == amWrite {
				lock, op = m.W, contract.OpExportDelta
			}
			stampS, stampT := s.authAt(lock, m.Src), s.authAt(lock, m.Dst)
			if msg := m.Pages; msg < aMsgs {
				// The next page, in key order: the export installs the
				// source's authority and reads; the import (the pass's
				// first page resets the target, but for an incremental
				// copy). With Reverse, a delta pass copies only what
				// changed since the historical pass's token, and an
				// incremental historical pass only what changed since the
				// earlier swap.
				if v, next := s.admit(cfg, s.Stores[m.Src], op, stampS); v == contract.Allow {
					e := s
					e.Stores[m.Src].Auth = next
					src := e.Stores[m.Src]
					if m.Phase == amHD && msg == 0 {
						e.Stores[m.Src].DirtyT = 0 // the sync token
					}
					if m.Phase == amWrite && msg == 0 && src.DirtyT == 0 {
						// An empty delta: the first delta page, read under
						// the write fence just installed, has nothing, and
						// the target is sent nothing (orchestrator/copy.go);
						// validation reads it as it is then.
						if cfg.Mutation == EmptyDeltaUnfenced {
							e.Stores[m.Src].Auth = s.Stores[m.Src].Auth
						}
						mm := m
						mm.Pages = aMsgs
						set(&e, mm)
						emit(name("empty delta, nothing imported"), e, "")
						break
					}
					r := areq{Kind: rqImport, Region: m.Dst, Msg: msg, Val: src.Msgs[msg], Stamp: stampT}
					if m.Phase == amHD && msg == 0 && !m.Inc {
						r.Kind = rqReset
					}
					skip := cfg.Reverse && m.Phase == amWrite && src.DirtyT&(1<<msg) == 0
					if m.Inc && m.Phase == amHD {
						skip = src.Dirty&(1<<msg) == 0 || cfg.Mutation == ReverseSkipsTombstones && r.Val == 2 || cfg.Mutation == ReverseLaterToken
					}
					if skip {
						r.Val = 0 // nothing to copy: the import installs the authority only
					}
					e.send(cfg, r, name(fmt.Sprintf("%s page m%d", map[bool]string{true: "delta", false: "historical"}[m.Phase == amWrite], msg)), emit,
						func(n *AuthorityState, ok bool) {
							if ok {
								mm := m
								mm.Pages++
								mm.TD = 0
								if m.Phase == amHD && msg == aMsgs-1 {
									// The last historical import answers the
									// target's digests (orchestrator/copy.go).
									mm.TD = live(n.Stores[m.Dst]) | 0x80
									if cfg.Mutation == StaleCopyDigests {
										mm.TD = live(s.Stores[m.Dst]) | 0x80
									}
								}
								set(n, mm)
							}
						})
				}
			}
			if m.Pages == aMsgs && m.Phase == amHD && s.Rev < aRevs {
				n := s
				mm := m
				mm.W, mm.Phase, mm.Pages = n.write(adoc{Primary: m.Src, Lock: lockWrite, Mig: i + 1}), amWrite, 0
				set(&n, mm)
				emit(name("write lock"), n, "")
			}
			if m.Pages == aMsgs && m.Phase == amWrite {
				// Validation: the source's digests (stamped with the write
				// lock) against the target's live records.
				if v, _ := s.admit(cfg, s.Stores[m.Src], contract.OpDigests, stampS); v != contract.Allow {
					break
				}
				if m.TD != 0 && m.TD&^0x80 != live(s.Stores[m.Dst]) {
					// An empty delta validates with the digests the last
					// historical import answered: the target must still
					// hold exactly that copy.
					emit(name("validation with the copy's digests"), s, "no change at the target after its copy's digests")
					break
				}
				if live(s.Stores[m.Src]) != live(s.Stores[m.Dst]) {
					if m.Inc && !m.Expired {
						// Under the hard-delete lock in force every change at
						// the source since the earlier swap is exportable:
						// a proven incremental copy is exact.
						emit(name("validation fails"), s, "reverse window: a proven incremental copy differs from the source")
					}
					break // validation fails: the rollback below
				}
				n := s
				mm := m
				mm.Phase = amValid
				if cfg.Reverse {
					mm.Sum = live(s.Stores[m.Dst]) | 0x80
					n.Stores[m.Dst].Dirty = 0 // the change sequence the swap records
				}
				set(&n, mm)
				emit(name("validated"), n, "")
			}
		case amValid:
			if holds && s.Rev < aRevs {
				n := s
				mm := m
				d := adoc{Primary: m.Dst, Last: i + 1}
				if cfg.Reverse {
					d.Rw = i + 1
				}
				mm.S, mm.Phase = n.write(d), amSwapS
				set(&n, mm)
				emit(name("swap"), n, "")
			}
		case amSwapS, amSwapT:
			region := m.Src
			if m.Phase == amSwapT {
				region = m.Dst
			}
			s.send(cfg, areq{Kind: rqAuthorize, Region: region, Stamp: s.authAt(m.S, region)}, name("authority after the swap at "+"ST"[region:region+1]), emit,
				func(n *AuthorityState, ok bool) {
					mm := m
					mm.Phase++
					set(n, mm)
				})
		case amSwapped:
			if !m.Cleaned && s.doc(s.Rev).Primary != m.Src {
				// The source cleanup after the window, stamped by the
				// routing document of its time.
				s.send(cfg, areq{Kind: rqCleanup, Region: m.Src, Stamp: s.authAt(s.Rev, m.Src)}, name("source cleanup"), emit,
					func(n *AuthorityState, ok bool) {
						mm := m
						mm.Cleaned = true
						set(n, mm)
					})
			}
		case amRelease:
			n := s
			if cur.Mig == i+1 && cur.Lock != lockNone && s.Rev < aRevs {
				n.write(adoc{Primary: m.Src, Rw: cur.Rw, Last: i + 1})
			}
			mm := m
			mm.Phase = amRbAuth
			set(&n, mm)
			emit(name("release"), n, "")
		case amRbAuth:
			s.send(cfg, areq{Kind: rqAuthorize, Region: m.Src, Stamp: s.authAt(s.Rev, m.Src)}, name("rollback: the source's authority"), emit,
				func(n *AuthorityState, ok bool) {
					mm := m
					mm.Phase = amRbClean
					set(n, mm)
				})
		case amRbClean:
			if cfg.Mutation == RollbackKeepsTarget && !(cur.Mig == i+1 && cur.Lock != lockNone) {
				n := s
				mm := m
				mm.Phase = amDone
				set(&n, mm)
				emit(name("rollback: its lock taken over, the target left as it is"), n, "")
				break
			}
			s.send(cfg, areq{Kind: rqCleanup, Region: m.Dst, Stamp: s.authAt(s.Rev, m.Dst)}, name("rollback: the target's cleanup"), emit,
				func(n *AuthorityState, ok bool) {
					mm := m
					mm.Phase = amDone
					set(n, mm)
				})
		}
		if cfg.Reverse && m.Sum != 0 && !m.Expired && (m.Phase >= amSwapS && m.Phase <= amSwapped || m.Phase == amDone) {
			n := s
			mm := m
			mm.Expired = true
			set(&n, mm)
			emit(name("reverse window ends"), n, "")
		}
		if m.Phase >= amPre && m.Phase <= amValid {
			n := s
			mm := m
			mm.Phase, mm.Sum = amRelease, 0
			set(&n, mm)
			emit(name("roll back"), n, "")
			if cfg.Expiry && !m.Expired {
				n := s
				mm := m
				mm.Expired = true
				set(&n, mm)
				emit(name("lock expires"), n, "")
			}
		}
	}
	// ---- late requests: delivered, or lost ----
	for i, r := range s.Late {
		if r.Kind == rqNone {
			continue
		}
		n := s
		n.Late[i] = areq{}
		emit(fmt.Sprintf("late %s at %s lost", rqNames[r.Kind], "ST"[r.Region:r.Region+1]), n, "")
		ok := n.deliver(cfg, r)
		emit(fmt.Sprintf("late %s %s at %s delivered (admitted %v)", rqNames[r.Kind], r.Stamp, "ST"[r.Region:r.Region+1], ok), n, "")
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
				if s.doc(rev).Lock == lockNone {
					cache = rev
				}
			}
			d := s.doc(rev)
			decide := func(op, msg uint8) {
				n := s
				n.Ops++
				n.C[i] = aclient{Cache: cache, Op: op, Msg: msg, Region: d.Primary, Rev: rev, Posted: s.Posted, Deleted: s.Deleted}
				label := fmt.Sprintf("%s m%d at %s (rev %d)", opNames[op], msg, "ST"[d.Primary:d.Primary+1], rev)
				if op != opRead && d.Lock == lockWrite && s.inForce(d) {
					n.C[i] = aclient{Cache: cache} // refused by the routing decision: 423
					label += ": 423 write lock"
				} else if op == opPost {
					n.Issued |= 1 << msg
				}
				emit(name(label), n, "")
			}
			for m := range uint8(aMsgs) {
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
		// Apply the decided operation at its region's store, stamped with
		// the authority of the document it was decided on.
		n := s
		st := &n.Stores[c.Region]
		n.C[i] = aclient{Cache: c.Cache}
		stamp := s.authAt(c.Rev, c.Region)
		op := map[uint8]contract.Op{opPost: contract.OpCreate, opDelete: contract.OpDelete, opRead: contract.OpRead}[c.Op]
		v, next := s.admit(cfg, *st, op, stamp)
		switch v {
		case contract.Moved:
			n.C[i].Cache = 0 // resolve again
			emit(name(opNames[c.Op]+": moved"), n, "")
			continue
		case contract.Allow, contract.Tombstone:
		default:
			emit(name(fmt.Sprintf("%s: %s", opNames[c.Op], v)), n, "")
			continue
		}
		if c.Op != opRead {
			st.Auth = next
		}
		bit := uint8(1) << c.Msg
		switch c.Op {
		case opPost:
			if st.Msgs[c.Msg] == 0 {
				st.changed(c.Msg)
			}
			st.Msgs[c.Msg] = max(st.Msgs[c.Msg], 1)
			n.Posted |= bit
			emit(name("post applied, acknowledged"), n, "")
		case opDelete:
			st.Msgs[c.Msg] = 0
			if v == contract.Tombstone || s.doc(c.Rev).Lock == lockHD && s.inForce(s.doc(c.Rev)) {
				st.Msgs[c.Msg] = 2
				st.changed(c.Msg)
			} else { // a physical delete leaves no change to export
				st.Dirty &^= 1 << c.Msg
				st.DirtyT &^= 1 << c.Msg
			}
			n.Deleted |= bit
			emit(name(fmt.Sprintf("delete applied (%s), acknowledged", v)), n, "")
		case opRead:
			inv := ""
			for m := range uint8(aMsgs) {
				b := uint8(1) << m
				switch {
				case c.Deleted&b != 0 && st.Msgs[m] == 1:
					inv = "no stale read: a read shows a message whose delete was acknowledged before it started"
				case c.Posted&b != 0 && s.Deleted&b == 0 && st.Msgs[m] == 0:
					inv = "no stale read: a read misses a post acknowledged before it started"
				}
			}
			emit(name(fmt.Sprintf("read at %s returns %v", "ST"[c.Region:c.Region+1], st.Msgs)), n, inv)
		}
	}
}

// live is the set of live messages of st, as the digests see them.
func live(st astore) uint8 {
	var b uint8
	for m, v := range st.Msgs {
		if v == 1 {
			b |= 1 << m
		}
	}
	return b
}

// authNormalize merges states no future step tells apart: what a finished
// step no longer needs is cleared, a revision no one refers to is dropped,
// and the revisions left are renumbered 1, 2, ... in order (only their
// order and equality matter), so a migration's states are the same states
// whatever revisions the migrations before it used.
func authNormalize(s AuthorityState) AuthorityState {
	for i := range s.NMig {
		m := &s.Mig[i]
		if m.Phase == amSwapped && m.Cleaned {
			m.Phase = amDone
		}
		if m.Phase != amHD {
			m.H = 0
		}
		if m.Phase != amWrite {
			m.W = 0
		}
		if m.Phase != amSwapS && m.Phase != amSwapT {
			m.S = 0
		}
		if m.Phase != amHD && m.Phase != amWrite {
			m.Pages = 0
			m.TD = 0
		}
		if m.Phase == amDone && (m.Expired || m.Sum == 0) {
			m.Src, m.Dst, m.Cleaned, m.Sum = 0, 0, false, 0
		}
		if m.Phase != amHD && m.Phase != amWrite {
			m.Inc = false
		}
	}
	for i := range s.C {
		if s.C[i].Op != opRead {
			s.C[i].Posted, s.C[i].Deleted = 0, 0
		}
	}
	// Every revision referred to, and whether as a document.
	var ref, doc [aRevs + 1]bool
	mark := func(r uint8, asDoc bool) {
		ref[r] = true
		doc[r] = doc[r] || asDoc
	}
	mark(s.Rev, true)
	for _, c := range s.C {
		mark(c.Cache, true)
		if c.Op != opNone {
			mark(c.Rev, true)
		}
	}
	for i := range s.NMig {
		m := s.Mig[i]
		mark(m.H, true)
		mark(m.W, true)
		mark(m.S, true)
	}
	for _, st := range s.Stores {
		mark(st.Auth.Rev, false)
	}
	for _, r := range s.Late {
		mark(r.Stamp.Rev, false)
	}
	var to [aRevs + 1]uint8
	var docs [aRevs]adoc
	n := uint8(0)
	for r := uint8(1); r <= aRevs; r++ {
		if !ref[r] {
			continue
		}
		n++
		to[r] = n
		if doc[r] {
			docs[n-1] = s.Docs[r-1]
		}
	}
	s.Docs = docs
	s.Rev = to[s.Rev]
	for i := range s.C {
		s.C[i].Cache = to[s.C[i].Cache]
		if s.C[i].Op != opNone {
			s.C[i].Rev = to[s.C[i].Rev]
		}
	}
	for i := range s.NMig {
		m := &s.Mig[i]
		m.H, m.W, m.S = to[m.H], to[m.W], to[m.S]
	}
	for i := range s.Stores {
		s.Stores[i].Auth.Rev = to[s.Stores[i].Auth.Rev]
	}
	for i := range s.Late {
		s.Late[i].Stamp.Rev = to[s.Late[i].Stamp.Rev]
	}
	return s
}

// reverseProven is orchestrator/reverse.go's proof, for migration i whose
// hard-delete lock is revision h, in n (the step's state, changed: the
// authorities it installs): the routing document before it carries the
// reverse window of a swap that moved the resource from i's target to its
// source, no migration released since, the window has not ended, and the
// old location — told it is importing, so no cleanup deletes it from now
// on — holds exactly what was validated at that swap. The source is told
// its hard-delete authority in the same step (tombstones from now on).
func (n *AuthorityState) reverseProven(cfg *AuthorityConfig, i, h uint8) bool {
	m := n.Mig[i]
	prev := n.doc(h - 1)
	if prev.Rw == 0 || prev.Last != prev.Rw {
		return false
	}
	j := n.Mig[prev.Rw-1]
	if j.Src != m.Dst || j.Dst != m.Src || j.Expired || j.Sum == 0 {
		return false
	}
	if !n.deliver(cfg, areq{Kind: rqAuthorize, Region: m.Dst, Stamp: n.authAt(h, m.Dst)}) ||
		!n.deliver(cfg, areq{Kind: rqAuthorize, Region: m.Src, Stamp: n.authAt(h, m.Src)}) {
		return false
	}
	return live(n.Stores[m.Dst])|0x80 == j.Sum
}

package kvrouting

import (
	"fmt"
	"time"

	"github.com/cutover/cutover/services/contract"
)

// OpClass is the class of a user operation (paper 001 §3.2). The class is
// semantic: each service maps its API operations onto these four.
type OpClass uint8

// Operation classes.
const (
	OpRead OpClass = iota
	OpUpdate
	OpNewWrite
	OpDelete
	opClassEnd
)

var opClassNames = [...]string{"read", "update", "new-write", "delete"}

// String returns the class name.
func (c OpClass) String() string {
	if c < opClassEnd {
		return opClassNames[c]
	}
	return fmt.Sprintf("OpClass(%d)", uint8(c))
}

// ParseOpClass parses a class name as printed by String.
func ParseOpClass(s string) (OpClass, error) {
	for i, n := range opClassNames {
		if n == s {
			return OpClass(i), nil
		}
	}
	return 0, invalidf("operation class %q", s)
}

// Outcome is what a service does with an operation.
type Outcome uint8

// Outcomes of Decide.
const (
	// Allow: perform the operation as asked.
	Allow Outcome = iota
	// Tombstone: perform a delete as a tombstone (paper 001 §4.3).
	Tombstone
	// Reject: refuse with HTTP 423 and Retry-After (paper 001 §4.4).
	Reject
)

var outcomeNames = [...]string{"allow", "tombstone", "reject"}

// String returns the outcome's name.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Reasons a decision restricts an operation.
const (
	ReasonNone             = ""
	ReasonHardDelete       = "hard-delete lock"
	ReasonWriteLock        = "write lock"
	ReasonLockedSecondary  = "locked secondary"
	ReasonNotAuthoritative = "not authoritative"
)

// Decision is the outcome for one operation at one region.
type Decision struct {
	Outcome Outcome
	// Reason names the lock (or the missing authority) behind a restriction.
	Reason string
	// Lock is the lock that decided, zero when none did.
	Lock Lock
	// Primary is the resource's authoritative region.
	Primary string
	// Revision is the routing revision of the document decided on.
	Revision uint64
	// Authority is the region's authority by the document decided on
	// (Document.AuthorityAt): the stamp the request carries to the store,
	// which joins it into its own record and decides the operation again,
	// atomically with it (contract.Admit).
	Authority contract.Authority
	// RetryAfter is, for a rejection, how long the restriction can last at
	// most (the lock's remaining lease plus skew). Clients back off far less
	// than this; it is a bound, not a schedule.
	RetryAfter time.Duration
	// RetryHint is, for a rejection, when a retry is expected to succeed:
	// under a write lock the rest of the Phase 3 it is expected to last
	// (WriteLockHint); at a region that is not the primary, 0 — resolve
	// the routing again and retry at once. It is what a 423's Retry-After
	// says, never more than RetryAfter.
	RetryHint time.Duration
}

// ExpectedWriteLock is how long a write lock is expected to be held: the
// Phase 3 of a migration (the demo's p99 is under a second), not its lease
// (10 s by default), which only bounds it.
const ExpectedWriteLock = time.Second

// MinRetryHint is the hint of a write lock (or fence) held longer than
// expected: retry soon, the lock ends at the latest at its expiry.
const MinRetryHint = 100 * time.Millisecond

// WriteLockHint is the Retry-After of a write lock (or a write fence) set at
// start and bounded by bound: what remains of ExpectedWriteLock, at least
// MinRetryHint, at most bound.
func WriteLockHint(start, now time.Time, bound time.Duration) time.Duration {
	h := max(ExpectedWriteLock-now.Sub(start), MinRetryHint)
	return max(min(h, bound), 0)
}

// Decide applies paper 001 Table 4 (DESIGN.md "Fencing by operation class")
// to an operation of class op arriving at region, given the routing document
// the request resolved. It is pure: the caller must take the decision before
// any storage mutation (paper 001 §5.2).
//
//	lock in force at the location   read   update  new write  delete
//	none                            allow  allow   allow      allow
//	pre-lock                        allow  allow   allow      allow
//	hard-delete lock                allow  allow   allow      tombstone
//	write lock                      allow  423     423        423
//	locked secondary                allow  423     423        423
//
// A region that is neither the primary nor a locked secondary is not
// authoritative: mutations there are rejected too (single write authority,
// paper 001 Proposition 3), reads are allowed as for a locked secondary.
func Decide(doc *Document, region string, op OpClass, now time.Time, skew time.Duration) Decision {
	d := Decision{Primary: doc.Primary.Region, Revision: doc.Revision, Authority: doc.AuthorityAt(region, skew)}
	if op == OpRead {
		return d // reads are never blocked (paper 001 §3.3)
	}
	if region != doc.Primary.Region {
		d.Outcome = Reject
		d.Reason = ReasonNotAuthoritative
		d.RetryAfter = time.Second
		if s := doc.Secondary; s != nil && s.Region == region && s.Lock.InForce(now, skew) {
			d.Reason = ReasonLockedSecondary
			d.Lock = s.Lock
		}
		return d
	}
	l := doc.Primary.Lock
	if !l.InForce(now, skew) {
		return d
	}
	switch l.Type {
	case LockHardDelete:
		if op == OpDelete {
			d.Outcome = Tombstone
			d.Reason = ReasonHardDelete
			d.Lock = l
		}
	case LockWrite:
		d.Outcome = Reject
		d.Reason = ReasonWriteLock
		d.Lock = l
		d.RetryAfter = l.Expiry.Add(skew).Sub(now)
		d.RetryHint = WriteLockHint(l.NotBefore, now, d.RetryAfter)
	}
	return d
}

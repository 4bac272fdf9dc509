package contract

import (
	"fmt"
	"time"
)

// Op is an operation on a resource as admission sees it: the four classes
// of user operation (paper 001 §3.2) and the migration's own.
type Op string

// Operations.
const (
	// OpRead: a user read (a get, a list).
	OpRead Op = "read"
	// OpUpdate: a user change of an existing record.
	OpUpdate Op = "update"
	// OpCreate: a user write of a new record.
	OpCreate Op = "create"
	// OpDelete: a user delete.
	OpDelete Op = "delete"
	// OpExportHistorical: one page of the historical copy, at the source.
	OpExportHistorical Op = "export-historical"
	// OpExportDelta: one page of the delta copy, at the source.
	OpExportDelta Op = "export-delta"
	// OpImport: one page applied at the target.
	OpImport Op = "import"
	// OpReset: every record of the resource removed at the target before
	// an attempt's copy starts (ImportRequest.Reset).
	OpReset Op = "reset"
	// OpDigests: the slice digests read for validation.
	OpDigests Op = "digests"
	// OpCleanup: every record of the resource removed where it no longer
	// lives.
	OpCleanup Op = "cleanup"
	// OpAuthorize: the authority installed and nothing else.
	OpAuthorize Op = "authorize"
)

// Ops lists every operation, the user's first.
var Ops = []Op{OpRead, OpUpdate, OpCreate, OpDelete, OpExportHistorical, OpExportDelta, OpImport, OpReset, OpDigests, OpCleanup, OpAuthorize}

// user reports whether op is a user operation.
func (op Op) user() bool {
	return op == OpRead || op == OpUpdate || op == OpCreate || op == OpDelete
}

// Verdict is admission's answer.
type Verdict string

// Verdicts.
const (
	// Allow: carry the operation out as asked (a delete removes the
	// record).
	Allow Verdict = "allow"
	// Tombstone: carry a delete out as a tombstone.
	Tombstone Verdict = "tombstone"
	// Moved: refused, the request was routed by a revision older than the
	// record, or to a store that is not the resource's location: resolve
	// the routing again and retry at once (HTTP 423, Retry-After 0, lock
	// "moved").
	Moved Verdict = "moved"
	// Locked: refused under the write fence (HTTP 423); retry after
	// Decision.RetryAfter.
	Locked Verdict = "locked"
	// Refused: the migration's request does not fit the record (stale, a
	// conflicting authority at one revision, or a role that does not
	// permit the operation): CodeConflict.
	Refused Verdict = "refused"
	// Invalid: a migration operation without a stamp, or a malformed
	// stamp: CodeInvalid.
	Invalid Verdict = "invalid"
)

// MaxRetryAfter caps a Locked verdict's Retry-After: the write lock is
// expected to be held for well under a second (Phase 3), not its lease,
// which only bounds it.
const MaxRetryAfter = time.Second

// Decision is what Admit decided.
type Decision struct {
	Verdict Verdict
	// Next is the record to keep: rec joined with the stamp. Persist
	// tells whether it must be written (in the same transaction as the
	// operation): a refused operation and a user read change nothing. An
	// allowed reset removes the resource's records only when Persist: at
	// the stamp already held it repeats a reset of that revision, whose
	// pages may have landed since (a second driver of the same step).
	Next    Authority
	Persist bool
	// RetryAfter is a Locked verdict's Retry-After: the rest of the write
	// fence, at most MaxRetryAfter.
	RetryAfter time.Duration
	// Why explains a refusal.
	Why string
}

// Admit decides op on a resource whose record is rec, for a request
// stamped req (req.Rev 0: no stamp), at the participant's clock now. It is
// pure; a participant calls it under the resource's lock (or in the
// transaction) that also carries the operation out and writes Next when
// Persist. The rules, written out in testdata/admit.txt and
// docs/participant.md:
//
//  1. A stamp is joined into the record (Join). A stale stamp refuses a
//     user operation as Moved and any other as Refused; a conflicting one
//     likewise. Nothing changes.
//  2. User operations without a stamp (tools, tests, a read pinned to a
//     region) are decided by the record alone, and a read without one is
//     served from the store's copy as it is, whatever the role. Migration
//     operations need a stamp (Invalid without), except digests.
//  3. The joined record decides: a primary allows everything (deletes as
//     tombstones while it tombstones); an exporting store allows reads,
//     refuses the rest as Locked until Until, then acts as a primary; an
//     importing or secondary store refuses user operations as Moved. A
//     historical export needs a tombstoning primary or an exporting
//     store, a delta export an exporting store, both in force; imports
//     and resets need an importing store; a cleanup a secondary one;
//     digests and authorize take any.
func Admit(rec Authority, op Op, req Authority, now time.Time) Decision {
	d := Decision{Next: rec}
	refuse := func(v Verdict, format string, args ...any) Decision {
		return Decision{Verdict: v, Next: rec, Why: fmt.Sprintf(format, args...)}
	}
	if req.Stamped() {
		if err := req.Validate(); err != nil {
			return refuse(Invalid, "%v", AsError(err).Message)
		}
	} else if !op.user() && op != OpDigests && op != OpAuthorize {
		return refuse(Invalid, "%s without an authority", op)
	}
	next, j := Join(rec, req)
	switch {
	case j == Stale && op.user():
		return refuse(Moved, "routed by revision %d; the resource's authority here is at revision %d", req.Rev, rec.Rev)
	case j == Stale:
		return refuse(Refused, "stale: %s is older than the authority held, %s", req, rec)
	case j == Conflict && op.user():
		return refuse(Moved, "routed as %s; the authority here is %s", req, rec)
	case j == Conflict:
		return refuse(Refused, "conflict: %s and the authority held, %s, at one revision", req, rec)
	}
	d.Next = next
	d.Persist = next != rec && op != OpRead // every admitted operation but a user read installs the stamp
	role := next.RoleOf()
	if role == RoleExporting && !next.fenced(now) {
		role = RolePrimary // the write fence has lapsed (Proposition 4)
	}
	switch op {
	case OpRead, OpUpdate, OpCreate, OpDelete:
		switch {
		case op == OpRead && !req.Stamped():
			d.Verdict = Allow // no routing decided it: the store's copy as it is
		case role == RoleImporting || role == RoleSecondary:
			return refuse(Moved, "this store is %s for the resource at revision %d", role, next.Rev)
		case role == RoleExporting && op != OpRead:
			d.Verdict, d.RetryAfter = Locked, time.Duration(min(next.Until-now.UnixMilli(), MaxRetryAfter.Milliseconds()))*time.Millisecond
			d.Persist, d.Next, d.Why = false, rec, fmt.Sprintf("write fence until %d", next.Until)
			return d
		case op == OpDelete && next.tombstones(now):
			d.Verdict = Tombstone
		default:
			d.Verdict = Allow
		}
	case OpExportHistorical:
		if !next.tombstones(now) && !next.fenced(now) {
			return refuse(Refused, "a historical export needs tombstone deletes or the write fence in force; the authority is %s", next)
		}
		d.Verdict = Allow
	case OpExportDelta:
		if !next.fenced(now) {
			return refuse(Refused, "a delta export needs the write fence in force; the authority is %s", next)
		}
		d.Verdict = Allow
	case OpImport, OpReset:
		if role != RoleImporting {
			return refuse(Refused, "%s at a %s store (revision %d)", op, role, next.Rev)
		}
		d.Verdict = Allow
	case OpCleanup:
		if role != RoleSecondary {
			return refuse(Refused, "cleanup at a %s store (revision %d): its records stay", role, next.Rev)
		}
		d.Verdict = Allow
	case OpDigests, OpAuthorize:
		d.Verdict = Allow
	default:
		return refuse(Invalid, "operation %q", op)
	}
	return d
}

// Err is the *Error for a refusing decision (nil for Allow and Tombstone),
// as the HTTP API and the NATS contract send it: Moved and Locked are
// CodeLocked (423) with lock "moved" or "fence write", Refused is
// CodeConflict, Invalid CodeInvalid.
func (d Decision) Err(resource string) *Error {
	switch d.Verdict {
	case Allow, Tombstone:
		return nil
	case Moved:
		return &Error{Code: CodeLocked, Lock: LockMoved, Message: "resource has moved to another region; resolve it again (" + d.Why + ")"}
	case Locked:
		return &Error{Code: CodeLocked, Lock: LockWriteFence, RetryAfter: d.RetryAfter,
			Message: "resource locked (write fence) while a migration switches regions; retry in a moment"}
	case Invalid:
		return Errorf(CodeInvalid, "%s: %s", resource, d.Why)
	}
	return Errorf(CodeConflict, "%s: %s", resource, d.Why)
}

// VerdictOf is the verdict an operation's outcome shows, the inverse of
// Decision.Err: Allow for no error (Tombstone when the operation reports a
// tombstone written), Moved or Locked for a CodeLocked error of those
// locks, Refused for CodeConflict, Invalid for CodeInvalid, and "" for any
// other error (not admission's).
func VerdictOf(err error, tombstoned bool) Verdict {
	if err == nil {
		if tombstoned {
			return Tombstone
		}
		return Allow
	}
	e := AsError(err)
	switch {
	case e.Code == CodeLocked && e.Lock == LockMoved:
		return Moved
	case e.Code == CodeLocked && e.Lock == LockWriteFence:
		return Locked
	case e.Code == CodeConflict:
		return Refused
	case e.Code == CodeInvalid:
		return Invalid
	}
	return ""
}

// Lock names of a CodeLocked *Error from admission.
const (
	// LockMoved: resolve the routing again and retry at once.
	LockMoved = "moved"
	// LockWriteFence: the source's write fence; retry after Retry-After.
	LockWriteFence = "fence write"
)

package contract

import (
	"fmt"
	"time"
)

// One authority per resource (docs/participant.md "Authority"). A
// participant keeps, for each resource, the authority it was last told: what
// its store is for that resource, stamped with the routing revision that
// made it so. The routing document's revision totally orders every change
// of authority over a resource (every lock transition and the swap are
// conditional writes on it), so the revision is the only fencing token, as
// a key's revision is the ownership of an etcd lock: a request stamped with
// a lower revision than the record is stale, whoever sends it.
//
// Every request that acts on a resource carries an Authority (a stamp): the
// orchestrator's derived from the routing document it holds, a user
// request's from the document its router resolved (kvrouting's
// Document.AuthorityAt, a pure function of the document). The participant
// joins the stamp into its record (Join: monotone, idempotent) and decides
// the operation by the result (Admit), in the same transaction as the
// operation itself.

// Role is what a participant's store is for a resource at a revision.
type Role string

// Roles (paper 001 Table 4, per region).
const (
	// RolePrimary: the region is authoritative; users read and write here.
	// With DeletesTombstone (the hard-delete lock, paper 001 §4.3) deletes
	// become tombstones until Until.
	RolePrimary Role = "primary"
	// RoleExporting: the primary under the write lock (paper 001 §4.1.3):
	// reads are served, updates, new writes and deletes are refused with a
	// retriable "locked" until Until (the write lock's expiry plus the
	// enforcers' skew); after Until the store is the primary again (a
	// crashed orchestrator cannot fence writes for longer, Proposition 4).
	RoleExporting Role = "exporting"
	// RoleImporting: the target of a migration in flight: imports land,
	// user operations are refused as "moved".
	RoleImporting Role = "importing"
	// RoleSecondary: not the resource's location (the old source after a
	// swap, a rolled-back target, any other region): user operations are
	// refused as "moved", imports refused, the records may be cleaned up.
	RoleSecondary Role = "secondary"
)

// Deletes is how a primary deletes.
type Deletes string

// Delete modes.
const (
	// DeletesPhysical removes a deleted record (the default; "" on the
	// wire).
	DeletesPhysical Deletes = "physical"
	// DeletesTombstone keeps a deleted record as a tombstone (id, kind,
	// creation time, a delete marker; content stripped at once) so that a
	// paginated copy carries the delete (paper 001 §4.3).
	DeletesTombstone Deletes = "tombstone"
)

// Authority is one resource's authority at one participant, or a request's
// stamp. The zero Authority is what a participant holds for a resource it
// was never told about: the primary at revision 0, deleting physically. As
// a stamp, Rev 0 means "no stamp".
//
// Its msgpack form is a map with the keys below (docs/participant.md).
type Authority struct {
	// Rev is the routing revision the authority was derived from.
	Rev uint64 `msgpack:"rev"`
	// Role is what the store is for the resource ("" reads as
	// RolePrimary).
	Role Role `msgpack:"role,omitempty"`
	// Deletes is the primary's delete mode ("" reads as DeletesPhysical);
	// only RolePrimary carries DeletesTombstone.
	Deletes Deletes `msgpack:"del,omitempty"`
	// Until, unix milliseconds, ends DeletesTombstone and RoleExporting
	// (the lock's expiry plus the enforcers' skew, rounded up); 0 for the
	// other roles.
	Until int64 `msgpack:"until,omitempty"`
}

// RoleOf returns a's role, RolePrimary for "".
func (a Authority) RoleOf() Role {
	if a.Role == "" {
		return RolePrimary
	}
	return a.Role
}

// tombstones reports whether a is a primary whose deletes are tombstones
// at now.
func (a Authority) tombstones(now time.Time) bool {
	return a.RoleOf() == RolePrimary && a.Deletes == DeletesTombstone && now.UnixMilli() < a.Until
}

// fenced reports whether a is an exporting store whose write fence is in
// force at now.
func (a Authority) fenced(now time.Time) bool {
	return a.RoleOf() == RoleExporting && now.UnixMilli() < a.Until
}

// Stamped reports whether a is a stamp (Rev above 0).
func (a Authority) Stamped() bool { return a.Rev != 0 }

// String renders a as in the admission table: "primary@5",
// "tombstone@5<1700000000000", "exporting@5<…", "importing@5".
func (a Authority) String() string {
	if !a.Stamped() && a.RoleOf() == RolePrimary && a.Deletes != DeletesTombstone {
		return "-"
	}
	name := string(a.RoleOf())
	if a.Deletes == DeletesTombstone {
		name = "tombstone"
	}
	s := fmt.Sprintf("%s@%d", name, a.Rev)
	if a.Until != 0 {
		s += fmt.Sprintf("<%d", a.Until)
	}
	return s
}

// Validate reports whether a is well formed: a known role, DeletesTombstone
// only on a primary, Until set exactly where it ends something. Errors:
// *Error with CodeInvalid.
func (a Authority) Validate() error {
	switch a.RoleOf() {
	case RolePrimary, RoleExporting, RoleImporting, RoleSecondary:
	default:
		return Errorf(CodeInvalid, "authority role %q", a.Role)
	}
	switch a.Deletes {
	case "", DeletesPhysical:
	case DeletesTombstone:
		if a.RoleOf() != RolePrimary {
			return Errorf(CodeInvalid, "authority %s: tombstone deletes on a %s", a, a.RoleOf())
		}
	default:
		return Errorf(CodeInvalid, "authority deletes %q", a.Deletes)
	}
	ends := a.RoleOf() == RoleExporting || a.Deletes == DeletesTombstone
	switch {
	case a.Until < 0:
		return Errorf(CodeInvalid, "authority %s: negative until", a)
	case ends && a.Until == 0:
		return Errorf(CodeInvalid, "authority %s: no until", a)
	case !ends && a.Until != 0:
		return Errorf(CodeInvalid, "authority %s: until on a role it does not end", a)
	case !a.Stamped() && a.RoleOf() != RolePrimary:
		return Errorf(CodeInvalid, "authority %s: a role at revision 0", a)
	}
	return nil
}

// UntilOf is t as an Until: unix milliseconds, rounded up, so that an
// authority never ends before the lock it stands for.
func UntilOf(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.UnixNano()%int64(time.Millisecond) > 0 {
		ms++
	}
	return ms
}

// sourceRank orders the source-side authorities at one revision, least
// restrictive first: a primary, a primary that tombstones, an exporting
// store. Only these can meet at one revision (a stricter fencing policy
// than the routing document's, as the fence bench's baselines use);
// -1 for the others.
func sourceRank(a Authority) int {
	switch {
	case a.RoleOf() == RoleExporting:
		return 2
	case a.RoleOf() == RolePrimary && a.Deletes == DeletesTombstone:
		return 1
	case a.RoleOf() == RolePrimary:
		return 0
	}
	return -1
}

// JoinResult is what Join decided.
type JoinResult uint8

// Join results.
const (
	// Joined: the stamp is at least as new as the record; Next holds both.
	Joined JoinResult = iota
	// Stale: the stamp's revision is below the record's. Nothing changes.
	Stale
	// Conflict: the stamp and the record claim different, incompatible
	// roles at one revision (only a bug or a forgery can). Nothing
	// changes.
	Conflict
)

// Join is the one update rule of an authority record: the record rec
// joined with the stamp req. It is monotone and idempotent:
//
//   - no stamp (req.Rev 0): rec;
//   - req.Rev above rec.Rev: req replaces rec;
//   - equal revisions: the same authority, the later Until kept; two
//     source-side authorities (primary, tombstoning primary, exporting),
//     the more restrictive (with its Until, the later if both are the
//     same kind); anything else is a Conflict;
//   - req.Rev below rec.Rev: Stale.
//
// The caller validates req first (Validate).
func Join(rec, req Authority) (next Authority, r JoinResult) {
	switch {
	case !req.Stamped():
		return rec, Joined
	case req.Rev > rec.Rev:
		return req, Joined
	case req.Rev < rec.Rev:
		return rec, Stale
	}
	rr, qr := sourceRank(rec), sourceRank(req)
	same := rec.RoleOf() == req.RoleOf() && (rec.Deletes == DeletesTombstone) == (req.Deletes == DeletesTombstone)
	switch {
	case same:
		next = rec
		next.Until = max(rec.Until, req.Until)
		return next, Joined
	case rr >= 0 && qr >= 0 && qr > rr:
		return req, Joined
	case rr >= 0 && qr >= 0:
		return rec, Joined
	}
	return rec, Conflict
}

package kvrouting

import (
	"time"

	"github.com/cutover/cutover/services/contract"
)

// AuthorityAt is the authority the document gives region's stores over the
// resource (contract.Authority; docs/participant.md), stamped with the
// document's revision. It is pure, so every holder of the same revision —
// the orchestrator telling a participant, a router stamping a user request
// — derives the same authority, and a participant joining them in any
// order ends with the newest (contract.Join):
//
//	region is                          authority
//	the primary, unlocked or pre-lock  primary; deleting as tombstones until the
//	                                   last swap's reverse window ends + skew
//	the primary under the hard-delete  primary deleting as tombstones until the
//	lock                               lock's expiry (or the reverse window's
//	                                   end, the later) + skew
//	the primary under the write lock   exporting until the lock's expiry + skew
//	the migration's target             importing
//	anything else (the old source      secondary
//	after a swap, any other region)
//
// skew is the enforcers' clock skew (LockConfig.ClockSkew): a store honours
// a lock as long as any enforcer does (Lock.InForce).
func (d *Document) AuthorityAt(region string, skew time.Duration) contract.Authority {
	a := contract.Authority{Rev: d.Revision, Role: contract.RoleSecondary}
	switch {
	case region == d.Primary.Region:
		l := d.Primary.Lock
		switch l.Type {
		case LockWrite:
			a.Role, a.Until = contract.RoleExporting, contract.UntilOf(l.Expiry.Add(skew))
		case LockHardDelete:
			a.Role, a.Deletes, a.Until = contract.RolePrimary, contract.DeletesTombstone, contract.UntilOf(later(l.Expiry, d.reverseUntil()).Add(skew))
		default:
			a.Role = contract.RolePrimary
			if u := d.reverseUntil(); !u.IsZero() {
				// The reverse window: deletes stay exportable while the old
				// location keeps its copy (SwapRecord.ReverseUntil).
				a.Deletes, a.Until = contract.DeletesTombstone, contract.UntilOf(u.Add(skew))
			}
		}
	case d.Target != "" && region == d.Target:
		a.Role = contract.RoleImporting
	}
	return a
}

// reverseUntil is the end of the last swap's reverse window (zero: none).
func (d *Document) reverseUntil() time.Time {
	if d.LastSwap == nil {
		return time.Time{}
	}
	return d.LastSwap.ReverseUntil
}

// ReverseWindow returns the old location of the last swap and the end of
// its reverse window (SwapRecord.ReverseUntil); ok is false when the
// document records no such window.
func (d *Document) ReverseWindow() (from string, until time.Time, ok bool) {
	if d.LastSwap == nil || d.LastSwap.From == "" || d.LastSwap.ReverseUntil.IsZero() {
		return "", time.Time{}, false
	}
	return d.LastSwap.From, d.LastSwap.ReverseUntil, true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

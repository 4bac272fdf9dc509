package services

import (
	"errors"
	"fmt"
	"time"

	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// ToError translates any error into a *contract.Error: the store's and the
// routing library's sentinels map onto codes, the rest as
// contract.AsError does (a canceled or expired context is
// CodeUnavailable; anything unknown is internal). Safe for concurrent use.
func ToError(err error) *contract.Error {
	if err == nil {
		return nil
	}
	var e *contract.Error
	if errors.As(err, &e) {
		return e
	}
	var fe *store.FencedError
	if errors.As(err, &fe) {
		return fencedError(fe)
	}
	if errors.Is(err, store.ErrMoved) {
		return &contract.Error{Code: contract.CodeLocked, Message: "resource has moved to another region; resolve it again", Lock: "moved"}
	}
	var le *kvrouting.LockedError
	if errors.As(err, &le) {
		return &contract.Error{Code: contract.CodeLocked, Message: err.Error(), RetryAfter: max(time.Second, le.Lock.Expiry.Sub(le.Now)), Lock: le.Lock.Type.String()}
	}
	switch {
	case errors.Is(err, store.ErrInvalid), errors.Is(err, kvrouting.ErrInvalid):
		return &contract.Error{Code: contract.CodeInvalid, Message: err.Error()}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, kvrouting.ErrNotFound):
		return &contract.Error{Code: contract.CodeNotFound, Message: err.Error()}
	case errors.Is(err, store.ErrExists), errors.Is(err, store.ErrDeleted), errors.Is(err, store.ErrFenceHeld), errors.Is(err, store.ErrTokenRetired), errors.Is(err, store.ErrNoGrant), errors.Is(err, kvrouting.ErrConflict),
		errors.Is(err, kvrouting.ErrExists), errors.Is(err, kvrouting.ErrTokenMismatch), errors.Is(err, kvrouting.ErrIllegalTransition):
		return &contract.Error{Code: contract.CodeConflict, Message: err.Error()}
	case errors.Is(err, kvrouting.ErrUnavailable):
		return &contract.Error{Code: contract.CodeUnavailable, Message: err.Error()}
	}
	return contract.AsError(err)
}

// fencedError is the 423 of a store fence, in words of the lock class, not
// of the store (issue 15 #6). A post-swap fence (Fence.SwapRev set) is an old
// location: the resource has moved, Retry-After 0 — resolve it again. A
// write fence of Phase 3 hints the expected rest of the phase
// (kvrouting.WriteLockHint), never its expiry.
func fencedError(fe *store.FencedError) *contract.Error {
	if fe.Fence.SwapRev != 0 {
		return &contract.Error{Code: contract.CodeLocked, Message: "resource has moved to another region; resolve it again",
			Lock: "moved"}
	}
	now := fe.Now
	if now.IsZero() {
		now = time.Now()
	}
	bound := max(fe.Fence.Expiry.Sub(now), 0)
	return &contract.Error{Code: contract.CodeLocked,
		Message:    fmt.Sprintf("resource locked (%s fence) while a migration switches regions; retry in a moment", fe.Fence.Level),
		RetryAfter: kvrouting.WriteLockHint(fe.Fence.SetAt, now, bound), Lock: "fence " + fe.Fence.Level.String()}
}

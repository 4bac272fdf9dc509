package services

import (
	"errors"
	"time"

	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
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
	var le *kvrouting.LockedError
	if errors.As(err, &le) {
		return &contract.Error{Code: contract.CodeLocked, Message: err.Error(), RetryAfter: max(time.Second, le.Lock.Expiry.Sub(le.Now)), Lock: le.Lock.Type.String()}
	}
	switch {
	case errors.Is(err, store.ErrInvalid), errors.Is(err, kvrouting.ErrInvalid), errors.Is(err, store.ErrFormat):
		return &contract.Error{Code: contract.CodeInvalid, Message: err.Error()}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, kvrouting.ErrNotFound), errors.Is(err, participant.ErrNotFound):
		return &contract.Error{Code: contract.CodeNotFound, Message: err.Error()}
	case errors.Is(err, store.ErrExists), errors.Is(err, store.ErrDeleted), errors.Is(err, kvrouting.ErrConflict),
		errors.Is(err, participant.ErrExists), errors.Is(err, participant.ErrDeleted),
		errors.Is(err, kvrouting.ErrExists), errors.Is(err, kvrouting.ErrTokenMismatch), errors.Is(err, kvrouting.ErrIllegalTransition):
		return &contract.Error{Code: contract.CodeConflict, Message: err.Error()}
	case errors.Is(err, kvrouting.ErrUnavailable):
		return &contract.Error{Code: contract.CodeUnavailable, Message: err.Error()}
	}
	return contract.AsError(err)
}

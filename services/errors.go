package services

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/store"
)

// Code is the closed set of error codes at the service boundary (HTTP API
// and the migration contract).
type Code string

// Error codes.
const (
	CodeInvalid      Code = "invalid"      // 400
	CodeUnauthorized Code = "unauthorized" // 401
	CodeForbidden    Code = "forbidden"    // 403
	CodeNotFound     Code = "not_found"    // 404
	CodeConflict     Code = "conflict"     // 409
	CodeTooLarge     Code = "too_large"    // 413
	CodeLocked       Code = "locked"       // 423 with Retry-After
	CodeUnavailable  Code = "unavailable"  // 503
	CodeInternal     Code = "internal"     // 500
)

// Error is the one error type at the service boundary.
type Error struct {
	Code    Code   `json:"code" msgpack:"code"`
	Message string `json:"message" msgpack:"msg"`
	// RetryAfter is set for CodeLocked: the most the restriction can last.
	RetryAfter time.Duration `json:"-" msgpack:"ra,omitempty"`
	// Lock names the lock behind a CodeLocked ("write lock", "locked
	// secondary", "fence write", ...).
	Lock string `json:"lock,omitempty" msgpack:"lock,omitempty"`
}

// Error implements error.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// HTTPStatus maps a code to its HTTP status.
func (c Code) HTTPStatus() int {
	switch c {
	case CodeInvalid:
		return http.StatusBadRequest
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden:
		return http.StatusForbidden
	case CodeNotFound:
		return http.StatusNotFound
	case CodeConflict:
		return http.StatusConflict
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeLocked:
		return http.StatusLocked
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// ToError translates any error into an *Error: the store's and the routing
// library's sentinels map onto codes; anything unknown is internal.
func ToError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var fe *store.FencedError
	if errors.As(err, &fe) {
		return &Error{Code: CodeLocked, Message: err.Error(), RetryAfter: fe.RetryAfter(), Lock: "fence " + fe.Fence.Level.String()}
	}
	var le *kvrouting.LockedError
	if errors.As(err, &le) {
		return &Error{Code: CodeLocked, Message: err.Error(), RetryAfter: max(time.Second, le.Lock.Expiry.Sub(le.Now)), Lock: le.Lock.Type.String()}
	}
	switch {
	case errors.Is(err, store.ErrInvalid), errors.Is(err, kvrouting.ErrInvalid):
		return &Error{Code: CodeInvalid, Message: err.Error()}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, kvrouting.ErrNotFound):
		return &Error{Code: CodeNotFound, Message: err.Error()}
	case errors.Is(err, store.ErrExists), errors.Is(err, store.ErrDeleted), errors.Is(err, store.ErrFenceHeld), errors.Is(err, store.ErrTokenRetired), errors.Is(err, kvrouting.ErrConflict),
		errors.Is(err, kvrouting.ErrExists), errors.Is(err, kvrouting.ErrTokenMismatch), errors.Is(err, kvrouting.ErrIllegalTransition):
		return &Error{Code: CodeConflict, Message: err.Error()}
	case errors.Is(err, kvrouting.ErrUnavailable), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &Error{Code: CodeUnavailable, Message: err.Error()}
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}

package contract

import (
	"context"
	"errors"
	"fmt"
	"time"
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

	// The HTTP API's own codes: a route exists but not for the request's
	// method, and a body whose Content-Type the route does not take. The
	// migration contract never returns them.
	CodeMethodNotAllowed     Code = "method_not_allowed"     // 405 with Allow
	CodeUnsupportedMediaType Code = "unsupported_media_type" // 415
)

// Error is the one error type at the service boundary. Its msgpack form is
// what the NATS contract sends back for a failed call.
type Error struct {
	Code    Code   `json:"code" msgpack:"code"`
	Message string `json:"message" msgpack:"msg"`
	// RetryAfter is set for CodeLocked: when a retry is expected to
	// succeed — the expected remainder of a write lock or fence, never more
	// than it can last; 0 where the resource has moved (resolve its routing
	// again and retry at once).
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

// HTTPStatus maps a code to its HTTP status; an unknown code is 500. The
// statuses are spelled as numbers so that the contract does not import
// net/http.
func (c Code) HTTPStatus() int {
	switch c {
	case CodeInvalid:
		return 400 // http.StatusBadRequest
	case CodeUnauthorized:
		return 401 // http.StatusUnauthorized
	case CodeForbidden:
		return 403 // http.StatusForbidden
	case CodeNotFound:
		return 404 // http.StatusNotFound
	case CodeConflict:
		return 409 // http.StatusConflict
	case CodeMethodNotAllowed:
		return 405 // http.StatusMethodNotAllowed
	case CodeTooLarge:
		return 413 // http.StatusRequestEntityTooLarge
	case CodeUnsupportedMediaType:
		return 415 // http.StatusUnsupportedMediaType
	case CodeLocked:
		return 423 // http.StatusLocked
	case CodeUnavailable:
		return 503 // http.StatusServiceUnavailable
	}
	return 500 // http.StatusInternalServerError
}

// AsError translates err into an *Error with what the contract alone
// knows: the *Error in err's chain as is; CodeUnavailable for a canceled or
// expired context (the caller may retry); CodeInternal for anything else.
// It returns nil for nil. services.ToError also maps the store's and the
// routing library's errors; a caller of the contract needs only AsError,
// since participants return *Error values.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &Error{Code: CodeUnavailable, Message: err.Error()}
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}

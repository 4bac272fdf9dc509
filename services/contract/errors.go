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

// goPackages are the names of the Go packages (the module's and the
// libraries under it) whose errors begin "<name>: ".
var goPackages = []string{
	"kvrouting", "store", "contract", "participant", "services", "httproute", "api", "chat", "core",
	"pgstore", "contractnats", "lockrecord", "eventlog", "orchestrator", "projector", "httpapi",
	"pebble", "nats", "jetstream",
}

// ClientText returns msg, an error's text, as a client of an API may read
// it: without the "<package>: " prefixes that Go errors of the module's
// packages (and of the libraries under them) begin with, at its start and
// after each ": " — "ref: store: invalid argument: bad" reads "ref:
// invalid argument: bad". A quoted string (an id the client sent, quoted
// with %q) is kept as it is. Go callers match the errors themselves
// (errors.Is), never this text.
func ClientText(msg string) string {
	var b []byte // nil until something is dropped
	start, quoted := true, false
	for i := 0; i < len(msg); i++ {
		if start && !quoted {
			if n := goPackagePrefix(msg[i:]); n > 0 {
				if b == nil {
					b = append(make([]byte, 0, len(msg)), msg[:i]...)
				}
				i += n - 1
				continue // another prefix may follow
			}
		}
		c := msg[i]
		start = false
		switch {
		case quoted && c == '\\' && i+1 < len(msg):
			if b != nil {
				b = append(b, c)
			}
			i++
			c = msg[i]
		case c == '"':
			quoted = !quoted
		case !quoted && c == ' ' && i > 0 && msg[i-1] == ':':
			start = true
		}
		if b != nil {
			b = append(b, c)
		}
	}
	if b == nil {
		return msg
	}
	return string(b)
}

// goPackagePrefix returns the length of the "<package>: " s begins with,
// or 0.
func goPackagePrefix(s string) int {
	for _, p := range goPackages {
		if len(s) > len(p)+1 && s[:len(p)] == p && s[len(p)] == ':' && s[len(p)+1] == ' ' {
			return len(p) + 2
		}
	}
	return 0
}

package client

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

var (
	// ErrUnrecovered is matched (errors.Is) by the error of an operation
	// whose retriable failures lasted past RetryPolicy.Threshold: the write
	// is surfaced as failed and the user must retry it manually (paper 001
	// §4.4). The error also wraps the last failure, an *APIError (the last
	// 423) when the server answered, so errors.As reaches it.
	ErrUnrecovered = errors.New("client: retries exhausted")

	// ErrInvalid is returned, without sending a request, for an argument the
	// client can tell is wrong (an empty id, a negative limit), and by New
	// and the options for a bad configuration.
	ErrInvalid = errors.New("client: invalid argument")

	// ErrBadResponse is returned when a successful response cannot be
	// understood: a body that is not the documented JSON, or a missing
	// header the contract requires.
	ErrBadResponse = errors.New("client: malformed response")

	// ErrClosed is the result of an operation handed to Enqueue after Close.
	ErrClosed = errors.New("client: closed")
)

// Code is the error code in an API error body. The set is closed and mirrors
// the server's (contract.Code); a test keeps the two in step.
type Code string

// Error codes of the API, with the status each comes with.
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
	// A route exists but not for the method (the API's bug or the
	// client's), with the methods it takes in the Allow header.
	CodeMethodNotAllowed Code = "method_not_allowed" // 405
	// The body's Content-Type is not one the route takes (JSON routes
	// take application/json).
	CodeUnsupportedMediaType Code = "unsupported_media_type" // 415
)

// APIError is a non-2xx answer of the API: the HTTP status and the decoded
// error body {"error":{"code","message","lock","retry_after_ms"}}. A body
// that is not that JSON (a proxy's HTML page) leaves Code empty and puts a
// prefix of the body in Message.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the API error code; empty when the body had none.
	Code Code
	// Message is the server's explanation.
	Message string
	// Lock names the lock behind a 423 ("write", "secondary", "fence
	// write", ...).
	Lock string
	// RetryAfter is the server's hint of when a retry is expected to
	// succeed (the expected rest of a write lock; 0 where the resource has
	// moved: retry at once): retry_after_ms from the body, else the
	// Retry-After header; 0 if neither was given.
	RetryAfter time.Duration
	// Method and Path identify the request.
	Method, Path string
}

// Error implements error.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "client: %s %s: %d", e.Method, e.Path, e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	} else if t := http.StatusText(e.Status); t != "" {
		fmt.Fprintf(&b, " %s", t)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Lock != "" {
		fmt.Fprintf(&b, " [lock: %s]", e.Lock)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	return b.String()
}

// Locked reports whether the error is the retriable lock rejection (423).
func (e *APIError) Locked() bool { return e.Status == http.StatusLocked }

// HasCode reports whether err is, or wraps, an *APIError with code c.
func HasCode(err error, c Code) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == c
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

func badResponsef(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadResponse}, args...)...)
}

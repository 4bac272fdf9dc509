package natsclient

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound is returned by the get functions when the stream holds no
	// message on the subject (for a KV stream: the key was never written, or
	// its history was purged away entirely).
	ErrNotFound = errors.New("cnats: message not found")

	// ErrDeleted is returned by the get functions when the latest message on a
	// KV subject is a delete or purge marker (header KV-Operation DEL or
	// PURGE). The marker's sequence is returned along with it.
	ErrDeleted = errors.New("cnats: key deleted")

	// ErrStreamNotFound is returned when the named stream does not exist.
	ErrStreamNotFound = errors.New("cnats: stream not found")

	// ErrUnavailable is returned when nobody answered a request (no
	// responders, no stream leader, JetStream cluster not available). The
	// caller may retry.
	ErrUnavailable = errors.New("cnats: stream unavailable")

	// ErrNotMirror is returned by ReadMirrorHealth when the stream exists but
	// is not a mirror.
	ErrNotMirror = errors.New("cnats: stream is not a mirror")

	// ErrInvalidName is returned for a region, stream or subject that cannot
	// be used in a JetStream name or subject.
	ErrInvalidName = errors.New("cnats: invalid name")

	// ErrInvalidOptions is returned when options are inconsistent or out of
	// range (for example a routing replica count above MaxReplicas; package
	// cnats returns it for server and cluster options too).
	ErrInvalidOptions = errors.New("cnats: invalid options")
)

// JetStream API error codes the client maps onto its sentinels (the
// server's JSNoMessageFoundErr, JSStreamNotFoundErr, JSClusterNotAvailErr;
// kept in step by a test in package cnats, which links the server).
const (
	CodeNoMessageFound  = 10037
	CodeStreamNotFound  = 10059
	CodeClusterNotAvail = 10008
)

// APIError is an error reported by the JetStream API in a JSON response. It
// is wrapped together with the matching sentinel (ErrNotFound,
// ErrStreamNotFound, ErrUnavailable) when there is one.
type APIError struct {
	// Code is the HTTP-like status code, e.g. 404 or 503.
	Code int `json:"code"`
	// ErrCode is the JetStream error code, e.g. 10037 (no message found).
	ErrCode int `json:"err_code"`
	// Description is the server's human-readable text.
	Description string `json:"description"`
}

// Error implements error.
func (e *APIError) Error() string {
	return fmt.Sprintf("jetstream api error %d (%d): %s", e.Code, e.ErrCode, e.Description)
}

// TranslateAPIError maps a JetStream API error onto the package sentinels.
func TranslateAPIError(op string, e *APIError) error {
	switch {
	case e.ErrCode == CodeNoMessageFound:
		return fmt.Errorf("%s: %w: %w", op, ErrNotFound, e)
	case e.ErrCode == CodeStreamNotFound:
		return fmt.Errorf("%s: %w: %w", op, ErrStreamNotFound, e)
	case e.ErrCode == CodeClusterNotAvail || e.Code == 503:
		return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, e)
	default:
		return fmt.Errorf("%s: %w", op, e)
	}
}

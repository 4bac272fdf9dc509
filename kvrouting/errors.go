package kvrouting

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrNotFound is returned when a resource has no routing document.
	ErrNotFound = errors.New("kvrouting: routing document not found")
	// ErrExists is returned by Register when the resource already has a document.
	ErrExists = errors.New("kvrouting: routing document already exists")
	// ErrLocked is the paper's 423: an unexpired lock under another token
	// (paper 000 §5.4 "Concurrent migration attempts").
	ErrLocked = errors.New("kvrouting: resource locked")
	// ErrConflict is the paper's 412: the document's revision moved under a
	// conditional write and the retry budget was exhausted.
	ErrConflict = errors.New("kvrouting: revision conflict")
	// ErrTokenMismatch is returned when a lock operation presents a token
	// that does not hold the lock.
	ErrTokenMismatch = errors.New("kvrouting: lock token mismatch")
	// ErrExpired is returned when the caller's lock has expired (or is
	// within the clock-skew margin of expiring): a stale holder may not act.
	ErrExpired = errors.New("kvrouting: lock expired")
	// ErrIllegalTransition is returned for a lock transition the lifecycle
	// does not allow (paper 000 §4: pre → hard-delete → write → swap).
	ErrIllegalTransition = errors.New("kvrouting: illegal lock transition")
	// ErrNotConverged is returned when escalating before the pre-lock's
	// not-before (the convergence delay) has passed (paper 000 §4.1).
	ErrNotConverged = errors.New("kvrouting: convergence delay not elapsed")
	// ErrMalformed is returned when stored bytes are not a valid routing
	// document. A malformed document is never treated as unlocked.
	ErrMalformed = errors.New("kvrouting: malformed routing document")
	// ErrSchemaVersion is returned for a document written by an unknown
	// schema version (paper 000 Table 2, "Mixed service versions").
	ErrSchemaVersion = errors.New("kvrouting: unknown routing document schema version")
	// ErrInvalid is returned for invalid arguments (bad resource, region,
	// empty token, too few approvers). Nothing is written.
	ErrInvalid = errors.New("kvrouting: invalid argument")
	// ErrAtTarget is returned by PreLock when the resource is already at the
	// requested target (paper 000 §5.4: drop resources already at the target).
	ErrAtTarget = errors.New("kvrouting: resource already at target")
	// ErrApprovals is returned by ForceRelease without two distinct approvers.
	ErrApprovals = errors.New("kvrouting: force-release needs at least two distinct approvers")
	// ErrUnavailable wraps a routing-store failure (timeout, no leader).
	ErrUnavailable = errors.New("kvrouting: routing store unavailable")
)

// LockedError carries the lock that refused an operation. It matches
// ErrLocked with errors.Is.
type LockedError struct {
	Resource string
	Lock     Lock
	Region   string
	Now      time.Time
}

// Error implements error; the token is never printed whole.
func (e *LockedError) Error() string {
	return fmt.Sprintf("kvrouting: resource %s locked (%s lock %s at %s, expires in %s)",
		e.Resource, e.Lock.Type, e.Lock.Token.Redacted(), e.Region, e.Lock.Expiry.Sub(e.Now).Round(time.Millisecond))
}

// Is reports whether target is ErrLocked.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// InvalidError is the ErrInvalid of one bad argument (errors.Is matches
// ErrInvalid). Reason says what is wrong without the package's name
// ("resource id: longer than 200 bytes"), so that an API can show it to
// whoever supplied the argument; Error prefixes it with ErrInvalid's text.
type InvalidError struct {
	Reason string
}

// Error implements error: "kvrouting: invalid argument: " and the reason.
func (e *InvalidError) Error() string { return ErrInvalid.Error() + ": " + e.Reason }

// Is reports whether target is ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, args ...any) error {
	return &InvalidError{Reason: fmt.Sprintf(format, args...)}
}

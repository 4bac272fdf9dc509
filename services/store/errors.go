package store

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrNotFound is returned when a record, cursor or resource state does not
	// exist. Tombstones are reported as ErrNotFound on the user path.
	ErrNotFound = errors.New("store: not found")

	// ErrExists is returned by Put with create=true when the id is already
	// live; the existing record is returned with it so that a retried post
	// can be treated as success when the content is equal.
	ErrExists = errors.New("store: record exists")

	// ErrDeleted is returned by Put with create=true when the id carries a
	// tombstone: a deleted id is never resurrected (paper 001 §4.3).
	ErrDeleted = errors.New("store: record deleted")

	// ErrFenced is matched (errors.Is) by every *FencedError: an active fence
	// refused a user mutation. It maps to HTTP 423.
	ErrFenced = errors.New("store: resource fenced")

	// ErrMoved: a read decided on routing older than the fence's ReadRev
	// (contract.Fence.RefusesRead) was refused: the resource is moving, or
	// has moved, away from this region; the reader resolves it again. It
	// maps to HTTP 423 with lock "moved" and Retry-After 0.
	ErrMoved = errors.New("store: resource moved; resolve it again")

	// ErrFenceHeld is returned when a fence operation names a token other
	// than the one of an unexpired fence.
	ErrFenceHeld = errors.New("store: fence held by another token")
	// ErrTokenRetired is returned by SetFence for a token whose fence was
	// cleared at this store before: a late request of a finished attempt.
	ErrTokenRetired = errors.New("store: fence token retired")

	// ErrNoGrant is returned by ImportGranted when no import grant of the
	// page's token is in force at this store: the page is a late delivery
	// of an attempt whose copy has ended (validated, swapped or rolled
	// back), and applying it could resurrect a delete or leak data into a
	// region the resource never moved to (issue 14 #1). Nothing changes.
	ErrNoGrant = errors.New("store: no import grant for this token")

	// ErrInvalid is returned for a malformed argument (resource, id, kind,
	// cursor name, token, fence, timestamps); nothing is changed.
	ErrInvalid = errors.New("store: invalid argument")

	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("store: closed")

	// ErrCorrupt is returned when a stored value or key cannot be decoded or
	// contradicts the indexes. It is never a panic.
	ErrCorrupt = errors.New("store: corrupt data")
)

// FencedError reports a user mutation refused by an active fence (DESIGN.md
// "Two layers of enforcement"). errors.Is(err, ErrFenced) holds for it.
//
// Fence.Token is always empty: the error travels to the user path and the
// token authorises lock changes, so it must not leave the store.
type FencedError struct {
	// Fence is the fence in force, without its token.
	Fence Fence
	// Now is the store's clock when the mutation was refused.
	Now time.Time
}

// Error implements error. It names the level and expiry, never the token.
func (e *FencedError) Error() string {
	return fmt.Sprintf("store: resource fenced (%s fence until %s)",
		e.Fence.Level, e.Fence.Expiry.UTC().Format(time.RFC3339Nano))
}

// Is reports whether target is ErrFenced.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// RetryAfter is the time until the fence expires, at least one second; it is
// the Retry-After of the HTTP 423 (paper 001 §4.4).
func (e *FencedError) RetryAfter() time.Duration {
	now := e.Now
	if now.IsZero() {
		now = time.Now()
	}
	d := e.Fence.Expiry.Sub(now)
	if d < time.Second {
		return time.Second
	}
	return d
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

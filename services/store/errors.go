package store

import (
	"errors"
	"fmt"
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

	// ErrInvalid is returned for a malformed argument (resource, id, kind,
	// cursor name, authority, timestamps); nothing is changed.
	ErrInvalid = errors.New("store: invalid argument")

	// ErrFormat is returned by Open for a store written in an older format
	// that this version does not convert.
	ErrFormat = errors.New("store: unsupported store format")

	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("store: closed")

	// ErrCorrupt is returned when a stored value or key cannot be decoded or
	// contradicts the indexes. It is never a panic.
	ErrCorrupt = errors.New("store: corrupt data")
)

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

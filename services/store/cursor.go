package store

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble"
)

func validCursorName(name string) error { return validName("cursor name", name, maxCursorLen, false) }

// PutCursor stores v under name (importer progress, export cursors),
// replacing any earlier value; the name is global to the store, so callers
// put the resource and migration in it. Errors: ErrInvalid (empty name,
// longer than 256 bytes, or containing NUL), ErrClosed.
func (s *Store) PutCursor(name string, v []byte) error {
	return s.putCursor(name, v, s.write)
}

// PutCursorAfter is PutCursor without its own fsync: the value becomes
// durable with the store's next synced commit. Pebble's log is recovered
// as a prefix, so after a crash the value is never ahead of any commit
// made before it: fit for a checkpoint that describes commits already made
// (an import checkpoint written after its import returned), where a lost
// checkpoint only means a page imported again, idempotently.
func (s *Store) PutCursorAfter(name string, v []byte) error {
	return s.putCursor(name, v, pebble.NoSync)
}

func (s *Store) putCursor(name string, v []byte, opts *pebble.WriteOptions) error {
	if err := validCursorName(name); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := s.db.Set(cursorKey(name), v, opts); err != nil {
		return fmt.Errorf("store: put cursor: %w", err)
	}
	return nil
}

// GetCursor returns a copy of the value stored under name. Errors:
// ErrInvalid, ErrNotFound, ErrClosed.
func (s *Store) GetCursor(name string) ([]byte, error) {
	if err := validCursorName(name); err != nil {
		return nil, err
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	b, closer, err := s.db.Get(cursorKey(name))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("%w: cursor %q", ErrNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get cursor: %w", err)
	}
	defer closer.Close()
	return append([]byte{}, b...), nil
}

// DeleteCursor removes the cursor name; a missing cursor is not an error.
// Errors: ErrInvalid, ErrClosed.
func (s *Store) DeleteCursor(name string) error {
	if err := validCursorName(name); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if err := s.db.Delete(cursorKey(name), s.write); err != nil {
		return fmt.Errorf("store: delete cursor: %w", err)
	}
	return nil
}

package store

import (
	"testing"
)

// TestPutCursorAfter: a cursor written without its own fsync reads back at
// once and is kept across a reopen. (That a crash can only lose it together
// with nothing written before it is Pebble's log recovery, a prefix; not
// simulated here.)
func TestPutCursorAfter(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutCursorAfter("import/m1/messages", []byte("8")); err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetCursor("import/m1/messages"); err != nil || string(v) != "8" {
		t.Fatalf("cursor: %q, %v", v, err)
	}
	if err := s.PutCursorAfter("bad\x00name", nil); err == nil {
		t.Fatalf("a NUL in the name was accepted")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := s.GetCursor("import/m1/messages"); err != nil || string(v) != "8" {
		t.Fatalf("cursor after reopen: %q, %v", v, err)
	}
}

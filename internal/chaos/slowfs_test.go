package chaos

import (
	"io"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
)

// The slow-fsync filesystem slows some syncs and changes nothing else.
func TestSlowSyncFS(t *testing.T) {
	s := newSlowSync(1)
	fs := s.Wrap(vfs.NewMem())
	f, err := fs.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("durable")); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if s.slows.Load() == 0 {
		t.Fatal("no sync of 100 was slowed")
	}
	g, err := fs.Open("f")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	b, err := io.ReadAll(g)
	if err != nil || string(b) != "durable" {
		t.Fatalf("read back %q, %v", b, err)
	}
}

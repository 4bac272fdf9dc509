package store

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/vfs"
	"github.com/vmihailenco/msgpack/v5"
)

// TestDigestsSeeVersions is issue 14 #7: two regions holding the same
// record content at different versions (or update times) must not validate
// as equal, or a later import's version rule works on an unvalidated base.
func TestDigestsSeeVersions(t *testing.T) {
	base := Record{ID: "m1", Kind: "message", Version: 1, CreatedAt: 1e9, UpdatedAt: 2e9, Data: []byte("hi")}
	digest := func(r Record) []SliceDigest {
		s := MustOpenMem(t, nil)
		if _, _, err := s.Import("conv/v", importing(1), false, []Record{r}); err != nil {
			t.Fatal(err)
		}
		return MustDigests(t, s, "conv/v")
	}
	a := digest(base)
	newer := base
	newer.Version = 2
	if b := digest(newer); a[0].Hash == b[0].Hash {
		t.Fatal("digests equal although the versions differ")
	}
	later := base
	later.UpdatedAt = 3e9
	if b := digest(later); a[0].Hash == b[0].Hash {
		t.Fatal("digests equal although the update times differ")
	}
}

// TestOlderFormatIsRefused: a store written in an older format (fences and
// import grants instead of authority records) is refused with ErrFormat
// and a message that says what to do, and is left as it was.
func TestOlderFormatIsRefused(t *testing.T) {
	for _, v := range []int{1, 2} {
		fs := vfs.NewMem()
		s, err := Open(Options{FS: fs, Dir: "/data"})
		if err != nil {
			t.Fatal(err)
		}
		MustPut(t, s, "conv/old", rec("m1", "message", "x"), true)
		old, _ := msgpack.Marshal(&formatInfo{Version: v, SliceWidth: int64(s.opts.SliceWidth)})
		if err := s.db.Set(formatKey, old, pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = Open(Options{FS: fs, Dir: "/data"})
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "format "+strconv.Itoa(v)) || !strings.Contains(err.Error(), "/data") {
			t.Fatalf("open a format-%d store: %v, want ErrFormat naming the format and the directory", v, err)
		}
	}
}

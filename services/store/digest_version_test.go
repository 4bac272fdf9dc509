package store

import (
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
		if _, err := s.Import("conv/v", []Record{r}); err != nil {
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

// TestOldDigestFormatIsRebuilt: a store written before versions were
// digested (format 1) has its digests rebuilt on open, so a region that was
// not upgraded in step still validates against one that was.
func TestOldDigestFormatIsRebuilt(t *testing.T) {
	fs := vfs.NewMem()
	s, err := Open(Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		MustPut(t, s, "conv/old", rec(name(i), "message", "x"), true)
	}
	want := recomputeDigests(t, s, "conv/old")
	// Make it look like a format-1 store with format-1 digests.
	old, _ := msgpack.Marshal(&formatInfo{Version: 1, SliceWidth: int64(s.opts.SliceWidth)})
	if err := s.db.Set(formatKey, old, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	bogus, _ := msgpack.Marshal(&storedDigest{Count: 1, Hi: 7, Lo: 7})
	if err := s.db.Set(digestKey("conv/old", s.SliceOf(want[0].Slice)), bogus, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(Options{FS: fs})
	if err != nil {
		t.Fatalf("reopen a format-1 store: %v", err)
	}
	defer s.Close()
	assertEqual(t, "digests after the rebuild", MustDigests(t, s, "conv/old"), want)
	// And the format is current now.
	var fi formatInfo
	if err := s.getValue(s.db, formatKey, &fi); err != nil || fi.Version != formatVersion {
		t.Fatalf("format after reopen: %+v %v", fi, err)
	}
}

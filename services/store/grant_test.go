package store

import (
	"errors"
	"testing"
	"time"
)

// TestImportGrant: a migration import is applied only under the grant of
// its token, decided with the write; a revoked token is retired; an expired
// grant admits nothing (issue 14 #1).
func TestImportGrant(t *testing.T) {
	clock := newFakeClock()
	s := MustOpenMem(t, clock)
	recs := func(id string) []Record {
		return []Record{{ID: id, Kind: "reaction", Version: 1, CreatedAt: 1e9, Data: []byte("+1")}}
	}
	count := func() int { live, _ := MustCount(t, s, "conv/g"); return live }

	if _, err := s.ImportGranted("conv/g", "t1", recs("a")); !errors.Is(err, ErrNoGrant) || count() != 0 {
		t.Fatalf("import without a grant: %v, %d records", err, count())
	}
	if err := s.GrantImport("conv/g", "t1", clock.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImportGranted("conv/g", "t2", recs("a")); !errors.Is(err, ErrNoGrant) || count() != 0 {
		t.Fatalf("import under another token: %v", err)
	}
	if n, err := s.ImportGranted("conv/g", "t1", recs("a")); err != nil || n != 1 {
		t.Fatalf("granted import: %d %v", n, err)
	}
	// A replayed, older grant does not shorten it.
	if err := s.GrantImport("conv/g", "t1", clock.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	if n, err := s.ImportGranted("conv/g", "t1", recs("b")); err != nil || n != 1 {
		t.Fatalf("import after a replayed shorter grant: %d %v", n, err)
	}
	if err := s.RevokeImport("conv/g", "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ImportGranted("conv/g", "t1", recs("c")); !errors.Is(err, ErrNoGrant) || count() != 2 {
		t.Fatalf("import after the revoke: %v, %d records", err, count())
	}
	if err := s.GrantImport("conv/g", "t1", clock.Now().Add(time.Minute)); !errors.Is(err, ErrTokenRetired) {
		t.Fatalf("grant of a revoked token: %v", err)
	}
	// A revoke that overtook its grant retires the token too.
	if err := s.RevokeImport("conv/g", "t3"); err != nil {
		t.Fatal(err)
	}
	if err := s.GrantImport("conv/g", "t3", clock.Now().Add(time.Minute)); !errors.Is(err, ErrTokenRetired) {
		t.Fatalf("grant after its revoke: %v", err)
	}
	// Expiry.
	if err := s.GrantImport("conv/g", "t4", clock.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if _, err := s.ImportGranted("conv/g", "t4", recs("d")); !errors.Is(err, ErrNoGrant) {
		t.Fatalf("import under an expired grant: %v", err)
	}
	// Bad input changes nothing.
	for _, err := range []error{
		s.GrantImport("conv/g", "", clock.Now().Add(time.Minute)),
		s.GrantImport("conv/g", "t5", time.Time{}),
		s.RevokeImport("conv/g", ""),
		s.GrantImport("", "t5", clock.Now().Add(time.Minute)),
	} {
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("bad grant input: %v", err)
		}
	}
	if _, err := s.ImportGranted("conv/g", "", recs("e")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("import with an empty grant token: %v", err)
	}
	// Retired tokens are bounded.
	for i := range 2 * maxRetired {
		if err := s.RevokeImport("conv/g", name(i)); err != nil {
			t.Fatal(err)
		}
	}
	g, err := s.getGrant(s.db, "conv/g")
	if err != nil || len(g.Retired) != maxRetired {
		t.Fatalf("retired tokens: %d %v", len(g.Retired), err)
	}
}

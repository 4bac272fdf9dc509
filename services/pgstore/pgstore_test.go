package pgstore_test

import (
	"os"
	"testing"

	"github.com/cutover/cutover/internal/pgserver/pgtest"
	"github.com/cutover/cutover/services/contracttest"
	"github.com/cutover/cutover/services/participant"
	"github.com/cutover/cutover/services/pgstore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// open opens a store of service on a fresh database, closed with t.
func open(t *testing.T, url, service string) *pgstore.Store {
	t.Helper()
	st, err := pgstore.Open(t.Context(), url, pgstore.Options{Service: service})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// openB opens a "kit" store on a fresh database, closed with b.
func openB(b *testing.B) *pgstore.Store {
	b.Helper()
	st, err := pgstore.Open(b.Context(), pgtest.Database(b), pgstore.Options{Service: "kit"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(st.Close)
	return st
}

// kitHarness is two regions' participants, each on a database of its own.
func kitHarness(t *testing.T) contracttest.Harness {
	src := participant.New("kit", open(t, pgtest.Database(t), "kit"), participant.Options{})
	dst := participant.New("kit", open(t, pgtest.Database(t), "kit"), participant.Options{})
	return contracttest.Harness{
		Source: src, SourceUser: contracttest.KitUser(src),
		Target: dst, TargetUser: contracttest.KitUser(dst),
	}
}

func TestConformance(t *testing.T) {
	contracttest.Run(t, kitHarness)
}

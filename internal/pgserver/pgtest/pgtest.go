// Package pgtest shares one private PostgreSQL server (internal/pgserver)
// among a package's tests, a fresh database per test.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/internal/pgserver"
)

// shared is the server of the running test binary (Main), or why there is
// none.
var (
	shared    *pgserver.Server
	sharedErr error
	dbs       atomic.Int64
)

// Main starts one server for a package's tests, runs them and stops it:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// Where no PostgreSQL binaries exist the tests that need one skip with
// that reason (Database); any other failure to start fails them.
func Main(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	shared, sharedErr = pgserver.Start(ctx, pgserver.Options{})
	cancel()
	code := m.Run()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	return code
}

// Shared returns the server Main started; it skips t where the machine has
// no PostgreSQL binaries and fails it where the server did not start.
func Shared(t testing.TB) *pgserver.Server {
	t.Helper()
	switch {
	case shared != nil:
		return shared
	case errors.Is(sharedErr, pgserver.ErrNoBinaries):
		t.Skip(sharedErr)
	case sharedErr != nil:
		t.Fatal(sharedErr)
	default:
		t.Fatal("pgtest: Shared without pgtest.Main in TestMain")
	}
	return nil
}

// Database creates a fresh database on the shared server for t and returns
// its URL.
func Database(t testing.TB) string {
	t.Helper()
	s := Shared(t)
	name := fmt.Sprintf("t%d_%s", dbs.Add(1), strings.ToLower(nonWord.ReplaceAllString(t.Name(), "_")))
	if len(name) > 60 {
		name = name[:60]
	}
	url, err := s.CreateDatabase(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

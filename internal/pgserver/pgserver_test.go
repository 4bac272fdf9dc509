package pgserver_test

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cutover/cutover/internal/pgserver"
	"github.com/cutover/cutover/internal/pgserver/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestDatabaseKillRestart(t *testing.T) {
	url := pgtest.Database(t)
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (v int); INSERT INTO t VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)

	s := pgtest.Shared(t)
	if err := s.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := pgx.Connect(ctx, url); err == nil {
		c.Close(ctx)
		t.Fatal("connected to a killed server")
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err = pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != 7 {
		t.Fatalf("after restart: %d, %v", v, err)
	}
}

func TestBinFromEnvironment(t *testing.T) {
	t.Setenv("CUTOVER_PG_BIN", t.TempDir())
	if _, err := pgserver.Bin(); err == nil {
		t.Fatal("Bin accepted a directory without the binaries")
	}
}

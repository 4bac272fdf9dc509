package pgstore

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The schema is versioned SQL files (schema/NNNN_name.sql), applied in
// order at Open, each in its own transaction with its version and the
// file's SHA-256 recorded in cutover_schema. Open refuses a database whose
// schema is newer than this binary's, or whose recorded file differs from
// this binary's file of the same version.

//go:embed schema/*.sql
var schemaFS embed.FS

// migration is one schema file.
type migration struct {
	version int
	name    string
	sql     string
	sum     string
}

// ErrSchema is returned by Open for a schema it will not use.
var ErrSchema = errors.New("pgstore: schema mismatch")

// migrations returns the embedded schema files in version order.
func migrations() ([]migration, error) {
	ents, err := fs.ReadDir(schemaFS, "schema")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range ents {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("pgstore: schema file %s: want NNNN_name.sql", e.Name())
		}
		b, err := schemaFS.ReadFile(path.Join("schema", e.Name()))
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		out = append(out, migration{version: v, name: e.Name(), sql: string(b), sum: hex.EncodeToString(sum[:])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("pgstore: schema files skip version %d", i+1)
		}
	}
	return out, nil
}

// SchemaVersion is the schema this package writes and reads.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// schemaLock is the advisory lock that serialises concurrent Opens.
const schemaLock = 0x6375746f766572 // "cutover"

// migrate brings the database to this package's schema.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(schemaLock)); err != nil {
		return err
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(schemaLock))
	}()
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS cutover_schema (
		version integer PRIMARY KEY, name text NOT NULL, sha256 text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	rows, err := conn.Query(ctx, "SELECT version, name, sha256 FROM cutover_schema ORDER BY version")
	if err != nil {
		return err
	}
	applied := map[int]migration{}
	for rows.Next() {
		var m migration
		if err := rows.Scan(&m.version, &m.name, &m.sum); err != nil {
			rows.Close()
			return err
		}
		applied[m.version] = m
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for v, m := range applied {
		if v > len(ms) {
			return fmt.Errorf("%w: the database is at schema version %d (%s), this binary knows versions up to %d: upgrade cutover", ErrSchema, v, m.name, len(ms))
		}
		if want := ms[v-1]; m.sum != want.sum {
			return fmt.Errorf("%w: schema version %d was applied from a file (%s, sha256 %.12s) other than this binary's %s (sha256 %.12s)", ErrSchema, v, m.name, m.sum, want.name, want.sum)
		}
	}
	for _, m := range ms {
		if _, ok := applied[m.version]; ok {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("pgstore: apply schema %s: %w", m.name, err)
			}
			_, err := tx.Exec(ctx, "INSERT INTO cutover_schema (version, name, sha256) VALUES ($1, $2, $3)", m.version, m.name, m.sum)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Package pgstore is the participant kit's PostgreSQL adapter
// (participant.Storage over github.com/jackc/pgx/v5): a service that keeps
// its records in PostgreSQL takes part in migrations through
// participant.New(service, store, opts).
//
// Authority in the user's transaction. Every Update begins a transaction
// and locks the resource's row in cutover_resources (SELECT … FOR UPDATE,
// created on first use): the authority record is read, decided on
// (contract.Admit) and written in the transaction that carries the write
// out, so a request routed by a stale revision, or a write after the fence,
// commits nothing. A team that writes its own tables in the same
// transaction calls Store.Update with its own work inside.
//
// The change sequence never lets a sync token skip a committed change.
// Seq is per resource and allocated from cutover_resources.last_seq under
// the same row lock: two transactions of one resource never hold
// sequences at once, so changes commit in sequence order and a rolled-back
// transaction rolls its allocation back with it (no gaps at all). The sync
// token is read under the lock too: every change with Seq at or below it
// has committed, every later change gets a higher Seq. (A global
// sequence or a serial column would not do: a transaction holding Seq 7
// may commit after one holding Seq 8, and an export that read up to 8
// would skip 7 for good.)
//
// Tombstones are rows with deleted = true and no data. Digests are rows of
// cutover_digests, updated in the writing transaction.
//
// Errors of the database (unreachable, restarted, a failed commit) are
// returned as they are; the kit answers them as contract.CodeUnavailable
// and nothing is changed.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
)

// Options configures Open.
type Options struct {
	// Service names the service whose records the store holds: one
	// database may hold several services' records, each keyed by its
	// name. Required.
	Service string
	// MaxConns caps the pool's connections (0: pgxpool's default).
	MaxConns int32
	// TombstoneTTL is how long a tombstone is kept before SweepTombstones
	// removes it (0: DefaultTombstoneTTL; paper 001 Table 5).
	TombstoneTTL time.Duration
}

// DefaultTombstoneTTL is the tombstones' default lifetime (paper 001
// Table 5), as the Pebble store's.
const DefaultTombstoneTTL = 30 * 24 * time.Hour

// Store is a participant.Storage over a PostgreSQL database. Safe for
// concurrent use.
type Store struct {
	pool    *pgxpool.Pool
	service string
	ttl     time.Duration
	// presumedWrong counts transactions run again because a record
	// presumed absent was stored.
	presumedWrong atomic.Uint64
}

var _ participant.Storage = (*Store)(nil)

// Open connects to url, applies the schema (schema/*.sql) and returns the
// store. Errors: the connection's; ErrSchema for a database whose schema
// this binary will not use.
func Open(ctx context.Context, url string, o Options) (*Store, error) {
	if o.Service == "" {
		return nil, errors.New("pgstore: Options.Service is required")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		if errors.Is(err, ErrSchema) {
			return nil, err
		}
		return nil, fmt.Errorf("pgstore: open %s: %w", cfg.ConnConfig.Host, err)
	}
	if o.TombstoneTTL <= 0 {
		o.TombstoneTTL = DefaultTombstoneTTL
	}
	return &Store{pool: pool, service: o.Service, ttl: o.TombstoneTTL}, nil
}

// SweepTombstones removes the tombstones deleted at least TombstoneTTL
// before now (paper 001 §4.3: tombstones expire by TTL), one resource at a
// time under its row lock, and returns how many went. The tombstones of a
// resource whose authority here is importing stay until it is not (a late
// page's older live copy must still meet them). On error, those removed
// before it stay removed.
func (s *Store) SweepTombstones(ctx context.Context, now time.Time) (int, error) {
	cutoff := now.Add(-s.ttl).UnixNano()
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT resource FROM cutover_records WHERE service = $1 AND deleted AND deleted_at <= $2`, s.service, cutoff)
	if err != nil {
		return 0, err
	}
	resources, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	total := 0
	for _, res := range resources {
		n := 0
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var role string
			err := tx.QueryRow(ctx, `SELECT role FROM cutover_resources WHERE service = $1 AND resource = $2 FOR UPDATE`, s.service, res).Scan(&role)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			if contract.Role(role) == contract.RoleImporting {
				return nil
			}
			tag, err := tx.Exec(ctx, `DELETE FROM cutover_records WHERE service = $1 AND resource = $2 AND deleted AND deleted_at <= $3`, s.service, res, cutoff)
			n = int(tag.RowsAffected())
			return err
		})
		if err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Pool is the store's connection pool, for the service's own queries.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Update implements participant.Storage: one READ COMMITTED transaction
// holding the resource's row lock. fn's writes are buffered and sent in
// one batch before any range read and at the commit.
//
// Records presumed absent (Presume) are inserted by COPY, which the
// primary key refuses if one of them is stored after all: the transaction
// then rolls back and runs again with the ids read (Prefetch).
func (s *Store) Update(ctx context.Context, resource string, fn func(participant.Tx) error) error {
	err := s.update(ctx, resource, fn, true)
	if errors.Is(err, errPresumed) {
		s.presumedWrong.Add(1)
		err = s.update(ctx, resource, fn, false)
	}
	return err
}

// errPresumed: a record presumed absent was stored.
var errPresumed = errors.New("pgstore: a record presumed absent is stored")

// update is one transaction of Update; presume lets Presume take ids as
// absent without reading them.
//
// The transaction is sent in as few round trips as its statements allow:
// BEGIN with the resource row's lock, the reads fn makes, the records new
// to the table (COPY), then the other writes with COMMIT — two round trips
// fewer than BEGIN, the lock, …, the writes and COMMIT each on its own,
// one of them under the row lock.
func (s *Store) update(ctx context.Context, resource string, fn func(participant.Tx) error, presume bool) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	t := &tx{ctx: ctx, q: conn, service: s.service, resource: resource, presume: presume}
	committed := false
	defer func() {
		if !committed { // a failed batch skips its COMMIT: the transaction is still open
			t.rollback(conn)
		}
	}()
	found, err := t.begin()
	if err == nil && !found { // a resource's first write: its row, then its lock
		if _, err = conn.Exec(ctx, `INSERT INTO cutover_resources (service, resource) VALUES ($1, $2) ON CONFLICT DO NOTHING`, s.service, resource); err == nil {
			_, err = t.loadResource(true)
		}
	}
	if err == nil {
		err = fn(t)
	}
	if err == nil {
		err = t.flushCommit()
		committed = err == nil
	}
	var pe *pgconn.PgError
	if t.presumed && errors.As(err, &pe) && pe.Code == "23505" && // unique_violation
		pe.ConstraintName == "cutover_records_pkey" {
		return errPresumed
	}
	return err
}

// View implements participant.Storage: one REPEATABLE READ, read-only
// transaction (a snapshot).
func (s *Store) View(ctx context.Context, resource string, fn func(participant.Reader) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(ptx pgx.Tx) error {
		t := &tx{ctx: ctx, q: ptx, service: s.service, resource: resource, readOnly: true}
		if _, err := t.loadResource(false); err != nil {
			return err
		}
		return fn(t)
	})
}

// tx is one transaction on one resource: the resource row read at the
// start, an overlay of the records and digests read or written, and the
// writes not yet sent.
type tx struct {
	ctx               context.Context
	q                 querier
	service, resource string
	readOnly          bool
	cleared           bool // Clear ran: a record not cached is absent
	presume, presumed bool // Presume may take ids as absent; it did
	auth              contract.Authority
	lastSeq           uint64
	resourceDirty     bool
	recs              map[string]*cached
	digests           map[int64]*cachedDigest
	pendingRecs       []string // ids written since the last flush, in order
	pendingDigests    []int64
}

// querier is a transaction's connection: a pgx.Tx (View) or a pooled
// connection inside BEGIN (Update).
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, rows pgx.CopyFromSource) (int64, error)
}

type cached struct {
	rec     contract.Record
	found   bool
	pending bool
	// read: the row's presence in the table is known (read in this
	// transaction, or written by it); stored: it is there. A record new
	// to the table is inserted without ON CONFLICT (no speculative
	// insertion), a known-absent removal sends nothing. The resource's row
	// lock keeps what was read true until the commit.
	read, stored bool
	// presumed: absent without a read (Presume); the insert checks it.
	presumed bool
}

type cachedDigest struct {
	d       contract.SliceDigest
	pending bool
}

// begin starts the transaction and reads the resource's row, locking it,
// in one round trip; found as loadResource's.
func (t *tx) begin() (found bool, err error) {
	b := &pgx.Batch{}
	b.Queue(`BEGIN ISOLATION LEVEL READ COMMITTED`)
	b.Queue(sqlResource+` FOR UPDATE`, t.service, t.resource).QueryRow(func(row pgx.Row) error {
		found, err = t.scanResource(row)
		return err
	})
	if berr := t.q.SendBatch(t.ctx, b).Close(); err == nil {
		err = berr
	}
	return found, err
}

// rollback ends a transaction that did not commit (ROLLBACK outside one
// only warns). A connection it cannot roll back (broken, or its context
// done) is closed, so that the pool never hands out a connection inside a
// transaction.
func (t *tx) rollback(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, `ROLLBACK`); err != nil {
		_ = conn.Conn().Close(ctx)
	}
}

// sqlResource reads a resource's row.
const sqlResource = `SELECT rev, role, deletes, until_ms, last_seq FROM cutover_resources WHERE service = $1 AND resource = $2`

// loadResource reads the resource's row (locking it with forUpdate);
// found is false when the resource has none (nothing written yet).
func (t *tx) loadResource(forUpdate bool) (found bool, err error) {
	q := sqlResource
	if forUpdate {
		q += ` FOR UPDATE`
	}
	return t.scanResource(t.q.QueryRow(t.ctx, q, t.service, t.resource))
}

// scanResource reads the resource's row from row into the transaction.
func (t *tx) scanResource(row pgx.Row) (found bool, err error) {
	var rev, lastSeq int64
	var role, deletes string
	err = row.Scan(&rev, &role, &deletes, &t.auth.Until, &lastSeq)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if rev < 0 || lastSeq < 0 {
		return false, fmt.Errorf("%w: resource %q: negative revision or sequence", participant.ErrCorrupt, t.resource)
	}
	t.auth.Rev, t.auth.Role, t.auth.Deletes, t.lastSeq = uint64(rev), contract.Role(role), contract.Deletes(deletes), uint64(lastSeq)
	return true, nil
}

func (t *tx) Authority() (contract.Authority, error) { return t.auth, nil }
func (t *tx) LastSeq() (uint64, error)               { return t.lastSeq, nil }

func (t *tx) SetAuthority(a contract.Authority) error {
	if a.Rev > math.MaxInt64 {
		return fmt.Errorf("pgstore: revision %d above PostgreSQL's bigint", a.Rev)
	}
	t.auth, t.resourceDirty = a, true
	return nil
}

const recordColumns = `id, kind, version, seq, created_at, updated_at, deleted, deleted_at, data, refs`

// The statements that find records by id or by change sequence. Their
// plans must not depend on the table's statistics: pgx prepares them, and
// after five runs PostgreSQL may switch to a generic plan whose estimates
// (a resource of one row, when the statistics predate an import) make a
// scan of the whole resource look as cheap as a probe. A page imported
// into a growing resource then costs time in proportion to the resource
// (80 ms a page at 50,000 records, 1 s at 150,000, measured). So:
//   - the change index is partial (seq > 0, schema 0002): a query without
//     that predicate, as every by-id one, cannot use it, and the primary
//     key is its only index;
//   - a page's ids are probed one by one (LATERAL … LIMIT 1, which the
//     planner cannot turn into a join over the resource), never as
//     id = ANY($3), which a generic plan evaluates as a filter;
//   - removals are one DELETE per id, in the flush's single round trip.
//
// TestPlansUseTheKeys checks the plans under force_generic_plan.
const (
	sqlGet      = `SELECT ` + recordColumns + ` FROM cutover_records WHERE service = $1 AND resource = $2 AND id = $3`
	sqlPrefetch = `SELECT r.id, r.kind, r.version, r.seq, r.created_at, r.updated_at, r.deleted, r.deleted_at, r.data, r.refs
		FROM unnest($3::text[]) AS w(id)
		CROSS JOIN LATERAL (SELECT * FROM cutover_records WHERE service = $1 AND resource = $2 AND id = w.id LIMIT 1) r`
	sqlDelete  = `DELETE FROM cutover_records WHERE service = $1 AND resource = $2 AND id = $3`
	sqlChanges = `SELECT ` + recordColumns + ` FROM cutover_records WHERE service = $1 AND resource = $2
		AND seq > 0 AND seq > $3 AND seq <= $4 ORDER BY seq LIMIT $5`
)

func scanRecord(row pgx.Row) (contract.Record, error) {
	var r contract.Record
	var version, seq int64
	err := row.Scan(&r.ID, &r.Kind, &version, &seq, &r.CreatedAt, &r.UpdatedAt, &r.Deleted, &r.DeletedAt, &r.Data, &r.Refs)
	if err != nil {
		return contract.Record{}, err
	}
	if version < 0 || seq < 0 {
		return contract.Record{}, fmt.Errorf("%w: record %q: negative version or sequence", participant.ErrCorrupt, r.ID)
	}
	r.Version, r.Seq = uint64(version), uint64(seq)
	if len(r.Data) == 0 {
		r.Data = nil
	}
	if len(r.Refs) == 0 {
		r.Refs = nil
	}
	return r, nil
}

func (t *tx) Get(id string) (contract.Record, bool, error) {
	if c, ok := t.recs[id]; ok {
		return c.rec, c.found, nil
	}
	if t.cleared {
		t.cache(id, &cached{read: true})
		return contract.Record{}, false, nil
	}
	r, err := scanRecord(t.q.QueryRow(t.ctx, sqlGet, t.service, t.resource, id))
	found := err == nil
	if errors.Is(err, pgx.ErrNoRows) {
		err = nil
	}
	if err != nil {
		return contract.Record{}, false, err
	}
	t.cache(id, &cached{rec: r, found: found, read: true, stored: found})
	return r, found, nil
}

// Prefetch reads the records ids in one query into the overlay
// (participant.Prefetcher): an imported page costs one read, not one per
// record.
func (t *tx) Prefetch(ids []string) error {
	var want []string
	for _, id := range ids {
		if _, ok := t.recs[id]; !ok {
			want = append(want, id)
		}
	}
	if len(want) == 0 || t.cleared {
		return nil // Get answers a cleared resource's ids
	}
	rows, err := t.q.Query(t.ctx, sqlPrefetch, t.service, t.resource, want)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return err
		}
		t.cache(r.ID, &cached{rec: r, found: true, read: true, stored: true})
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range want {
		if _, ok := t.recs[id]; !ok {
			t.cache(id, &cached{read: true})
		}
	}
	return nil
}

// Presume takes the ids not read yet as absent without reading them
// (participant.Presumer); in a transaction run again because one was
// stored, it reads them (Prefetch).
func (t *tx) Presume(ids []string) error {
	if !t.presume {
		return t.Prefetch(ids)
	}
	if t.cleared {
		return nil // Get answers a cleared resource's ids
	}
	for _, id := range ids {
		if _, ok := t.recs[id]; !ok {
			t.cache(id, &cached{read: true, presumed: true})
			t.presumed = true
		}
	}
	return nil
}

func (t *tx) cache(id string, c *cached) {
	if t.recs == nil {
		t.recs = map[string]*cached{}
	}
	t.recs[id] = c
}

func (t *tx) Put(rec contract.Record) error {
	if rec.Version > math.MaxInt64 || rec.Seq > math.MaxInt64 {
		return fmt.Errorf("pgstore: record %q: version or sequence above PostgreSQL's bigint", rec.ID)
	}
	c, ok := t.recs[rec.ID]
	if !ok {
		c = &cached{}
		t.cache(rec.ID, c)
	}
	c.rec, c.found = rec, true
	if !c.pending {
		c.pending = true
		t.pendingRecs = append(t.pendingRecs, rec.ID)
	}
	if rec.Seq > t.lastSeq {
		t.lastSeq, t.resourceDirty = rec.Seq, true
	}
	return nil
}

func (t *tx) Remove(id string) error {
	c, ok := t.recs[id]
	if !ok {
		c = &cached{}
		t.cache(id, c)
	}
	c.rec, c.found = contract.Record{}, false
	if c.presumed {
		c.read = false // its presence is not known: the DELETE goes out
	}
	if !c.pending {
		c.pending = true
		t.pendingRecs = append(t.pendingRecs, id)
	}
	return nil
}

func (t *tx) Digest(slice int64) (contract.SliceDigest, error) {
	if c, ok := t.digests[slice]; ok {
		return c.d, nil
	}
	d := contract.SliceDigest{Slice: slice}
	if t.cleared {
		t.cacheDigest(&cachedDigest{d: d})
		return d, nil
	}
	var count int64
	var hash []byte
	err := t.q.QueryRow(t.ctx, `SELECT count, hash FROM cutover_digests WHERE service = $1 AND resource = $2 AND slice = $3`, t.service, t.resource, slice).Scan(&count, &hash)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return contract.SliceDigest{}, err
	case count < 0 || len(hash) != 16:
		return contract.SliceDigest{}, fmt.Errorf("%w: digest of slice %d of %q", participant.ErrCorrupt, slice, t.resource)
	default:
		d.Count = uint64(count)
		copy(d.Hash[:], hash)
	}
	t.cacheDigest(&cachedDigest{d: d})
	return d, nil
}

func (t *tx) cacheDigest(c *cachedDigest) {
	if t.digests == nil {
		t.digests = map[int64]*cachedDigest{}
	}
	t.digests[c.d.Slice] = c
}

func (t *tx) SetDigest(d contract.SliceDigest) error {
	c, ok := t.digests[d.Slice]
	if !ok {
		c = &cachedDigest{}
		t.cacheDigest(c)
	}
	c.d = d
	if !c.pending {
		c.pending = true
		t.pendingDigests = append(t.pendingDigests, d.Slice)
	}
	return nil
}

func (t *tx) Clear() (int, error) {
	if err := t.flush(); err != nil {
		return 0, err
	}
	tag, err := t.q.Exec(t.ctx, `DELETE FROM cutover_records WHERE service = $1 AND resource = $2`, t.service, t.resource)
	if err != nil {
		return 0, err
	}
	if _, err := t.q.Exec(t.ctx, `DELETE FROM cutover_digests WHERE service = $1 AND resource = $2`, t.service, t.resource); err != nil {
		return 0, err
	}
	t.recs, t.digests, t.cleared = nil, nil, true
	t.lastSeq, t.resourceDirty = 0, true
	return int(tag.RowsAffected()), nil
}

// flush sends the buffered writes: the records new to the table by COPY,
// then one batch of a DELETE per removed record, one INSERT … ON CONFLICT
// over unnest'ed arrays for the other put ones (a page of 500 records is
// one statement, not 500), the digests and the resource row.
func (t *tx) flush() error { return t.send(false) }

// flushCommit sends the buffered writes and COMMIT, in the round trip of
// the writes' batch.
func (t *tx) flushCommit() error { return t.send(true) }

// send sends the buffered writes (flush), then COMMIT if commit.
func (t *tx) send(commit bool) error {
	if t.readOnly || (len(t.pendingRecs) == 0 && len(t.pendingDigests) == 0 && !t.resourceDirty) {
		if commit {
			return t.commit(nil)
		}
		return nil
	}
	b := &pgx.Batch{}
	var gone []string
	var fresh [][]any // rows for COPY
	var put recordColumnsOf
	for _, id := range t.pendingRecs {
		c := t.recs[id]
		c.pending = false
		switch {
		case !c.found && (c.stored || !c.read):
			gone = append(gone, id)
		case !c.found: // never in the table
		case c.read && !c.stored:
			fresh = append(fresh, copyRow(t, &c.rec))
		default:
			put.add(&c.rec)
		}
		c.read, c.stored = true, c.found
	}
	for _, id := range gone {
		b.Queue(sqlDelete, t.service, t.resource, id)
	}

	if len(put.id) > 0 {
		b.Queue(`INSERT INTO cutover_records (service, resource, `+recordColumns+`) `+fromColumns+`
			ON CONFLICT (service, resource, id) DO UPDATE SET kind = EXCLUDED.kind, version = EXCLUDED.version,
			seq = EXCLUDED.seq, created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
			deleted = EXCLUDED.deleted, deleted_at = EXCLUDED.deleted_at, data = EXCLUDED.data, refs = EXCLUDED.refs`,
			put.args(t)...)
	}
	for _, slice := range t.pendingDigests {
		c := t.digests[slice]
		c.pending = false
		if c.d.Count == 0 {
			b.Queue(`DELETE FROM cutover_digests WHERE service = $1 AND resource = $2 AND slice = $3`, t.service, t.resource, slice)
			continue
		}
		b.Queue(`INSERT INTO cutover_digests (service, resource, slice, count, hash) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (service, resource, slice) DO UPDATE SET count = EXCLUDED.count, hash = EXCLUDED.hash`,
			t.service, t.resource, slice, int64(c.d.Count), c.d.Hash[:])
	}
	if t.resourceDirty {
		a := t.auth
		b.Queue(`UPDATE cutover_resources SET rev = $3, role = $4, deletes = $5, until_ms = $6, last_seq = $7 WHERE service = $1 AND resource = $2`,
			t.service, t.resource, int64(a.Rev), string(a.Role), string(a.Deletes), a.Until, int64(t.lastSeq))
		t.resourceDirty = false
	}
	t.pendingRecs, t.pendingDigests = t.pendingRecs[:0], t.pendingDigests[:0]
	if len(fresh) > 0 { // COPY is a round trip of its own; the rows are new to the table, so it may go first
		if _, err := t.q.CopyFrom(t.ctx, pgx.Identifier{"cutover_records"}, copyColumns, pgx.CopyFromRows(fresh)); err != nil {
			return err
		}
	}
	if commit {
		return t.commit(b)
	}
	return t.q.SendBatch(t.ctx, b).Close()
}

// commit sends b (nil: nothing) with COMMIT at its end, and checks that
// COMMIT committed.
func (t *tx) commit(b *pgx.Batch) error {
	if b == nil {
		b = &pgx.Batch{}
	}
	b.Queue(`COMMIT`).Exec(func(tag pgconn.CommandTag) error {
		if tag.String() != "COMMIT" { // a transaction that had failed answers ROLLBACK
			return pgx.ErrTxCommitRollback
		}
		return nil
	})
	return t.q.SendBatch(t.ctx, b).Close()
}

// recordColumnsOf is records as one array per column, for unnest. Refs
// travel as array literals ('{"media/a","media/b"}'), NULL for none, cast
// back to text[] by the statement (unnest would flatten a text[][]).
type recordColumnsOf struct {
	id, kind                           []string
	version, seq, createdAt, updatedAt []int64
	deleted                            []bool
	data                               [][]byte
	refs                               []*string
	deletedAt                          []int64
}

// copyColumns are the columns of copyRow.
var copyColumns = []string{"service", "resource", "id", "kind", "version", "seq", "created_at", "updated_at", "deleted", "deleted_at", "data", "refs"}

// copyRow is r as a row of cutover_records for COPY.
func copyRow(t *tx, r *contract.Record) []any {
	return []any{t.service, t.resource, r.ID, r.Kind, int64(r.Version), int64(r.Seq), r.CreatedAt, r.UpdatedAt, r.Deleted, r.DeletedAt, r.Data, r.Refs}
}

// fromColumns selects the rows of recordColumnsOf.args.
const fromColumns = `SELECT $1, $2, u.id, u.kind, u.version, u.seq, u.created_at, u.updated_at, u.deleted, u.deleted_at, u.data, u.refs::text[]
	FROM unnest($3::text[], $4::text[], $5::int8[], $6::int8[], $7::int8[], $8::int8[], $9::bool[], $10::int8[], $11::bytea[], $12::text[])
		AS u(id, kind, version, seq, created_at, updated_at, deleted, deleted_at, data, refs)`

// args are the arguments of fromColumns.
func (c *recordColumnsOf) args(t *tx) []any {
	return []any{t.service, t.resource, c.id, c.kind, c.version, c.seq, c.createdAt, c.updatedAt, c.deleted, c.deletedAt, c.data, c.refs}
}

func (c *recordColumnsOf) add(r *contract.Record) {
	c.id = append(c.id, r.ID)
	c.kind = append(c.kind, r.Kind)
	c.version = append(c.version, int64(r.Version))
	c.seq = append(c.seq, int64(r.Seq))
	c.createdAt = append(c.createdAt, r.CreatedAt)
	c.updatedAt = append(c.updatedAt, r.UpdatedAt)
	c.deleted = append(c.deleted, r.Deleted)
	c.deletedAt = append(c.deletedAt, r.DeletedAt)
	c.data = append(c.data, r.Data)
	c.refs = append(c.refs, arrayLiteral(r.Refs))
}

// arrayLiteral is refs as a PostgreSQL array literal, nil for none.
func arrayLiteral(refs []string) *string {
	if len(refs) == 0 {
		return nil
	}
	var sb strings.Builder
	sb.WriteByte('{')
	for i, r := range refs {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('"')
		for _, ch := range r {
			if ch == '"' || ch == '\\' {
				sb.WriteByte('\\')
			}
			sb.WriteRune(ch)
		}
		sb.WriteByte('"')
	}
	sb.WriteByte('}')
	lit := sb.String()
	return &lit
}

func (t *tx) Changes(after, upto uint64, limit int) ([]contract.Record, error) {
	if err := t.flush(); err != nil {
		return nil, err
	}
	if after >= math.MaxInt64 {
		return nil, nil
	}
	hi := int64(math.MaxInt64)
	if upto < math.MaxInt64 {
		hi = int64(upto)
	}
	return t.query(sqlChanges, t.service, t.resource, int64(after), hi, limit)
}

func (t *tx) Live(from, to, afterCreated int64, afterID string, limit int) ([]contract.Record, error) {
	if err := t.flush(); err != nil {
		return nil, err
	}
	return t.query(`SELECT `+recordColumns+` FROM cutover_records WHERE service = $1 AND resource = $2 AND NOT deleted
		AND created_at >= $3 AND created_at < $4 AND (created_at, id) > ($5, $6) ORDER BY created_at, id LIMIT $7`,
		t.service, t.resource, from, to, afterCreated, afterID, limit)
}

func (t *tx) query(sql string, args ...any) ([]contract.Record, error) {
	rows, err := t.q.Query(t.ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []contract.Record
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (t *tx) Digests() ([]contract.SliceDigest, error) {
	if err := t.flush(); err != nil {
		return nil, err
	}
	rows, err := t.q.Query(t.ctx, `SELECT slice, count, hash FROM cutover_digests WHERE service = $1 AND resource = $2 AND count > 0 ORDER BY slice`, t.service, t.resource)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []contract.SliceDigest
	for rows.Next() {
		var d contract.SliceDigest
		var count int64
		var hash []byte
		if err := rows.Scan(&d.Slice, &count, &hash); err != nil {
			return nil, err
		}
		if count < 0 || len(hash) != 16 {
			return nil, fmt.Errorf("%w: digest of slice %d of %q", participant.ErrCorrupt, d.Slice, t.resource)
		}
		d.Count = uint64(count)
		copy(d.Hash[:], hash)
		out = append(out, d)
	}
	return out, rows.Err()
}

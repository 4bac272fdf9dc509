package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cutover/cutover/services/store"
)

// RawPostgresCopy is the raw insert rate of one resource's records into
// PostgreSQL, two ways, one transaction per page each.
type RawPostgresCopy struct {
	Records int `json:"records"`
	Pages   int `json:"pages"`
	// InsertMs: one multi-row INSERT per page (the rows as arrays through
	// unnest), the batched insert the copy suite compares with.
	InsertMs float64 `json:"insert_ms"`
	// CopyMs: COPY per page, PostgreSQL's bulk load.
	CopyMs float64 `json:"copy_ms"`
}

// MeasureRawPostgresCopy inserts recs into scratch tables of
// cutover_records' shape on the server at url, in pages of pageLimit
// records, one transaction each, sequentially: once with a multi-row
// INSERT per page and once with COPY. The tables are dropped afterwards.
func MeasureRawPostgresCopy(ctx context.Context, url string, recs []store.Record, pageLimit int) (RawPostgresCopy, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return RawPostgresCopy{}, fmt.Errorf("bench: raw PostgreSQL copy: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS bench_raw_insert, bench_raw_copy;
		CREATE TABLE bench_raw_insert (LIKE cutover_records INCLUDING ALL);
		CREATE TABLE bench_raw_copy (LIKE cutover_records INCLUDING ALL)`); err != nil {
		return RawPostgresCopy{}, fmt.Errorf("bench: raw PostgreSQL copy: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `DROP TABLE IF EXISTS bench_raw_insert, bench_raw_copy`)
	}()
	cols := []string{"service", "resource", "id", "kind", "version", "seq", "created_at", "updated_at", "deleted", "deleted_at", "data", "refs"}
	rc := RawPostgresCopy{Records: len(recs)}
	for _, how := range []string{"insert", "copy"} {
		start := time.Now()
		for lo := 0; lo < len(recs); lo += pageLimit {
			page := recs[lo:min(len(recs), lo+pageLimit)]
			err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if how == "copy" {
					rows := make([][]any, len(page))
					for i, r := range page {
						rows[i] = []any{"raw", "conv/raw", r.ID, r.Kind, int64(r.Version), int64(lo + i + 1), r.CreatedAt, r.UpdatedAt, r.Deleted, r.DeletedAt, r.Data, r.Refs}
					}
					_, err := tx.CopyFrom(ctx, pgx.Identifier{"bench_raw_copy"}, cols, pgx.CopyFromRows(rows))
					return err
				}
				var ids, kinds []string
				var vers, seqs, cs, us, ds []int64
				var dels []bool
				var data [][]byte
				for i, r := range page {
					ids, kinds = append(ids, r.ID), append(kinds, r.Kind)
					vers, seqs = append(vers, int64(r.Version)), append(seqs, int64(lo+i+1))
					cs, us, ds = append(cs, r.CreatedAt), append(us, r.UpdatedAt), append(ds, r.DeletedAt)
					dels, data = append(dels, r.Deleted), append(data, r.Data)
				}
				_, err := tx.Exec(ctx, `INSERT INTO bench_raw_insert (service, resource, id, kind, version, seq, created_at, updated_at, deleted, deleted_at, data)
					SELECT 'raw', 'conv/raw', u.* FROM unnest($1::text[], $2::text[], $3::int8[], $4::int8[], $5::int8[], $6::int8[], $7::bool[], $8::int8[], $9::bytea[]) AS u`,
					ids, kinds, vers, seqs, cs, us, dels, ds, data)
				return err
			})
			if err != nil {
				return RawPostgresCopy{}, fmt.Errorf("bench: raw PostgreSQL %s: %w", how, err)
			}
			if how == "insert" {
				rc.Pages++
			}
		}
		ms := float64(time.Since(start).Microseconds()) / 1000
		if how == "insert" {
			rc.InsertMs = ms
		} else {
			rc.CopyMs = ms
		}
	}
	return rc, nil
}

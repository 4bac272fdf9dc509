package pgstore_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cutover/cutover/internal/pgserver/pgtest"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
	"github.com/cutover/cutover/services/pgstore"
)

// TestPlansUseTheKeys checks that the statements that find records by id
// or by change sequence use their index whatever the statistics say: a
// resource of 3,000 records imported after the table's statistics were
// taken (none: never analyzed), each statement prepared with a generic
// plan, as pgx's statement cache gets after five runs. With the change
// index over the whole table (schema 1) or ids passed as id = ANY($3),
// the by-id statements scanned the whole resource with the id as a
// filter: a page's import took time in proportion to the resource.
func TestPlansUseTheKeys(t *testing.T) {
	ctx := t.Context()
	st := open(t, pgtest.Database(t), "kit")
	p := participant.New("kit", st, participant.Options{})
	var ids []string
	for pg := range 6 {
		recs := make([]contract.Record, 500)
		for j := range recs {
			n := pg*500 + j
			recs[j] = contract.Record{ID: fmt.Sprintf("m%06d", n), Kind: "note", Version: 1, CreatedAt: int64(n) * 1e9, UpdatedAt: 1, Data: []byte("x")}
			ids = append(ids, recs[j].ID)
		}
		if _, err := p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Page: page(recs...)}); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := st.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	args := map[string][]any{
		"get":      {"kit", res, ids[10]},
		"prefetch": {"kit", res, ids[100:600]},
		"delete":   {"kit", res, ids[10]},
		"changes":  {"kit", res, int64(10), int64(1 << 40), 500},
	}
	for _, q := range pgstore.ByKeySQL {
		t.Run(q.Name, func(t *testing.T) {
			tx, err := conn.Begin(ctx) // rolled back: the DELETE removes nothing
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			sd, err := tx.Prepare(ctx, "plan_"+q.Name, q.SQL)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF) EXECUTE "+sd.Name+"("+placeholders(len(args[q.Name]))+")", append([]any{pgx.QueryExecModeSimpleProtocol}, args[q.Name]...)...)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			plan := strings.Join(lines, "\n")
			if !strings.Contains(plan, "using "+q.Index) || strings.Contains(plan, "Rows Removed by Filter") || strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s: want every row found through %s, no filter, no scan; the generic plan:\n%s", q.Name, q.Index, plan)
			}
		})
	}
}

// placeholders is "$1, $2, …, $n".
func placeholders(n int) string {
	var ps []string
	for i := 1; i <= n; i++ {
		ps = append(ps, fmt.Sprintf("$%d", i))
	}
	return strings.Join(ps, ", ")
}

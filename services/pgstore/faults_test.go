package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cutover/cutover/internal/pgserver/pgtest"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
	"github.com/cutover/cutover/services/pgstore"
)

const res = "conv/faults"

func codeOf(err error) contract.Code {
	if e := contract.AsError(err); e != nil {
		return e.Code
	}
	return ""
}

// importing is a target's stamp at revision rev.
func importing(rev uint64) contract.Authority {
	return contract.Authority{Rev: rev, Role: contract.RoleImporting}
}

func page(recs ...contract.Record) *contract.Page {
	return &contract.Page{Service: "kit", Resource: res, Records: recs}
}

func live(id string, version uint64) contract.Record {
	return contract.Record{ID: id, Kind: "note", Version: version, CreatedAt: 1_000, UpdatedAt: int64(version), Data: []byte(id)}
}

func newKit(t *testing.T, o participant.Options) *participant.Participant {
	t.Helper()
	return participant.New("kit", open(t, pgtest.Database(t), "kit"), o)
}

func TestImportBadPagesChangeNothing(t *testing.T) {
	ctx := t.Context()
	p := newKit(t, participant.Options{Kinds: []string{"note"}})
	if _, err := p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Page: page(live("a", 1))}); err != nil {
		t.Fatal(err)
	}
	big := make([]contract.Record, participant.MaxPageRecords+1)
	for i := range big {
		big[i] = live("r", 1)
	}
	unknownKind := live("b", 1)
	unknownKind.Kind = "poll"
	for name, pg := range map[string]*contract.Page{
		"too many records": page(big...),
		"unknown kind":     page(live("c", 1), unknownKind),
		"version 0":        page(live("d", 0)),
		"other service":    {Service: "reactions", Resource: res, Records: []contract.Record{live("e", 1)}},
	} {
		_, err := p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Page: pg})
		if codeOf(err) != contract.CodeInvalid {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	recs, err := p.ReadSlice(ctx, res, 0, 1<<62)
	if err != nil || len(recs) != 1 || recs[0].ID != "a" {
		t.Fatalf("after refused pages: %v, %v; want only a", recs, err)
	}
}

func TestImportDuplicatePageAndUnknownTombstone(t *testing.T) {
	ctx := t.Context()
	p := newKit(t, participant.Options{})
	pg := page(live("a", 1), live("b", 2))
	first, err := p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Page: pg, Digests: true})
	if err != nil || first.Applied != 2 {
		t.Fatalf("first: %+v, %v", first, err)
	}
	again, err := p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Page: pg, Digests: true})
	if err != nil || again.Applied != 0 || len(again.Digests) != 1 || again.Digests[0] != first.Digests[0] {
		t.Fatalf("duplicate page: %+v, %v (first %+v)", again, err, first)
	}
	// A tombstone of a record this store never held is kept: a live copy
	// of it arriving later (an older page replayed) must not resurrect it.
	ts := contract.Record{ID: "ghost", Kind: "note", Version: 3, CreatedAt: 1_000, Deleted: true, Data: []byte("leak"), Refs: []string{"media/x"}}
	if r, err := p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Page: page(ts)}); err != nil || r.Applied != 1 {
		t.Fatalf("tombstone: %+v, %v", r, err)
	}
	if r, err := p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Page: page(live("ghost", 2))}); err != nil || r.Applied != 0 {
		t.Fatalf("older live copy after the tombstone: %+v, %v", r, err)
	}
	// The tombstone is exported without content.
	if _, err := p.Authorize(ctx, res, contract.Authority{Rev: 6, Role: contract.RolePrimary}); err != nil {
		t.Fatal(err)
	}
	exp, err := p.Export(ctx, contract.ExportRequest{Resource: res, Mode: contract.Historical, Authority: contract.Authority{Rev: 7, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}})
	if err != nil {
		t.Fatal(err)
	}
	var saw bool
	for _, r := range exp.Records {
		if r.ID == "ghost" {
			saw = true
			if !r.Deleted || r.Data != nil || r.Refs != nil {
				t.Fatalf("exported tombstone %+v carries content", r)
			}
		}
	}
	if !saw {
		t.Fatalf("the tombstone was not exported: %+v", exp.Records)
	}
}

// TestServerRestartedMidCopy kills PostgreSQL between two pages of an
// import: the participant answers unavailable (retriable) while it is
// down, nothing half-applied remains, and after the restart the copy
// resumes and converges with nothing lost.
func TestServerRestartedMidCopy(t *testing.T) {
	ctx := t.Context()
	srv := pgtest.Shared(t)
	p := newKit(t, participant.Options{})
	if _, err := p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Reset: true, Page: page(live("a", 1), live("b", 1))}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = srv.Restart(context.Background())
		}
	})
	second := page(live("c", 1), live("d", 1))
	_, err := p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Page: second})
	if codeOf(err) != contract.CodeUnavailable {
		t.Fatalf("import with the database down: %v, want unavailable", err)
	}
	// The user path returns the storage's error as it is; the service
	// answers it unavailable (participant.ToError).
	if _, err := p.Put(ctx, res, contract.Record{ID: "u", Kind: "note"}, true, contract.Authority{}); err == nil || participant.ToError(err).Code != contract.CodeUnavailable {
		t.Fatalf("user write with the database down: %v, want a storage error answered unavailable", err)
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	restarted = true
	// The pool reconnects; the retried page applies.
	var res2 contract.ImportResult
	err = whileUnavailable(func() (err error) {
		res2, err = p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Page: second, Digests: true})
		return err
	})
	if err != nil || res2.Applied != 2 {
		t.Fatalf("retried page: %+v, %v", res2, err)
	}
	recs, err := p.ReadSlice(ctx, res, 0, 1<<62)
	if err != nil || len(recs) != 4 {
		t.Fatalf("after the restart: %d records, %v; want a, b, c, d", len(recs), err)
	}
	if want := contract.DigestsOf(recs, contract.SliceWidth); len(res2.Digests) != 1 || res2.Digests[0] != want[0] {
		t.Fatalf("digests %+v, want %+v", res2.Digests, want)
	}
}

func TestSchemaMismatchRefused(t *testing.T) {
	ctx := t.Context()
	url := pgtest.Database(t)
	open(t, url, "kit")
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	if _, err := conn.Exec(ctx, "UPDATE cutover_schema SET sha256 = 'edited' WHERE version = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.Open(ctx, url, pgstore.Options{Service: "kit"}); !errors.Is(err, pgstore.ErrSchema) {
		t.Fatalf("open over an edited schema: %v, want ErrSchema", err)
	}
	if _, err := conn.Exec(ctx, "UPDATE cutover_schema SET sha256 = (SELECT sha256 FROM cutover_schema WHERE version = 1) WHERE false; INSERT INTO cutover_schema (version, name, sha256) VALUES (99, '0099_future.sql', 'x')"); err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.Open(ctx, url, pgstore.Options{Service: "kit"}); !errors.Is(err, pgstore.ErrSchema) {
		t.Fatalf("open over a newer schema: %v, want ErrSchema", err)
	}
	if _, err := pgstore.Open(ctx, url, pgstore.Options{}); err == nil {
		t.Fatal("open without a service")
	}
	if _, err := pgstore.Open(ctx, "postgres://127.0.0.1:1/x?connect_timeout=2", pgstore.Options{Service: "kit"}); err == nil {
		t.Fatal("open of an unreachable server")
	}
}

// Refs travel to PostgreSQL as array literals: quotes, backslashes, commas
// and braces in a ref come back as they went.
func TestRefsRoundTrip(t *testing.T) {
	ctx := t.Context()
	p := newKit(t, participant.Options{})
	refs := []string{`media/a"b`, `media/c\d`, "media/e,f", "media/{g}", "media/ü"}
	rec := live("r", 1)
	rec.Refs = refs
	if _, err := p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Page: page(rec, live("s", 1))}); err != nil {
		t.Fatal(err)
	}
	got, err := p.ReadSlice(ctx, res, 0, 1<<62)
	if err != nil || len(got) != 2 {
		t.Fatalf("%v, %v", got, err)
	}
	if fmt.Sprint(got[0].Refs) != fmt.Sprint(refs) || got[1].Refs != nil {
		t.Fatalf("refs %q and %q, want %q and none", got[0].Refs, got[1].Refs, refs)
	}
}

// TestServerRestartedMidDelta kills PostgreSQL at the source during the
// delta: the export answers unavailable while it is down; after the
// restart the same delta export returns every change after the token,
// nothing lost, nothing twice.
func TestServerRestartedMidDelta(t *testing.T) {
	ctx := t.Context()
	srv := pgtest.Shared(t)
	p := newKit(t, participant.Options{})
	primary := contract.Authority{Rev: 5, Role: contract.RolePrimary}
	for _, id := range []string{"a", "b"} {
		if _, err := p.Put(ctx, res, contract.Record{ID: id, Kind: "note", Data: []byte(id)}, true, primary); err != nil {
			t.Fatal(err)
		}
	}
	hd := contract.Authority{Rev: 6, Role: contract.RolePrimary, Deletes: contract.DeletesTombstone, Until: contract.UntilOf(time.Now().Add(time.Hour))}
	first, err := p.Export(ctx, contract.ExportRequest{Resource: res, Mode: contract.Historical, Authority: hd})
	if err != nil || first.SyncToken == 0 {
		t.Fatalf("historical: %+v, %v", first, err)
	}
	// After the token: an update, a create and a delete (a tombstone).
	if _, err := p.Put(ctx, res, contract.Record{ID: "a", Data: []byte("a2")}, false, hd); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Put(ctx, res, contract.Record{ID: "c", Kind: "note"}, true, hd); err != nil {
		t.Fatal(err)
	}
	if ts, err := p.Delete(ctx, res, "b", false, hd); err != nil || !ts {
		t.Fatalf("delete under the hard-delete lock: tombstoned %v, %v", ts, err)
	}
	fence := contract.Authority{Rev: 7, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}
	delta := contract.ExportRequest{Resource: res, Mode: contract.Delta, SyncToken: first.SyncToken, Authority: fence}
	if err := srv.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = srv.Restart(context.Background())
		}
	})
	if _, err := p.Export(ctx, delta); codeOf(err) != contract.CodeUnavailable {
		t.Fatalf("delta with the database down: %v, want unavailable", err)
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	restarted = true
	var pg contract.Page
	err = whileUnavailable(func() (err error) {
		pg, err = p.Export(ctx, delta)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]contract.Record{}
	for _, r := range pg.Records {
		if _, twice := got[r.ID]; twice {
			t.Fatalf("%s twice in the delta", r.ID)
		}
		got[r.ID] = r
	}
	if len(got) != 3 || string(got["a"].Data) != "a2" || !got["b"].Deleted || got["c"].ID != "c" || pg.More {
		t.Fatalf("delta after the restart: %+v", pg.Records)
	}
}

// Tombstones go after their TTL, live records never, and the tombstones of
// a resource this store imports stay.
func TestSweepTombstones(t *testing.T) {
	ctx := t.Context()
	st, err := pgstore.Open(ctx, pgtest.Database(t), pgstore.Options{Service: "kit", TombstoneTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	p := participant.New("kit", st, participant.Options{})
	old := time.Now().Add(-2 * time.Hour).UnixNano()
	ts := func(id string, at int64) contract.Record {
		return contract.Record{ID: id, Kind: "note", Version: 2, CreatedAt: 1_000, Deleted: true, DeletedAt: at}
	}
	// conv/a: a primary with an expired tombstone, a fresh one and a live record.
	if _, err := p.Import(ctx, contract.ImportRequest{Resource: "conv/a", Authority: importing(5),
		Page: &contract.Page{Records: []contract.Record{ts("old", old), ts("new", time.Now().UnixNano()), live("l", 1)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Authorize(ctx, "conv/a", contract.Authority{Rev: 6, Role: contract.RolePrimary}); err != nil {
		t.Fatal(err)
	}
	// conv/b: still importing, an expired tombstone.
	if _, err := p.Import(ctx, contract.ImportRequest{Resource: "conv/b", Authority: importing(5),
		Page: &contract.Page{Records: []contract.Record{ts("old", old)}}}); err != nil {
		t.Fatal(err)
	}
	n, err := st.SweepTombstones(ctx, time.Now())
	if err != nil || n != 1 {
		t.Fatalf("swept %d, %v; want 1", n, err)
	}
	ids := func(res string) []string {
		recs, err := p.Records(ctx, res)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs {
			out = append(out, r.ID)
		}
		return out
	}
	if got := fmt.Sprint(ids("conv/a")); got != "[new l]" {
		t.Fatalf("conv/a after the sweep: %s", got)
	}
	if got := fmt.Sprint(ids("conv/b")); got != "[old]" {
		t.Fatalf("conv/b (importing) after the sweep: %s", got)
	}
}

// whileUnavailable retries fn, for up to a minute, while it answers
// unavailable (a database coming back: the pool reconnects).
func whileUnavailable(fn func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) || codeOf(err) != contract.CodeUnavailable {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

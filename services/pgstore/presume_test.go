package pgstore_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/cutover/cutover/internal/pgserver/pgtest"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
)

// historical is a historical page of recs.
func historical(recs ...contract.Record) *contract.Page {
	pg := page(recs...)
	pg.Mode = contract.Historical
	return pg
}

// TestHistoricalPagesPresumeAbsence imports historical pages without
// reading their ids first: a page new to the store commits at once; one
// holding a stored record (a page imported twice, a newer version, a
// tombstone of a stored record) is refused by the primary key and runs
// again with the ids read, so the outcome (records applied, the stored
// versions, the digests) is what the import rule gives. Delta pages read
// their ids and never run twice.
func TestHistoricalPagesPresumeAbsence(t *testing.T) {
	ctx := t.Context()
	st := open(t, pgtest.Database(t), "kit")
	p := participant.New("kit", st, participant.Options{})
	imp := func(pg *contract.Page) contract.ImportResult {
		t.Helper()
		r, err := p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Page: pg, Digests: true})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	check := func(what string, r contract.ImportResult, applied int, wrong uint64) {
		t.Helper()
		if r.Applied != applied || st.PresumedWrong() != wrong {
			t.Fatalf("%s: applied %d, ran again %d times; want %d, %d", what, r.Applied, st.PresumedWrong(), applied, wrong)
		}
	}
	first := imp(historical(live("a", 1), live("b", 1), live("c", 1)))
	check("new page", first, 3, 0)
	again := imp(historical(live("a", 1), live("b", 1), live("c", 1)))
	check("the same page again", again, 0, 1)
	if !slices.Equal(again.Digests, first.Digests) {
		t.Fatalf("digests after the duplicate page %v, want %v", again.Digests, first.Digests)
	}
	gone := live("b", 2)
	gone.Deleted = true
	r := imp(historical(live("a", 2), gone, live("d", 1)))
	check("a newer version, a tombstone and a new record", r, 3, 2)
	r = imp(&contract.Page{Service: "kit", Resource: res, Mode: contract.Delta, Records: []contract.Record{live("c", 2)}})
	check("delta page", r, 1, 2)

	// The same final records imported into an empty store give the same
	// digests: nothing presumed was counted twice or left out.
	fresh := participant.New("kit", open(t, pgtest.Database(t), "kit"), participant.Options{})
	want, err := fresh.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Digests: true,
		Page: page(live("a", 2), gone, live("c", 2), live("d", 1))})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Digests, want.Digests) {
		t.Fatalf("digests %v, want %v", r.Digests, want.Digests)
	}
	recs, err := p.Records(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, r := range recs {
		if !r.Deleted {
			got[r.ID] = r.Version
		}
	}
	if want := map[string]uint64{"a": 2, "c": 2, "d": 1}; !maps.Equal(got, want) {
		t.Fatalf("live records %v, want %v (b's tombstone wins)", got, want)
	}
}

package pgstore_test

import (
	"errors"
	"testing"

	"github.com/cutover/cutover/internal/pgserver/pgtest"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
	"github.com/cutover/cutover/services/pgstore"
)

// An Update that does not commit (its function fails; its COPY meets a
// stored record presumed absent; its authority is refused) is rolled back
// on its own connection: the connection goes back to the pool outside any
// transaction (the pool would otherwise close it and dial a new one), the
// resource's row lock is released, and nothing it wrote is left.
func TestUpdatesThatFailRollBackOnTheirConnection(t *testing.T) {
	st, err := pgstore.Open(t.Context(), pgtest.Database(t)+"&pool_max_conns=1", pgstore.Options{Service: "kit"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	p := participant.New("kit", st, participant.Options{})
	ctx := t.Context()
	if _, err := p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Page: historical(live("a", 1))}); err != nil {
		t.Fatal(err)
	}
	dialed := st.Pool().Stat().NewConnsCount()

	boom := errors.New("boom")
	err = st.Update(ctx, res, func(tx participant.Tx) error {
		if err := tx.Put(contract.Record{ID: "b", Kind: "note", Version: 1, Seq: 2, CreatedAt: 1_000, UpdatedAt: 1}); err != nil {
			return err
		}
		if _, err := tx.Changes(0, 10, 10); err != nil { // the Put is sent: the rollback must undo it
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want the function's error", err)
	}
	// A historical page holding "a" again: its COPY fails on the primary
	// key, the transaction rolls back and runs again with the ids read.
	before := st.PresumedWrong()
	if _, err := p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(5), Page: historical(live("a", 1), live("c", 1))}); err != nil {
		t.Fatal(err)
	}
	if st.PresumedWrong() != before+1 {
		t.Fatalf("presumed wrong %d times, want %d: the page did not meet the stored record", st.PresumedWrong(), before+1)
	}
	if _, err := p.Import(ctx, contract.ImportRequest{Resource: res, Authority: importing(4), Page: historical(live("d", 1))}); contract.AsError(err) == nil {
		t.Fatalf("import under an older stamp = %v, want a refusal", err)
	}
	if n := st.Pool().Stat().NewConnsCount(); n != dialed {
		t.Errorf("%d connections dialed after the failed updates, want %d: one went back to the pool inside a transaction", n, dialed)
	}
	recs, err := p.Records(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	if len(ids) != 2 || ids[0] != "a" || ids[1] != "c" {
		t.Fatalf("records %v, want [a c]", ids)
	}
}

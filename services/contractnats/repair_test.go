package contractnats_test

import (
	"testing"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
)

// TestRepair: the operator's repair of an authority record (`cutover fence
// clear`) replaces the record whatever it holds, a higher revision
// included, and answers with the record it replaced; a malformed authority
// is refused and changes nothing. A participant without contract.Repairer
// answers CodeInternal.
func TestRepair(t *testing.T) {
	e := newEnv(t)
	st := openStore(t)
	e.serve(t, "eu", services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	c := contractnats.Dial(e.nc, e.js, "eu", "messages")
	put(t, st, res, "a", "1")
	stranded := contract.Authority{Rev: 900, Role: contract.RoleSecondary}
	if _, err := c.Authorize(t.Context(), res, stranded); err != nil {
		t.Fatal(err)
	}
	repaired := contract.Authority{Rev: 3, Role: contract.RolePrimary}
	prev, err := c.Repair(t.Context(), res, repaired)
	if err != nil || prev != stranded {
		t.Fatalf("Repair = %s, %v; want the record it replaced, %s", prev, err, stranded)
	}
	if a, err := st.Authority(res); err != nil || a != repaired {
		t.Fatalf("after the repair: %s, %v", a, err)
	}
	put(t, st, res, "b", "writable again")
	if _, err := c.Repair(t.Context(), res, contract.Authority{Rev: 4, Role: contract.RoleExporting}); code(t, err) != contract.CodeInvalid {
		t.Fatalf("a malformed repair: %v, want invalid", err)
	}
	if _, err := c.Repair(t.Context(), "", repaired); code(t, err) != contract.CodeInvalid {
		t.Fatalf("empty resource: %v, want invalid", err)
	}
	if a, _ := st.Authority(res); a != repaired {
		t.Fatalf("refused repairs changed the record: %s", a)
	}

	e.serve(t, "us", plain{services.NewStoreParticipant("messages", openStore(t), services.StoreParticipantOptions{})}, contractnats.ServeOptions{})
	if _, err := contractnats.Dial(e.nc, e.js, "us", "messages").Repair(t.Context(), res, repaired); code(t, err) != contract.CodeInternal {
		t.Fatalf("a participant without Repairer: %v, want internal", err)
	}
}

// plain hides every method but contract.Participant's.
type plain struct{ contract.Participant }

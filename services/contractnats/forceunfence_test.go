package contractnats_test

import (
	"errors"
	"testing"
	"time"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/cutover/cutover/services/store"
)

// TestForceClearFence: the operator's clear of a stranded fence (issue 14
// #2, `cutover fence clear`) removes an active fence whatever its token,
// answers with it, retires its token (a late fence request under it is
// refused), and answers CodeNotFound, changing nothing, when no fence is
// active. A participant without contract.FenceAdmin answers CodeInternal.
func TestForceClearFence(t *testing.T) {
	e := newEnv(t)
	st := openStore(t)
	e.serve(t, "eu", services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	c := contractnats.Dial(e.nc, e.js, "eu", "messages")
	put(t, st, res, "a", "1")
	if _, err := c.ForceClearFence(t.Context(), res); code(t, err) != contract.CodeNotFound {
		t.Fatalf("no fence: %v, want not found", err)
	}
	const tok = "0123456789abcdef0123456789abcdef"
	fence := contract.FenceFor(contract.FenceWrite, tok, time.Now().Add(time.Hour), 0)
	if err := c.SetFence(t.Context(), res, fence); err != nil {
		t.Fatal(err)
	}
	got, err := c.ForceClearFence(t.Context(), res)
	if err != nil || got.Token != tok || got.Level != contract.FenceWrite {
		t.Fatalf("force clear: %+v %v", got, err)
	}
	if f, err := st.GetFence(res); err != nil || f.Active(time.Now()) {
		t.Fatalf("after the clear: %+v %v", f, err)
	}
	if err := st.SetFence(res, fence); !errors.Is(err, store.ErrTokenRetired) {
		t.Fatalf("a late fence of the cleared token: %v, want ErrTokenRetired", err)
	}
	put(t, st, res, "b", "writable again")
	if _, err := c.ForceClearFence(t.Context(), res); code(t, err) != contract.CodeNotFound {
		t.Fatalf("cleared twice: %v, want not found", err)
	}
	if _, err := c.ForceClearFence(t.Context(), ""); code(t, err) != contract.CodeInvalid {
		t.Fatalf("empty resource: %v, want invalid", err)
	}

	e.serve(t, "us", plain{services.NewStoreParticipant("messages", openStore(t), services.StoreParticipantOptions{})}, contractnats.ServeOptions{})
	if _, err := contractnats.Dial(e.nc, e.js, "us", "messages").ForceClearFence(t.Context(), res); code(t, err) != contract.CodeInternal {
		t.Fatalf("a participant without FenceAdmin: %v, want internal", err)
	}
}

// plain hides every method but contract.Participant's.
type plain struct{ contract.Participant }

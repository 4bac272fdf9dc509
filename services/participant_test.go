package services_test

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// TestCleanupNeedsASecondary: a StoreParticipant removes a resource's
// records only under an authority that makes its store a secondary: never
// without one, never at a primary or an importing target, and never under
// an authority older than the one it holds (a late cleanup after the
// resource came back).
func TestCleanupNeedsASecondary(t *testing.T) {
	const res = "conv/guarded"
	st, err := store.Open(store.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Put(res, store.Record{ID: "a", Data: []byte("x")}, true); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{})
	if _, err := p.Authorize(ctx, res, contract.Authority{Rev: 3, Role: contract.RolePrimary}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a    contract.Authority
		code contract.Code
	}{
		{contract.Authority{}, contract.CodeInvalid},
		{contract.Authority{Rev: 3, Role: contract.RolePrimary}, contract.CodeConflict},
		{contract.Authority{Rev: 4, Role: contract.RoleImporting}, contract.CodeConflict},
		{contract.Authority{Rev: 2, Role: contract.RoleSecondary}, contract.CodeConflict},
	} {
		if n, err := p.Cleanup(ctx, res, c.a); n != 0 || contract.AsError(err).Code != c.code {
			t.Fatalf("Cleanup under %s = %d, %v; want %s and nothing deleted", c.a, n, err, c.code)
		}
	}
	if live, _, _ := st.Count(res); live != 1 {
		t.Fatalf("%d records left, want 1", live)
	}
	if n, err := p.Cleanup(ctx, res, contract.Authority{Rev: 5, Role: contract.RoleSecondary}); err != nil || n != 1 {
		t.Fatalf("Cleanup at a secondary = %d, %v; want 1, nil", n, err)
	}
}

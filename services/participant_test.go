package services_test

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contracttest"
	"github.com/cutover/cutover/services/store"
)

// TestCleanupNeedsItsGuard: a StoreParticipant never cleans up without a
// cleanup guard: it cannot tell whether its region is the resource's
// primary or a migration's target, and deleting there would delete live
// data (contract.Participant.Cleanup, issue 14 #4). With
// RoutingCleanupGuard it keeps the resource exactly there.
func TestCleanupNeedsItsGuard(t *testing.T) {
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
	n, err := services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{}).Cleanup(ctx, res)
	if err == nil || n != 0 {
		t.Fatalf("Cleanup without a guard = %d, %v; want an error and nothing deleted", n, err)
	}
	if c := contract.AsError(err).Code; c != contract.CodeInternal {
		t.Fatalf("Cleanup without a guard: code %s, want %s", c, contract.CodeInternal)
	}
	if live, _, _ := st.Count(res); live != 1 {
		t.Fatalf("%d records left, want 1", live)
	}

	routing := contracttest.NewRouting()
	p := services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{KeepOnCleanup: services.RoutingCleanupGuard(routing, "eu")})
	for _, r := range [][2]string{{"eu", ""}, {"us", "eu"}} {
		if err := routing.Route(res, r[0], r[1]); err != nil {
			t.Fatal(err)
		}
		if n, err := p.Cleanup(ctx, res); err != nil || n != 0 {
			t.Fatalf("Cleanup at eu with primary %q, target %q = %d, %v; want 0, nil", r[0], r[1], n, err)
		}
	}
	if err := routing.Route(res, "us", ""); err != nil {
		t.Fatal(err)
	}
	if n, err := p.Cleanup(ctx, res); err != nil || n != 1 {
		t.Fatalf("Cleanup at eu, neither primary nor target = %d, %v; want 1, nil", n, err)
	}
}

package orchestrator_test

import (
	"testing"

	"context"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/kvrouting"
)

// TestMigrationsOf: a resource moved there and back has two migrations, in
// order.
func TestMigrationsOf(t *testing.T) {
	ctx := context.Background()
	sys, err := system.Start(ctx, system.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	if _, err := sys.Locker.Register(ctx, mustResource("conv/lunch"), sys.Source); err != nil {
		t.Fatal(err)
	}
	there, err := sys.Orch.Start(ctx, events.Start{Resource: "conv/lunch", Target: sys.Target})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(ctx, t, sys, there)
	back, err := sys.Orch.Start(ctx, events.Start{Resource: "conv/lunch", Target: sys.Source})
	if err != nil {
		t.Fatal(err)
	}
	waitDone(ctx, t, sys, back)
	ids, err := sys.Orch.MigrationsOf(ctx, "conv/lunch")
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[0] != there || ids[1] != back {
		t.Fatalf("MigrationsOf = %v, want [%s %s]", ids, there, back)
	}
}

func mustResource(s string) kvrouting.Resource {
	r, err := kvrouting.ParseResource(s)
	if err != nil {
		panic(err)
	}
	return r
}

// waitDone polls the migration's state until it has ended.
func waitDone(ctx context.Context, t *testing.T, sys *system.System, id string) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if st, _, err := sys.Orch.State(ctx, id); err == nil && st.Status.Terminal() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("migration %s did not end", id)
}

package orchestrator_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/kvrouting"
)

// Example_migrationsOf (Client.MigrationsOf) finds a resource's migrations through the
// resource index (one subject filter on MIGRATION_INDEX), not by reading
// every migration's events.
func Example_migrationsOf() {
	ctx := context.Background()
	sys, err := system.Start(ctx, system.Config{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	if _, err := sys.Locker.Register(ctx, mustResource("conv/lunch"), sys.Source); err != nil {
		log.Fatal(err)
	}
	there, err := sys.Orch.Start(ctx, events.Start{Resource: "conv/lunch", Target: sys.Target})
	if err != nil {
		log.Fatal(err)
	}
	waitDone(ctx, sys, there)
	back, err := sys.Orch.Start(ctx, events.Start{Resource: "conv/lunch", Target: sys.Source})
	if err != nil {
		log.Fatal(err)
	}
	waitDone(ctx, sys, back)
	ids, err := sys.Orch.MigrationsOf(ctx, "conv/lunch")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(ids), ids[0] == there, ids[1] == back)
	// Output: 2 true true
}

func mustResource(s string) kvrouting.Resource {
	r, err := kvrouting.ParseResource(s)
	if err != nil {
		log.Fatal(err)
	}
	return r
}

// waitDone polls the migration's state until it has ended.
func waitDone(ctx context.Context, sys *system.System, id string) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if st, _, err := sys.Orch.State(ctx, id); err == nil && st.Status.Terminal() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	log.Fatalf("migration %s did not end", id)
}

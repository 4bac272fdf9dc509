package orchestrator_test

import (
	"context"
	"fmt"
	"log"

	"github.com/cutover/cutover/nats/natsclient"
	"github.com/cutover/cutover/orchestrator"
)

// Example_migrationsOf finds a resource's migrations (Client.MigrationsOf)
// through the resource index (one subject filter on MIGRATION_INDEX), not
// by reading every migration's events: a library user needs nothing but a
// NATS connection to the deployment (natsclient.Connect; no embedded
// server). TestMigrationsOf runs the same against a whole deployment.
func Example_migrationsOf() {
	ctx := context.Background()
	nc, js, err := natsclient.Connect(ctx, "nats://127.0.0.1:4222")
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	ids, err := orchestrator.NewClient(nc, js).MigrationsOf(ctx, "conv/lunch")
	if err != nil {
		log.Fatal(err)
	}
	for _, id := range ids {
		fmt.Println(id)
	}
}

package chaos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cutover/cutover/internal/chaos"
	"github.com/cutover/cutover/internal/pgserver"
	cnats "github.com/cutover/cutover/nats"
)

// TestChaosShort is the short chaos run inside `make test`: a fixed seed,
// ~20 s of nemesis, then drain and the independent check.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run: 3-node cluster, ~30 s")
	}
	rep := runChecked(t, chaos.Options{Seed: 1, Duration: 20 * time.Second, Workers: 3, Clients: 4})
	if n := rep.Nemesis; n.LeaderKills == 0 || n.WorkerKills == 0 || n.Partitions == 0 || n.Pauses == 0 || n.DuplicateStarts == 0 {
		t.Errorf("a fault kind never happened: %+v", n)
	}
	if rep.Migrations.Completed == 0 || rep.Writes.Acknowledged == 0 {
		t.Errorf("no work done: %d migrations completed, %d writes acknowledged", rep.Migrations.Completed, rep.Writes.Acknowledged)
	}
}

// TestChaosSuperclusterShort is the supercluster's short run inside `make
// test` (issue 16): two regions of one node each, gateways shaped rtt=40ms;
// leader kills stop the home region's node, partitions cut a region off.
func TestChaosSuperclusterShort(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run: a two-region supercluster, ~40 s")
	}
	wan, err := cnats.ParseWAN("rtt=40ms")
	if err != nil {
		t.Fatal(err)
	}
	rep := runChecked(t, chaos.Options{Seed: 2, Duration: 15 * time.Second, Workers: 2, Clients: 3, Supercluster: true, WAN: wan, Convergence: "fence"})
	if rep.Topology != "supercluster" || rep.WAN != wan.String() {
		t.Errorf("topology %q, wan %q", rep.Topology, rep.WAN)
	}
	if n := rep.Nemesis; n.LeaderKills == 0 || n.Partitions == 0 {
		t.Errorf("a fault kind never happened: %+v", n)
	}
	if rep.Migrations.Completed == 0 || rep.Writes.Acknowledged == 0 {
		t.Errorf("no work done: %d migrations completed, %d writes acknowledged", rep.Migrations.Completed, rep.Writes.Acknowledged)
	}
}

// TestChaosPostgresShort is the short run with every region's messages in
// PostgreSQL (the participant kit) and the nemesis crashing and restarting
// the database besides its other faults.
func TestChaosPostgresShort(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run with PostgreSQL, ~30 s")
	}
	if _, err := pgserver.Bin(); err != nil {
		t.Skip(err)
	}
	rep := runChecked(t, chaos.Options{Seed: 3, Duration: 15 * time.Second, Workers: 2, Clients: 3, Postgres: true, Convergence: "fence"})
	if rep.Nemesis.PostgresRestarts == 0 {
		t.Errorf("PostgreSQL was never restarted: %+v", rep.Nemesis)
	}
	if rep.Migrations.Completed == 0 || rep.Writes.Acknowledged == 0 {
		t.Errorf("no work done: %d migrations completed, %d writes acknowledged", rep.Migrations.Completed, rep.Writes.Acknowledged)
	}
}

// Options that Run refuses are refused before anything starts.
func TestOptionsValidate(t *testing.T) {
	for _, o := range []chaos.Options{{Workers: 1}, {Clients: -1}, {Duration: -time.Second}, {Think: time.Millisecond},
		{WAN: cnats.WAN{RTT: time.Millisecond}}, {Nodes: 3}, {Supercluster: true, Nodes: 2}} {
		if _, err := chaos.Run(context.Background(), o, nil); !errors.Is(err, chaos.ErrOptions) {
			t.Errorf("%+v: got %v, want ErrOptions", o, err)
		}
	}
}

// runChecked runs chaos with o (bounded by 4 minutes), logs the report and
// fails the test on any violated invariant.
func runChecked(t *testing.T, o chaos.Options) *chaos.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	rep, err := chaos.Run(ctx, o, &stderr)
	if err != nil {
		t.Fatalf("chaos: %v\n%s", err, stderr.String())
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	t.Logf("report:\n%s", b)
	if bad := rep.Failures(); len(bad) > 0 {
		t.Fatalf("invariants violated: %v", bad)
	}
	return rep
}

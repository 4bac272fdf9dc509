package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/cutover/cutover/internal/demo"
	"github.com/cutover/cutover/internal/system"
)

func init() {
	register("demo", "migrate a realistic chat workload between regions under live traffic, then check nothing was lost", runDemo)
}

// runDemo is `cutover demo`, the main job (`make demo`; internal/demo).
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "demo [--conversations N] [--cluster 1|3] [--supercluster [--wan rtt=80ms,mbps=200]] [--clients N] [--raw-clients N] [--convergence fence|ttl] [--resolver-ttl D] [--queue-writes D] [--postgres [URL]] [--json FILE]", stdout)
	var o demo.Options
	var jsonFile string
	fs.IntVar(&o.Conversations, "conversations", 200, "conversations to seed and migrate (54% ~10 messages, 39% ~80, 7% ~4,000)")
	fs.IntVar(&o.Cluster, "cluster", 1, "embedded JetStream nodes: 1, or 3 for an R3 cluster")
	fs.IntVar(&o.Clients, "clients", 6, "concurrent users driving live traffic")
	fs.IntVar(&o.Concurrency, "concurrency", 16, "migrations in flight (tenant fan-out limit)")
	fs.Uint64Var(&o.Seed, "seed", 1, "random seed")
	fs.StringVar(&jsonFile, "json", "", "also write the report as JSON to this file")
	fs.IntVar(&o.BigSize, "big", 4000, "messages in a large (channel) conversation")
	fs.StringVar(&o.Convergence, "convergence", "fence", "Phase 1's wait: fence (no cache waited for; the stores' fences stand in) or ttl (every routing cache expires first, the paper's wait)")
	fs.DurationVar(&o.ResolverTTL, "resolver-ttl", 0, "TTL of the services' routing caches (0: the default tiers, 250ms and 500ms)")
	fs.IntVar(&o.RawClients, "raw-clients", 0, "plain HTTP clients that post and never retry (raw.* in the report)")
	fs.Var(postgresFlag{&o.Postgres}, "postgres", "keep the messages service in PostgreSQL (the participant kit) while the other services stay on Pebble: a URL, or nothing for a private server from the machine's binaries")
	queue := addQueueFlags(fs)
	checkWAN := wanFlags(fs, &o.Supercluster, &o.WAN)
	if err := parse(fs, joinPostgresURL(args)); err != nil {
		return err
	}
	if err := checkWAN(); err != nil {
		return err
	}
	var qc system.Config
	if err := queue.apply(&qc); err != nil {
		return err
	}
	o.QueueWrites, o.QueueMax = qc.QueueWrites, qc.QueueMax
	if o.RawClients < 0 {
		return fmt.Errorf("%w: --raw-clients must be >= 0", errUsage)
	}
	if o.Conversations < 1 || o.Clients < 1 || o.Concurrency < 1 || o.BigSize < 1 || (o.Cluster != 1 && o.Cluster != 3) {
		return fmt.Errorf("%w: --conversations, --clients, --concurrency, --big must be >= 1 and --cluster 1 or 3", errUsage)
	}
	if o.Convergence != "fence" && o.Convergence != "ttl" || o.ResolverTTL < 0 {
		return fmt.Errorf("%w: --convergence must be fence or ttl, --resolver-ttl >= 0", errUsage)
	}
	rep, err := demo.Run(ctx, o, stdout, stderr)
	if err != nil {
		return err
	}
	rep.Print(stdout)
	if jsonFile != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(jsonFile, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if bad := rep.Failures(); len(bad) > 0 {
		return fmt.Errorf("invariants violated: %v", bad)
	}
	return nil
}

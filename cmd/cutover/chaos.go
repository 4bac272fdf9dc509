package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/cutover/cutover/internal/chaos"
)

func init() {
	register("chaos", "run migrations under live traffic on a 3-node cluster (or a supercluster) while a seeded nemesis breaks things, then check the invariants", runChaos)
}

// runChaos is `cutover chaos` (docs/chaos.md; internal/chaos).
func runChaos(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chaos", "chaos [--seed N] [--duration D] [--json] [--postgres] [--supercluster [--cluster 1|3] [--wan rtt=40ms]]", stdout)
	var o chaos.Options
	var asJSON bool
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the nemesis schedule, the workload and the traffic")
	fs.DurationVar(&o.Duration, "duration", time.Minute, "how long the nemesis runs (migrations then drain and are checked)")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fs.IntVar(&o.Workers, "workers", 3, "orchestrator workers alive at once (>= 2)")
	fs.IntVar(&o.Clients, "clients", 6, "concurrent users driving live traffic")
	fs.DurationVar(&o.Think, "think", 100*time.Millisecond, "mean pause between one user's requests (uniform in [think/2, 3*think/2]); the traffic is live but bounded, so conversations stay of a size that migrates in seconds")
	fs.BoolVar(&o.Verbose, "v", false, "log every nemesis action to stderr")
	fs.BoolVar(&o.NoSlowFsync, "no-slow-fsync", false, "keep the stores' fsyncs as the disk does them (by default about one in twenty takes 5-50 ms longer)")
	fs.BoolVar(&o.NoClockSkew, "no-clock-skew", false, "give every worker the true clock (by default each runs off by a seeded offset within ± half the skew margin)")
	fs.BoolVar(&o.Postgres, "postgres", false, "keep every region's messages in a private PostgreSQL server (the participant kit), which the nemesis crashes and restarts")
	fs.StringVar(&o.Convergence, "convergence", "fence", "Phase 1's wait: fence (no cache waited for) or ttl (every routing cache expires first)")
	fs.DurationVar(&o.ResolverTTL, "resolver-ttl", 0, "TTL of the services' routing caches (0: the default tiers; the stale API keeps its 8 s)")
	checkWAN := wanFlags(fs, &o.Supercluster, &o.WAN)
	fs.IntVar(&o.Nodes, "cluster", 0, "with --supercluster: nodes per region, 1 (default) or 3")
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkWAN(); err != nil {
		return err
	}
	if o.Validate() != nil {
		return fmt.Errorf("%w: --workers must be >= 2, --clients >= 1, --duration > 0, --think >= 2ms, --resolver-ttl >= 0, --convergence fence or ttl, --cluster 1 or 3 with --supercluster", errUsage)
	}
	rep, err := chaos.Run(ctx, o, stderr)
	if err != nil {
		return err
	}
	if asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		rep.Print(stdout)
	}
	if bad := rep.Failures(); len(bad) > 0 {
		return fmt.Errorf("chaos seed %d: invariants violated: %v", o.Seed, bad)
	}
	return nil
}

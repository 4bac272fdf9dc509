//go:build ignore

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

func init() {
	register("chaos", "run migrations under live traffic on a 3-node cluster while a seeded nemesis breaks things, then check the invariants", runChaos)
}

// chaosOptions are the chaos run's flags.
type chaosOptions struct {
	seed     uint64
	duration time.Duration
	json     bool
	workers  int
	clients  int
	think    time.Duration
	verbose  bool
}

// runChaos is `cutover chaos` (issue 6 item 1; docs/chaos.md).
func runChaos(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("chaos", "chaos [--seed N] [--duration D] [--json]", stdout)
	o := chaosOptions{}
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the nemesis schedule, the workload and the traffic")
	fs.DurationVar(&o.duration, "duration", time.Minute, "how long the nemesis runs (migrations then drain and are checked)")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON")
	fs.IntVar(&o.workers, "workers", 3, "orchestrator workers alive at once (>= 2)")
	fs.IntVar(&o.clients, "clients", 6, "concurrent users driving live traffic")
	fs.DurationVar(&o.think, "think", 100*time.Millisecond, "mean pause between one user's requests (uniform in [think/2, 3*think/2]); the traffic is live but bounded, so conversations stay of a size that migrates in seconds")
	fs.BoolVar(&o.verbose, "v", false, "log every nemesis action to stderr")
	if err := parse(fs, args); err != nil {
		return err
	}
	if o.workers < 2 || o.clients < 1 || o.duration <= 0 || o.think < 2*time.Millisecond {
		return fmt.Errorf("%w: --workers must be >= 2, --clients >= 1, --duration > 0, --think >= 2ms", errUsage)
	}
	rep, err := chaos(ctx, o, stderr)
	if err != nil {
		return err
	}
	if o.json {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		rep.print(stdout)
	}
	if bad := rep.failures(); len(bad) > 0 {
		return fmt.Errorf("chaos seed %d: invariants violated: %v", o.seed, bad)
	}
	return nil
}

// chaosReport is what `cutover chaos --json` prints.
type chaosReport struct {
	Seed      uint64  `json:"seed"`
	DurationS float64 `json:"duration_s"`
	Nemesis   struct {
		LeaderKills     int      `json:"leader_kills"`
		WorkerKills     int      `json:"worker_kills"`
		WorkersStarted  int      `json:"workers_started"`
		Partitions      int      `json:"partitions"`
		PartitionLeaks  int      `json:"partitions_leaked"`
		Pauses          int      `json:"pauses"`
		PausesTriggered int      `json:"pauses_triggered"`
		DuplicateStarts int      `json:"duplicate_starts"`
		StaleRequests   int      `json:"stale_api_requests"`
		Schedule        []string `json:"schedule,omitempty"`
	} `json:"nemesis"`
	Migrations struct {
		Started    int `json:"started"`
		Completed  int `json:"completed"`
		RolledBack int `json:"rolled_back_cleanly"`
		Unfinished int `json:"unfinished"`
		Tenants    int `json:"tenants"`
		// Reasons counts why migrations ended without completing.
		Reasons map[string]int `json:"end_reasons,omitempty"`
		// StepErrors samples the step failures behind them.
		StepErrors []string `json:"step_error_samples,omitempty"`
	} `json:"migrations"`
	Writes struct {
		Attempted    int64   `json:"attempted"`
		Acknowledged int64   `json:"acknowledged"`
		Rejected423  int64   `json:"rejected_423"`
		Unrecovered  int64   `json:"unrecovered"`
		Failed       int64   `json:"failed_other"`
		Reads        int64   `json:"reads"`
		MaxFenceMs   float64 `json:"max_client_fence_ms"`
		Conversation int     `json:"conversations"`
	} `json:"writes"`
	Observed struct {
		Revisions int `json:"routing_revisions"`
	} `json:"observed"`
	Invariants struct {
		LostWrites          int      `json:"lost_writes"`
		Resurrected         int      `json:"resurrected_deletes"`
		DualAuthorityWrites int      `json:"writes_at_non_authoritative_location"`
		PartialCutovers     int      `json:"partial_cutovers"`
		OrphanedLocks       int      `json:"orphaned_locks"`
		NotClean            int      `json:"migrations_not_completed_or_cleanly_rolled_back"`
		StaleTokenOps       int      `json:"stale_token_ops"`
		PausedHolderOps     int      `json:"paused_holder_ops_after_expiry"`
		MaxWriteFenceMs     float64  `json:"max_write_fence_ms"`
		WriteLockExpiryMs   float64  `json:"write_lock_expiry_ms"`
		Uncertain           int      `json:"unacknowledged_applied"`
		Samples             []string `json:"samples,omitempty"`
	} `json:"invariants"`
}

func (r *chaosReport) failures() []string {
	inv := r.Invariants
	var bad []string
	add := func(n int, what string) {
		if n != 0 {
			bad = append(bad, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(inv.LostWrites, "lost acknowledged writes")
	add(inv.Resurrected, "resurrected deletes")
	add(inv.DualAuthorityWrites, "writes at a non-authoritative location")
	add(inv.PartialCutovers, "partial cutovers")
	add(inv.OrphanedLocks, "orphaned locks")
	add(inv.NotClean, "migrations neither completed nor cleanly rolled back")
	add(inv.StaleTokenOps, "operations accepted with a stale token")
	add(inv.PausedHolderOps, "operations by a paused holder after its expiry")
	if inv.MaxWriteFenceMs > inv.WriteLockExpiryMs {
		bad = append(bad, fmt.Sprintf("write fence %.0f ms beyond the write-lock expiry %.0f ms", inv.MaxWriteFenceMs, inv.WriteLockExpiryMs))
	}
	return bad
}

func (r *chaosReport) print(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	n := r.Nemesis
	p("\n== cutover chaos: seed %d, %.1f s", r.Seed, r.DurationS)
	p("nemesis: %d leader kills, %d worker kills (%d started), %d partitions, %d pauses (%d hit a write lock), %d duplicate starts, %d stale-API requests",
		n.LeaderKills, n.WorkerKills, n.WorkersStarted, n.Partitions, n.Pauses, n.PausesTriggered, n.DuplicateStarts, n.StaleRequests)
	m := r.Migrations
	p("migrations: %d started (%d tenants), %d completed, %d rolled back cleanly, %d unfinished", m.Started, m.Tenants, m.Completed, m.RolledBack, m.Unfinished)
	wr := r.Writes
	p("traffic: %d writes attempted, %d acknowledged, %d reads over %d conversations; 423: %d, unrecovered %d, other failures %d; longest client-felt fence %.0f ms",
		wr.Attempted, wr.Acknowledged, wr.Reads, wr.Conversation, wr.Rejected423, wr.Unrecovered, wr.Failed, wr.MaxFenceMs)
	inv := r.Invariants
	p("invariants (from acknowledged operations, the stores and the routing revisions; %d revisions observed):", r.Observed.Revisions)
	p("  lost acknowledged writes               %d", inv.LostWrites)
	p("  resurrected deletes                    %d", inv.Resurrected)
	p("  writes at a non-authoritative location %d", inv.DualAuthorityWrites)
	p("  partial cutovers                       %d", inv.PartialCutovers)
	p("  orphaned locks                         %d", inv.OrphanedLocks)
	p("  migrations not completed/rolled back   %d", inv.NotClean)
	p("  operations with a stale token          %d (by paused holders after expiry: %d)", inv.StaleTokenOps, inv.PausedHolderOps)
	p("  longest write fence                    %.0f ms (write-lock expiry %.0f ms)", inv.MaxWriteFenceMs, inv.WriteLockExpiryMs)
	for _, s := range inv.Samples {
		p("    %s", s)
	}
	if bad := r.failures(); len(bad) == 0 {
		p("OK: every invariant holds (reproduce with --seed %d)", r.Seed)
	} else {
		p("FAIL: %v (reproduce with --seed %d)", bad, r.Seed)
	}
}

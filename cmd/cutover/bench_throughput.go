//go:build ignore

package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cutover/cutover/bench"
	"github.com/cutover/cutover/events"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/services/contractnats"
)

// throughputFigure is the throughput suite's measurement.
type throughputFigure struct {
	Migrations       int                  `json:"migrations"`
	Completed        int                  `json:"completed"`
	WallS            float64              `json:"wall_s"`
	MigrationsPerSec float64              `json:"migrations_per_s"`
	WriteLockMs      bench.Pct            `json:"write_lock_ms"`
	WriteLockByClass map[string]bench.Pct `json:"write_lock_ms_by_class"`
	TotalMs          bench.Pct            `json:"total_ms"`
	// PhasesMs splits total_ms: requested -> converged (pre_lock, with the
	// convergence wait), hard-delete lock -> write lock (historical),
	// write lock -> swap (write_lock), from the phase timestamps.
	PhasesMs         map[string]bench.Pct `json:"phases_ms"`
	CPU              bench.CPUUse         `json:"cpu"`
	Client           clientFence          `json:"client"`
	ConvergenceDelay string               `json:"convergence_delay"`
	Fanout           string               `json:"fanout"`
	// AppendsPerMigration counts the synced JetStream appends the move
	// made, per completed migration, by stream (the design budget issue 7
	// names: each is one fsync on a single node with sync always).
	AppendsPerMigration map[string]float64 `json:"appends_per_migration"`
}

// benchThroughput migrates the mixed workload under live traffic with the
// convergence delay at its minimum and reports the sustained rate, the
// write-lock p99 and the CPU the process used during the move.
func benchThroughput(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench throughput", "bench throughput [--json] [--conversations N] [--big N] [--clients N] [--concurrency N]", stdout)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	n := fs.Int("conversations", 300, "conversations (paper size mix)")
	big := fs.Int("big", 4000, "messages in a large conversation")
	clients := fs.Int("clients", 6, "concurrent users driving live traffic")
	conc := fs.Int("concurrency", 128, "migrations in flight")
	workers := fs.Int("workers", 2, "orchestrator workers")
	fanout := fs.String("fanout", "direct", "how the migrations start: direct (one Start each, all at once; the engine's capacity) or tenant (one tenant move with --concurrency)")
	lazy := fs.Bool("lazy-fsync", false, "run JetStream with its default lazy fsync instead of sync always (Pebble keeps fsync per commit)")
	bgSteps := fs.Int("background-steps", 0, "per worker, concurrent steps of migrations outside Phase 3 (0: the orchestrator's default, 16)")
	cluster := fs.Int("cluster", 1, "nodes: 1 (one node, sync always) or 3 (an embedded R3 cluster, the clustered durable default)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *fanout != "direct" && *fanout != "tenant" {
		return fmt.Errorf("%w: --fanout must be direct or tenant", errUsage)
	}
	if *cluster != 1 && *cluster != 3 {
		return fmt.Errorf("%w: --cluster must be 1 or 3", errUsage)
	}
	if *cluster == 3 && *lazy {
		return fmt.Errorf("%w: --lazy-fsync is for one node", errUsage)
	}
	if *bgSteps < 0 {
		return fmt.Errorf("%w: --background-steps must be >= 0", errUsage)
	}
	if *n < 3 || *big < 1 || *clients < 1 || *conc < 1 || *workers < 1 {
		return fmt.Errorf("%w: --conversations >= 3, --big, --clients, --concurrency, --workers >= 1", errUsage)
	}
	say := func(s string) { fmt.Fprintln(stderr, "bench throughput:", s) }
	// The minimum convergence delay: one short cache tier and a replication
	// bound the single-node mirror keeps easily; no extra buffer.
	opts := benchEnvOptions{Tiers: []time.Duration{10 * time.Millisecond}, ReplicationBound: 20 * time.Millisecond,
		ConvergenceBuffer: time.Millisecond, Workers: *workers, Parallel: max(64, *conc), LazyFsync: *lazy, Cluster: *cluster, BackgroundSteps: *bgSteps}
	e, err := startBenchEnv(ctx, opts, io.Discard)
	if err != nil {
		return err
	}
	defer e.Close()
	mix := paperMix(*big)
	convs := mixConvs("tput", *n, mix, 1)
	users := make([]string, *clients)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
	}
	t0 := time.Now()
	if err := e.seed(ctx, convs, users, say); err != nil {
		return err
	}
	say(fmt.Sprintf("seeded in %.1f s", time.Since(t0).Seconds()))
	tr, err := e.startTraffic(ctx, convs, users, 1)
	if err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond)
	profileMeasured()
	appendsBefore := e.streamMsgs(ctx, throughputStreams...)
	cpu := bench.ReadCPU()
	var ms []migrated
	var wall time.Duration
	if *fanout == "tenant" {
		ms, wall, err = e.moveAll(ctx, "throughput", convs, *conc, say)
	} else {
		ms, wall, err = e.moveDirect(ctx, convs, say)
	}
	use := cpu.Since(wall)
	f := throughputFigure{WallS: wall.Seconds(), CPU: use, WriteLockByClass: map[string]bench.Pct{}, Fanout: *fanout,
		ConvergenceDelay: fmt.Sprintf("%s (tiers %v, replication bound %s, buffer %s)", e.lk.Config().ConvergenceDelay, opts.Tiers, opts.ReplicationBound, opts.ConvergenceBuffer)}
	f.Client = tr.finish()
	if err != nil {
		return err
	}
	var wl, tot []float64
	byClass, phases := map[string][]float64{}, map[string][]float64{}
	for _, m := range ms {
		f.Migrations++
		if m.state.Status != events.StatusCompleted {
			continue
		}
		f.Completed++
		w := msBetween(m.state.WriteLockedAt, m.state.SwappedAt)
		wl = append(wl, w)
		byClass[m.conv.Class] = append(byClass[m.conv.Class], w)
		tot = append(tot, msBetween(m.state.RequestedAt, m.state.SwappedAt))
		phases["pre_lock"] = append(phases["pre_lock"], msBetween(m.state.RequestedAt, m.state.ConvergedAt))
		phases["historical"] = append(phases["historical"], msBetween(m.state.HardDeleteAt, m.state.WriteLockedAt))
		phases["write_lock"] = append(phases["write_lock"], w)
	}
	f.PhasesMs = map[string]bench.Pct{}
	for k, v := range phases {
		f.PhasesMs[k] = bench.Percentiles(v)
	}
	for c, v := range byClass {
		f.WriteLockByClass[c] = bench.Percentiles(v)
	}
	f.WriteLockMs, f.TotalMs = bench.Percentiles(wl), bench.Percentiles(tot)
	after := e.streamMsgs(ctx, throughputStreams...)
	f.AppendsPerMigration = map[string]float64{}
	total := 0.0
	for _, name := range throughputStreams {
		v := bench.Ratio(float64(after[name]-appendsBefore[name]), float64(f.Completed))
		f.AppendsPerMigration[name] = v
		total += v
	}
	f.AppendsPerMigration["total"] = total
	f.MigrationsPerSec = bench.Ratio(float64(f.Completed), wall.Seconds())
	target := map[string]any{"migrations_per_s": 116, "write_lock_p99_ms": 50, "why": "10 million migrations a day on 2 cores"}
	durability := bench.DurableSingle
	if *lazy {
		durability = bench.LazyJetStream
	}
	if *cluster == 3 {
		durability = bench.DurableR3
	}
	r := &suiteResult{Suite: "throughput", Durability: durability, Ours: f, Baseline: target,
		Ratio:  f.MigrationsPerSec / 116,
		Target: ">= 116 migrations/s with write-lock p99 <= 50 ms (conversations <= 4,000 messages); ratio = ours / 116",
		Met:    f.MigrationsPerSec >= 116 && f.WriteLockMs.P99 <= 50 && f.Completed == f.Migrations,
		Notes: []string{
			"rate = completed migrations / wall time from the first start to the last migration's end; total_ms ends at the swap",
			"fanout tenant: the tenant fan-out starts one child per step and loads every active child's state on each step (orchestrator/tenant.go), which caps the rate near 12/s here whatever the concurrency; fanout direct measures the engine itself (worker Parallel × workers in flight)",
			"write lock = write-lock escalation -> swap, from phase timestamps",
			"appends_per_migration counts messages added to each stream during the move (live traffic adds none: user writes go to Pebble); with sync always each is an fsync under its stream's lock, which serialises them; Pebble's commits (imports, fences) group-commit and are not counted",
			fmt.Sprintf("cpu is getrusage of the whole process (embedded NATS, both regions' stores, API, traffic, orchestrator) during the move: %.2f cores on %d workers", use.Cores, *workers),
		}}
	return printResult(stdout, *asJSON, r)
}

// throughputStreams are the streams a migration appends to.
var throughputStreams = []string{events.CommandStream, events.EventStream, events.WorkStream, contractnats.PagesStream, cnats.RoutingStream}

// streamMsgs returns each stream's last sequence: the appends it has taken
// (0 for a stream it cannot read).
func (e *benchEnv) streamMsgs(ctx context.Context, names ...string) map[string]uint64 {
	out := map[string]uint64{}
	for _, n := range names {
		s, err := e.js.Stream(ctx, n)
		if err != nil {
			continue
		}
		if info, err := s.Info(ctx); err == nil {
			out[n] = info.State.LastSeq // appends, whatever the retention removed since
		}
	}
	return out
}

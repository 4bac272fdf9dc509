package bench

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/internal/workload"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/services/contractnats"
)

// ThroughputOptions configures the throughput suite.
type ThroughputOptions struct {
	// Conversations (>= 3) in the paper's size mix with Big messages in a
	// large one; Clients users drive live traffic; Concurrency migrations
	// are in flight (tenant fan-out; the workers' Parallel is at least
	// this); Workers orchestrator workers run. Each >= 1.
	Conversations, Big, Clients, Concurrency, Workers int
	// Fanout is how the migrations start: "direct" (one Start each, all at
	// once; the engine's capacity) or "tenant" (one tenant move).
	Fanout string
	// LazyFsync runs JetStream with its default lazy fsync (LazyJetStream);
	// one node only.
	LazyFsync bool
	// BackgroundSteps bounds, per worker, the concurrent steps of
	// migrations outside Phase 3 (0: the orchestrator's default).
	BackgroundSteps int
	// Cluster is 1 (one node, sync always) or 3 (an embedded R3 cluster);
	// with Supercluster, the nodes per region.
	Cluster int
	// Supercluster runs one cluster per region, gateways shaped by WAN.
	Supercluster bool
	WAN          cnats.WAN
	// Runs measures the suite that many times, each on a deployment of its
	// own, and reports the run of median rate (every run's figures in the
	// result's details): one run's rate spreads ±15 % on a 2-core box,
	// wider than a 10 % target. 0 means 1.
	Runs int
	// Progress, if set, receives progress lines.
	Progress func(string)
}

func (o ThroughputOptions) validate() error {
	switch {
	case o.Fanout != "direct" && o.Fanout != "tenant":
		return fmt.Errorf("%w: --fanout must be direct or tenant", ErrOptions)
	case o.Cluster != 1 && o.Cluster != 3:
		return fmt.Errorf("%w: --cluster must be 1 or 3", ErrOptions)
	case (o.Cluster == 3 || o.Supercluster) && o.LazyFsync:
		return fmt.Errorf("%w: --lazy-fsync is for one node", ErrOptions)
	case o.WAN != (cnats.WAN{}) && !o.Supercluster:
		return fmt.Errorf("%w: --wan needs --supercluster", ErrOptions)
	case o.BackgroundSteps < 0:
		return fmt.Errorf("%w: --background-steps must be >= 0", ErrOptions)
	case o.Runs < 0:
		return fmt.Errorf("%w: --runs must be >= 1", ErrOptions)
	case o.Conversations < 3 || o.Big < 1 || o.Clients < 1 || o.Concurrency < 1 || o.Workers < 1:
		return fmt.Errorf("%w: --conversations >= 3, --big, --clients, --concurrency, --workers >= 1", ErrOptions)
	}
	return nil
}

// throughputFigure is the throughput suite's measurement.
type throughputFigure struct {
	Migrations       int            `json:"migrations"`
	Completed        int            `json:"completed"`
	WallS            float64        `json:"wall_s"`
	MigrationsPerSec float64        `json:"migrations_per_s"`
	WriteLockMs      Pct            `json:"write_lock_ms"`
	WriteLockByClass map[string]Pct `json:"write_lock_ms_by_class"`
	TotalMs          Pct            `json:"total_ms"`
	// PhasesMs splits total_ms: requested -> converged (pre_lock, with the
	// convergence wait), hard-delete lock -> write lock (historical),
	// write lock -> swap (write_lock), from the phase timestamps; and
	// after total_ms, swap -> Completed (completion: the bookkeeping after
	// the swap, which users do not wait for).
	PhasesMs         map[string]Pct `json:"phases_ms"`
	CPU              CPUUse         `json:"cpu"`
	Client           clientFence    `json:"client"`
	ConvergenceDelay string         `json:"convergence_delay"`
	Fanout           string         `json:"fanout"`
	// AppendsPerMigration counts the synced JetStream appends the move
	// made, per completed migration, by stream (the design budget
	// names: each is one fsync on a single node with sync always; an
	// atomic batch of events is one).
	AppendsPerMigration map[string]float64 `json:"appends_per_migration"`
	// EventsPerMigration counts the events (messages) MIGRATION_EVENTS
	// took per completed migration, in appends_per_migration's appends.
	EventsPerMigration float64 `json:"events_per_migration"`
	// DiskFlushesPerMigration counts the flush requests the machine's
	// disks completed during the move, per completed migration: every
	// fsync of JetStream (streams, the routing mirror, consumers) and of
	// the Pebble stores (Linux only; absent elsewhere).
	DiskFlushesPerMigration float64 `json:"disk_flushes_per_migration,omitempty"`
	// ContractRequestsPerMigration: requests the participants served
	// (exports, imports, authority, digests, cleanups), per completed
	// migration (the traffic's reads and writes go to the stores
	// directly and are not counted).
	ContractRequestsPerMigration float64 `json:"contract_requests_per_migration"`
	// ContractRequestsByOp splits ContractRequestsPerMigration by
	// operation (the contract endpoint: authority, export, import,
	// checkpoint — the admission probe's read —, digests, ...); operations
	// no migration used are left out.
	ContractRequestsByOp map[string]float64 `json:"contract_requests_by_op,omitempty"`
	// OpMs is how long each kind of operation the workers' steps wait on
	// took during the move (orchestrator.WithOpTimer: routing_write,
	// event_append, and the contract requests authority, export, import,
	// digests, cleanup), ms: the synced operations' latency under this
	// load, which the steps add up to.
	OpMs map[string]Pct `json:"op_ms"`
	// CPUMsPerMigration is the process's CPU (user + system) during the
	// move per completed migration.
	CPUMsPerMigration float64 `json:"cpu_ms_per_migration"`
	// FsyncCeiling is the rate synced appends alone would allow: this
	// box's synced appends per second on one stream, from many publishers
	// at once (measured after the move, same server) / appends_per_migration
	// total; and the rate the disk's flushes would allow: its flushes per
	// second meanwhile / disk_flushes_per_migration. The second is the
	// lower: every fsync of every stream and store takes one flush.
	FsyncCeiling fsyncCeiling `json:"fsync_ceiling"`
	// CPUCeiling is the rate this box's CPUs would allow at this run's
	// cpu_ms_per_migration, every one of them busy.
	CPUCeiling cpuCeiling `json:"cpu_ceiling"`
}

// cpuCeiling is the migrations/s the process's CPUs allow: cores (the
// Go scheduler's GOMAXPROCS, what the process can use) × 1,000 /
// cpu_ms_per_migration. The whole deployment runs in the process, so the
// embedded NATS servers, the stores' compactions and the live traffic are
// in the CPU per migration too.
type cpuCeiling struct {
	Cores            int     `json:"cores"`
	MigrationsPerSec float64 `json:"migrations_per_s"`
}

// fsyncCeiling is the migrations/s the synced appends alone would allow,
// and the disk's flushes (Linux only; absent elsewhere).
type fsyncCeiling struct {
	SyncedAppendsPerSec float64 `json:"synced_appends_per_s"`
	MigrationsPerSec    float64 `json:"migrations_per_s"`
	DiskFlushesPerSec   float64 `json:"disk_flushes_per_s,omitempty"`
	// DiskMigrationsPerSec is disk_flushes_per_s / disk_flushes_per_migration.
	DiskMigrationsPerSec float64 `json:"disk_migrations_per_s,omitempty"`
}

// throughputStreams are the streams a migration appends to.
var throughputStreams = []string{events.CommandStream, events.EventStream, events.WorkStream, contractnats.PagesStream, cnats.RoutingStream}

// throughputRun is one run's headline figures (the details of a result
// of several runs).
type throughputRun struct {
	MigrationsPerSec float64 `json:"migrations_per_s"`
	WriteLockP99Ms   float64 `json:"write_lock_p99_ms"`
	Completed        int     `json:"completed"`
	Migrations       int     `json:"migrations"`
}

// throughputRuns are the details of a result of several runs: every run
// in order, and which one (from 1) the result is.
type throughputRuns struct {
	Runs      []throughputRun `json:"runs"`
	MedianRun int             `json:"median_run"`
}

// Throughput migrates the mixed workload under live traffic with the
// convergence delay at its minimum and reports the sustained rate, the
// write-lock p99 and the CPU the process used during the move (the CPU
// profile of a profiled run starts with the move: the last run's, with
// Runs). With Runs > 1 it does so Runs times and returns the run of median
// rate (the lower middle one for an even count), every run in Details.
// Errors: ErrOptions, or a run's.
func Throughput(ctx context.Context, o ThroughputOptions) (*Result, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Runs <= 1 {
		return throughputOnce(ctx, o)
	}
	var rs []*Result
	var d throughputRuns
	for i := range o.Runs {
		say(o.Progress, "run %d of %d", i+1, o.Runs)
		r, err := throughputOnce(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("run %d of %d: %w", i+1, o.Runs, err)
		}
		f := r.Ours.(throughputFigure)
		rs = append(rs, r)
		d.Runs = append(d.Runs, throughputRun{MigrationsPerSec: f.MigrationsPerSec, WriteLockP99Ms: f.WriteLockMs.P99, Completed: f.Completed, Migrations: f.Migrations})
	}
	order := make([]int, len(rs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(d.Runs[a].MigrationsPerSec, d.Runs[b].MigrationsPerSec) })
	m := order[(len(order)-1)/2]
	d.MedianRun = m + 1
	r := rs[m]
	r.Details = d
	r.Notes = append(r.Notes, fmt.Sprintf("%d runs, each on a deployment of its own: ours is run %d, the median rate (details.runs lists every run)", o.Runs, m+1))
	return r, nil
}

// throughputOnce is one run of the throughput suite.
func throughputOnce(ctx context.Context, o ThroughputOptions) (*Result, error) {
	// The minimum convergence delay: one short cache tier and a replication
	// bound the single-node mirror keeps easily; no extra buffer.
	cfg := system.Config{Tiers: []time.Duration{10 * time.Millisecond}, ReplicationBound: 20 * time.Millisecond,
		Workers: o.Workers, NATSSyncLazy: o.LazyFsync, Cluster: o.Cluster, Supercluster: o.Supercluster, WAN: o.WAN}
	cfg.Orchestrator.ConvergenceBuffer = time.Millisecond
	cfg.Orchestrator.Parallel = max(64, o.Concurrency)
	cfg.Orchestrator.BackgroundSteps = o.BackgroundSteps
	var ops opTimes
	cfg.WorkerOptions = append(cfg.WorkerOptions, ops.option())
	e, err := startEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	convs := workload.Assign("tput", o.Conversations, workload.PaperMix(o.Big), 1, 0)
	us := users(o.Clients)
	t0 := time.Now()
	if err := e.seed(ctx, convs, us, o.Progress); err != nil {
		return nil, err
	}
	say(o.Progress, "seeded in %.1f s", time.Since(t0).Seconds())
	tr, err := e.traffic(ctx, convs, us, 1)
	if err != nil {
		return nil, err
	}
	time.Sleep(300 * time.Millisecond)
	profileMeasured()
	appendsBefore := e.streamMsgs(ctx, throughputStreams...)
	requestsBefore, rerr := contractRequests(ctx, e.NC)
	cpu := ReadCPU()
	flushes, flushesOK := diskFlushes()
	ops.start()
	var ms []migrated
	var wall time.Duration
	if o.Fanout == "tenant" {
		ms, wall, err = e.moveAll(ctx, "throughput", convs, o.Concurrency, o.Progress)
	} else {
		ms, wall, err = e.moveDirect(ctx, convs, o.Progress)
	}
	use := cpu.Since(wall)
	opMs := ops.stop()
	if n, ok := diskFlushes(); ok && flushesOK {
		flushes = n - flushes
	} else {
		flushesOK = false
	}
	f := throughputFigure{WallS: wall.Seconds(), CPU: use, WriteLockByClass: map[string]Pct{}, Fanout: o.Fanout,
		ConvergenceDelay: fmt.Sprintf("%s (tiers %v, replication bound %s, buffer %s)", e.Locker.Config().ConvergenceDelay,
			cfg.Tiers, cfg.ReplicationBound, cfg.Orchestrator.ConvergenceBuffer)}
	f.Client = fenceOf(tr.Stop())
	f.OpMs = opMs
	if err != nil {
		return nil, err
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
		phases["completion"] = append(phases["completion"], msBetween(m.state.SwappedAt, m.state.EndedAt))
	}
	f.PhasesMs = map[string]Pct{}
	for k, v := range phases {
		f.PhasesMs[k] = Percentiles(v)
	}
	for c, v := range byClass {
		f.WriteLockByClass[c] = Percentiles(v)
	}
	f.WriteLockMs, f.TotalMs = Percentiles(wl), Percentiles(tot)
	after := e.streamMsgs(ctx, throughputStreams...)
	f.AppendsPerMigration = map[string]float64{}
	total := 0.0
	for _, name := range throughputStreams {
		v := Ratio(float64(after[name]-appendsBefore[name]), float64(f.Completed))
		if name == events.EventStream {
			appends, msgs, err := eventAppends(ctx, e.NC, e.JS, appendsBefore[name], after[name])
			if err != nil {
				return nil, err
			}
			v, f.EventsPerMigration = Ratio(float64(appends), float64(f.Completed)), Ratio(float64(msgs), float64(f.Completed))
		}
		f.AppendsPerMigration[name] = v
		total += v
	}
	f.AppendsPerMigration["total"] = total
	if flushesOK {
		f.DiskFlushesPerMigration = Ratio(float64(flushes), float64(f.Completed))
	}
	if requestsAfter, err := contractRequests(ctx, e.NC); err == nil && rerr == nil {
		f.ContractRequestsByOp = map[string]float64{}
		var n uint64
		for op, after := range requestsAfter {
			if d := after - requestsBefore[op]; d > 0 {
				f.ContractRequestsByOp[op] = Ratio(float64(d), float64(f.Completed))
				n += d
			}
		}
		f.ContractRequestsPerMigration = Ratio(float64(n), float64(f.Completed))
	}
	f.CPUMsPerMigration = Ratio((use.UserS+use.SystemS)*1000, float64(f.Completed))
	f.CPUCeiling = cpuCeiling{Cores: runtime.GOMAXPROCS(0)}
	f.CPUCeiling.MigrationsPerSec = Ratio(float64(f.CPUCeiling.Cores)*1000, f.CPUMsPerMigration)
	if p, err := probeSync(ctx, e.JS, 3000, 64); err == nil {
		f.FsyncCeiling = fsyncCeiling{SyncedAppendsPerSec: p.AppendsPerSec, MigrationsPerSec: Ratio(p.AppendsPerSec, total), DiskFlushesPerSec: p.FlushesPerSec}
		if p.FlushesPerSec > 0 && f.DiskFlushesPerMigration > 0 {
			f.FsyncCeiling.DiskMigrationsPerSec = Ratio(p.FlushesPerSec, f.DiskFlushesPerMigration)
		}
	}
	f.MigrationsPerSec = Ratio(float64(f.Completed), wall.Seconds())
	target := map[string]any{"migrations_per_s": 150, "write_lock_p99_ms": 50, "why": "the paper's peak (10 million migrations a day, ~116/s) with headroom, on 2 cores"}
	durability := DurableSingle
	if o.LazyFsync {
		durability = LazyJetStream
	}
	if o.Cluster == 3 {
		durability = DurableR3
	}
	if o.Supercluster {
		durability = fmt.Sprintf("supercluster of %d-node regions, gateways shaped %q: JetStream sync_interval always, Pebble fsync per commit", o.Cluster, o.WAN.String())
	}
	return &Result{Suite: "throughput", Durability: durability, Ours: f, Baseline: target,
		Ratio:  f.MigrationsPerSec / 150,
		Target: ">= 150 migrations/s with write-lock p99 <= 50 ms (conversations <= 4,000 messages); ratio = ours / 150",
		Met:    f.MigrationsPerSec >= 150 && f.WriteLockMs.P99 <= 50 && f.Completed == f.Migrations,
		Notes: []string{
			"rate = completed migrations / wall time from the first start to the last migration's end; total_ms ends at the swap",
			"fanout tenant: one tenant move; each of its steps reads its active children once (16 at a time) and records every child that ended and every child it can start (orchestrator/tenant.go); fanout direct measures the engine itself (worker Parallel × workers in flight)",
			"write lock = write-lock escalation -> swap, from phase timestamps",
			"appends_per_migration counts the writes that added messages to each stream during the move (live traffic adds none: user writes go to Pebble); an atomic batch of a step's events is one write (events_per_migration counts the events); with sync always each is an fsync under its stream's lock, which serialises them; Pebble's commits (imports, fences) group-commit and are not counted there",
			"disk_flushes_per_migration counts every flush the disks completed during the move (Linux /sys/block): JetStream's appends, the routing mirror's, the consumers' state, the Pebble stores' commits and the live traffic's writes",
			"op_ms: every routing write (a pre-lock's includes its read), event append and contract request the workers' steps made during the move, timed around the call; contract_requests_per_migration: the participants' micro-service request counts ($SRV.STATS) before and after the move; cpu_ms_per_migration: the process's CPU during the move / completed; fsync_ceiling: 3,000 acknowledged publishes from 64 publishers at once to a scratch file stream after the move: synced_appends_per_s / appends_per_migration total, and the disk flushes they took per second (disk_flushes_per_s) / disk_flushes_per_migration (disk_migrations_per_s, the lower ceiling: JetStream fsyncs each message alone and every stream and store shares the disk); cpu_ceiling: cores (GOMAXPROCS) × 1,000 / cpu_ms_per_migration, the rate with every core busy; the rate stays below the lower of the ceilings",
			fmt.Sprintf("cpu is getrusage of the whole process (embedded NATS, both regions' stores, API, traffic, orchestrator) during the move: %.2f cores on %d workers", use.Cores, o.Workers),
		}}, nil
}

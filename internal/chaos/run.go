package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/internal/check"
	"github.com/cutover/cutover/internal/pgserver"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/internal/workload"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/nats-io/nats.go/jetstream"
)

// Timings of a run: short leases so that expiry, pauses and fences happen
// many times. The stale API's cache TTL is far past the convergence delay
// the orchestrator waits.
const (
	writeLease = 3 * time.Second
	// ackWait is the workers' ack wait (= their step timeout): a worker
	// paused longer than it has its migration handed to a second worker.
	ackWait  = 5 * time.Second
	staleTTL = 8 * time.Second
	// cleanupWindow is how long an old location keeps its copy.
	cleanupWindow = 90 * time.Second
	drainLimit    = 2 * time.Minute
)

// Options are a run's settings (the command's flags). Zero values mean the
// defaults of EnsureDefaults; Seed 0 is a seed like any other.
type Options struct {
	// Seed seeds the nemesis schedule, the workload and the traffic.
	Seed uint64
	// Duration is how long the nemesis runs (default 1 min); migrations
	// then drain and are checked.
	Duration time.Duration
	// Workers is the number of orchestrator workers alive at once (default
	// 3, at least 2).
	Workers int
	// Clients is the number of users driving live traffic (default 6).
	Clients int
	// Think is the mean pause between one user's requests (default 100
	// ms, at least 2 ms): the traffic is live but bounded, so that
	// conversations stay of a size that migrates in seconds.
	Think time.Duration
	// Verbose logs every nemesis action to Run's stderr.
	Verbose bool
	// NoClockSkew gives every worker the true clock. By default each
	// worker (its lock clock and its engine clock) runs off by a seeded
	// offset within ± half the lock protocol's skew margin, so that any two
	// disagree by at most the margin (workers.go).
	NoClockSkew bool
	// NoSlowFsync keeps the stores' fsyncs as the disk does them. By
	// default about one in twenty takes 5–50 ms longer (slowfs.go).
	NoSlowFsync bool
	// Convergence is Phase 1's wait: "ttl" (default) or "fence"
	// (orchestrator.Config.Convergence).
	Convergence string
	// ResolverTTL, if set, is the TTL of the services' routing caches (one
	// tier; the stale API keeps its own); zero keeps the system's default.
	ResolverTTL time.Duration
	// Supercluster runs on one NATS cluster per region (Nodes each, default
	// 1) joined by gateways through proxies shaped by WAN, instead of one
	// three-node cluster: leader kills stop a node of the home region,
	// partitions cut a region off.
	Supercluster bool
	Nodes        int
	WAN          cnats.WAN
	// Postgres keeps every region's messages service in a private
	// PostgreSQL server (the participant kit, system.Config.Postgres),
	// which the nemesis crashes and restarts.
	Postgres bool
}

// EnsureDefaults fills the zero fields with the defaults.
func (o *Options) EnsureDefaults() {
	if o.Duration == 0 {
		o.Duration = time.Minute
	}
	if o.Workers == 0 {
		o.Workers = 3
	}
	if o.Clients == 0 {
		o.Clients = 6
	}
	if o.Think == 0 {
		o.Think = 100 * time.Millisecond
	}
}

// Validate checks filled options. Errors: ErrOptions.
func (o Options) Validate() error {
	if o.Workers < 2 || o.Clients < 1 || o.Duration <= 0 || o.Think < 2*time.Millisecond || o.ResolverTTL < 0 ||
		(o.Convergence != "" && o.Convergence != "fence" && o.Convergence != "ttl") {
		return fmt.Errorf("%w: workers must be >= 2, clients >= 1, duration > 0, think >= 2ms, resolver TTL >= 0, convergence fence or ttl", ErrOptions)
	}
	if !o.Supercluster && (o.WAN != (cnats.WAN{}) || o.Nodes != 0) {
		return fmt.Errorf("%w: --wan and --cluster need --supercluster", ErrOptions)
	}
	if o.Nodes != 0 && o.Nodes != 1 && o.Nodes != 3 {
		return fmt.Errorf("%w: --cluster is 1 or 3 nodes per region", ErrOptions)
	}
	return nil
}

// run is the state of one run; see Run.
type run struct {
	o      Options
	stderr io.Writer
	topo   topology
	sys    *system.System
	slow   *slowSync        // nil with NoSlowFsync
	pg     *pgserver.Server // the messages' database with Postgres
	obs    *check.Observer
	rep    *Report
	led    *workload.Ledger
	convs  *workload.ConvSet
	seeder workload.Seeder
	// sizes draws the seeded size of each new conversation; one
	// conversation is created at a time.
	sizes *rand.Rand

	staleRequests atomic.Int64
	nextWorker    atomic.Int64

	mu struct {
		sync.Mutex
		workers  []*worker
		busy     map[string]string // conversation → migration (or tenant) in flight
		inflight map[string][]string
		all      []string // every migration started (tenant children added when known)
		tenants  []string
		paused   map[kvrouting.Token]bool
		// afterSwap marks migrations startAfterSwap has looked at.
		afterSwap map[string]bool
		// armed are the pause points armed and not yet reached; armings
		// counts how often each was armed (nemesis.go pauseAWorker).
		armed   map[string]bool
		armings map[string]int
	}
}

func (r *run) logf(format string, a ...any) {
	if r.o.Verbose {
		fmt.Fprintf(r.stderr, "chaos: "+format+"\n", a...)
	}
}

// schedule records a nemesis action (the seeded schedule, for the report).
func (r *run) schedule(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	r.logf("%s", s)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rep.Nemesis.Schedule) < 200 {
		r.rep.Nemesis.Schedule = append(r.rep.Nemesis.Schedule, s)
	}
}

// Run runs chaos for o.Duration and returns its report; the caller prints
// it and fails on Report.Failures. Nemesis actions are logged to stderr
// with o.Verbose. Errors: ErrOptions, a deployment that does not start, a
// check that cannot read what it must (the run is then unverified), or
// ctx's.
func Run(ctx context.Context, o Options, stderr io.Writer) (*Report, error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	r := &run{o: o, stderr: stderr, rep: &Report{Seed: o.Seed, Topology: "cluster", WAN: o.WAN.String()}, led: workload.NewLedger(),
		convs: workload.NewConvSet(), sizes: rand.New(rand.NewPCG(o.Seed, 7))}
	r.mu.busy, r.mu.inflight, r.mu.paused = map[string]string{}, map[string][]string{}, map[kvrouting.Token]bool{}

	base, err := os.MkdirTemp("", "cutover-chaos-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	if o.Supercluster {
		r.rep.Topology = "supercluster"
		r.topo, err = startSupercluster(base, cnats.DefaultRegions, max(o.Nodes, 1), o.WAN)
	} else {
		r.topo, err = startCluster(base)
	}
	if err != nil {
		return nil, err
	}
	defer r.topo.shutdown()
	if o.Postgres {
		if r.pg, err = pgserver.Start(ctx, pgserver.Options{}); err != nil {
			return nil, err
		}
		defer func() { _ = r.pg.Stop() }()
	}
	if err := r.start(ctx, base); err != nil {
		return nil, err
	}
	defer func() { _ = r.sys.Close() }()

	// The independent observer of every routing revision.
	r.obs, err = check.Watch(ctx, r.sys.JS)
	if err != nil {
		return nil, err
	}
	defer r.obs.Stop()

	// A second API over the same stores whose resolvers keep documents far
	// past the convergence delay: requests sent there decide on stale
	// routing, and only the fence at the resource stands in their way.
	staleURL, stopStale, err := r.serveStaleAPI()
	if err != nil {
		return nil, err
	}
	defer stopStale()

	for range o.Workers {
		if err := r.startWorker(); err != nil {
			return nil, err
		}
	}
	defer r.stopWorkers()

	// Seed conversations; the seeding client reads them back for the check.
	reader, err := client.New(r.sys.APIURL, "user:seed")
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	users := make([]string, o.Clients)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
	}
	r.seeder = workload.Seeder{Client: reader, Users: users, Ledger: r.led}
	for i := range 24 {
		if err := r.newConv(ctx, i); err != nil {
			return nil, err
		}
	}

	// Live traffic: every second user talks to the stale API.
	tr, err := workload.StartTraffic(ctx, workload.TrafficConfig{APIs: []string{r.sys.APIURL, staleURL}, Users: users,
		Convs: r.convs, Think: o.Think, Seed: o.Seed, Ledger: r.led})
	if err != nil {
		return nil, err
	}
	defer tr.Stop()

	// Migrations run continuously; the nemesis runs beside them.
	runCtx, stopRun := context.WithTimeout(ctx, o.Duration)
	defer stopRun()
	var wg sync.WaitGroup
	wg.Go(func() { r.migrate(runCtx) })
	wg.Go(func() { r.nemesis(runCtx, ctx) })
	wg.Go(func() { r.progress(runCtx, start) })
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// Heal everything and let every migration finish.
	if err := r.heal(ctx); err != nil {
		return nil, err
	}
	if err := r.drain(ctx); err != nil {
		r.logf("drain: %v", err)
	}
	time.Sleep(staleTTL / 4) // traffic after the last cutovers
	st := tr.Stop()
	w := &r.rep.Writes
	w.Attempted, w.Acknowledged, w.Failed, w.Reads = st.Attempted, st.Acknowledged, st.FailedOther, st.Reads
	w.Rejected423, w.Unrecovered, w.MaxFenceMs = st.Rejected423, st.Unrecovered, st.MaxFenceMs()
	r.rep.Nemesis.StaleRequests = int(r.staleRequests.Load())

	if err := r.verify(ctx, reader); err != nil {
		return nil, err
	}
	r.rep.DurationS = time.Since(start).Seconds()
	return r.rep, nil
}

// start boots the deployment on the proxied cluster: no workers of its own
// (chaos runs those), no projector, and the ROUTING bucket with the most
// history a KV allows, so that the observer's ordered consumer, when a
// leader change resets it, resumes without a revision purged under it.
func (r *run) start(ctx context.Context, dataDir string) error {
	cfg := system.Config{DataDir: dataDir, RoutingHistory: jetstream.KeyValueMaxHistory,
		Workers: -1, NoProjector: true, NoEventMetrics: true}
	r.topo.configure(&cfg)
	cfg.Locks = kvrouting.LockConfig{PreLockLease: time.Minute, HardDeleteLease: 10 * time.Second,
		WriteLease: writeLease, MaxLease: 10 * time.Minute, SecondaryLease: time.Hour}
	// Long enough to check the old location of the later swaps, short
	// enough that the earlier ones are cleaned up during the run (the
	// cleanup racing moves back and the nemesis).
	cfg.Orchestrator.CleanupWindow = cleanupWindow
	cfg.Orchestrator.AckWait = ackWait // ≥ the step timeout (orchestrator.Config.Validate)
	cfg.Orchestrator.RescheduleBackoff = 500 * time.Millisecond
	cfg.Orchestrator.StepTimeout = ackWait
	cfg.Orchestrator.Convergence = r.o.Convergence
	if r.pg != nil {
		cfg.Postgres = r.pg.URL()
	}
	if r.o.ResolverTTL > 0 {
		cfg.Tiers = []time.Duration{r.o.ResolverTTL}
	}
	sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if !r.o.NoSlowFsync {
		r.slow = newSlowSync(r.o.Seed)
		cfg.StoreFS = r.slow.Wrap
	}
	sys, err := system.Start(sctx, cfg)
	if err != nil {
		return err
	}
	r.sys = sys
	return nil
}

// newConv creates conversation i with 5-24 seeded messages. Posts that
// fail are ledgered as uncertain and the conversation still counts; only a
// conversation that could not be created is an error (and is left out).
func (r *run) newConv(ctx context.Context, i int) error {
	cv := workload.Conv{ID: fmt.Sprintf("chaos-%04d", i), Size: 5 + r.sizes.IntN(20)}
	err := r.seeder.Conversation(ctx, cv)
	// The seeder posts, and ledgers every post, only once the create has
	// succeeded: a ledgered conversation exists.
	if len(r.led.Messages(cv.ID)) == 0 {
		return err
	}
	r.convs.Add(cv.ID)
	if err != nil {
		r.logf("seed %s: %v (recorded as uncertain)", cv.ID, err)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// progress prints a line to stderr every 30 s until ctx ends: how far the
// run is, the migrations started and in flight, and the faults so far.
func (r *run) progress(ctx context.Context, start time.Time) {
	if r.stderr == nil {
		return
	}
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.mu.Lock()
		n := r.rep.Nemesis
		line := fmt.Sprintf("chaos: %s of %s: %d migrations started (%d tenant moves), %d in flight; %d leader kills, %d worker kills, %d partitions, %d of %d pauses reached (%d of %d points)",
			time.Since(start).Round(time.Second), r.o.Duration, r.rep.Migrations.Started, r.rep.Migrations.Tenants, len(r.mu.inflight),
			n.LeaderKills, n.WorkerKills, n.Partitions, n.PausesTriggered, n.Pauses, len(n.PausePoints), len(pausePoints))
		r.mu.Unlock()
		fmt.Fprintln(r.stderr, line)
	}
}

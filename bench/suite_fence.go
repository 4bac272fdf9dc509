package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/internal/workload"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
)

// FenceStrategies are the fencing strategies the fence suite compares, this
// design (FencingProtocol) first.
var FenceStrategies = []string{FencingProtocol, FencingStopAndCopy, FencingReadOnly, FencingDeleteBlocking}

// FenceOptions configures the fence suite.
type FenceOptions struct {
	// Conversations (>= 3) in the paper's size mix with Big messages in a
	// large one (>= 1).
	Conversations, Big int
	// Clients are the users driving live traffic, Concurrency the
	// migrations in flight (each >= 1).
	Clients, Concurrency int
	// Warmup first migrates a tiny workload once, unmeasured (the first run
	// in a process is slower).
	Warmup bool
	// Strategies to run, FencingProtocol first.
	Strategies []string
	// Huge adds this many conversations of HugeSize messages (0 = none;
	// HugeSize 0 = 100,000), a class of its own with few samples.
	Huge, HugeSize int
	// Supercluster runs every strategy on one cluster per region, its
	// gateways shaped by WAN (system.Config.Supercluster).
	Supercluster bool
	WAN          cnats.WAN
	// Progress, if set, receives progress lines.
	Progress func(string)
}

// DefaultHugeSize is the size of the fence suite's huge class.
const DefaultHugeSize = 100_000

func (o FenceOptions) validate() error {
	if o.Conversations < 3 || o.Big < 1 || o.Clients < 1 || o.Concurrency < 1 || o.Huge < 0 || o.HugeSize < 0 {
		return fmt.Errorf("%w: --conversations >= 3, --big, --clients, --concurrency >= 1, --huge, --huge-size >= 0", ErrOptions)
	}
	if o.WAN != (cnats.WAN{}) && !o.Supercluster {
		return fmt.Errorf("%w: --wan needs --supercluster", ErrOptions)
	}
	if len(o.Strategies) == 0 || o.Strategies[0] != FencingProtocol {
		return fmt.Errorf("%w: --strategies must start with %s", ErrOptions, FencingProtocol)
	}
	for _, st := range o.Strategies {
		if _, err := FencePolicy(st); err != nil {
			return fmt.Errorf("%w: --strategies: %w", ErrOptions, err)
		}
	}
	return nil
}

// fenceStrategy is one strategy's measurement.
type fenceStrategy struct {
	Strategy   string `json:"strategy"`
	Migrations int    `json:"migrations"`
	Completed  int    `json:"completed"`
	// WriteBlockedMs and DeleteBlockedMs are per size class ("10", "80",
	// "4000"), from phase timestamps: see the suite's notes.
	WriteBlockedMs  map[string]Pct `json:"write_blocked_ms"`
	DeleteBlockedMs map[string]Pct `json:"delete_blocked_ms"`
	Client          clientFence    `json:"client"`
	WallS           float64        `json:"move_wall_s"`
}

// fenceWindows returns when writes and deletes were blocked for one
// migration under strategy, from its phase timestamps; the windows end at
// the swap.
func fenceWindows(strategy string, st *events.State) (write, del float64) {
	end := st.SwappedAt
	switch strategy {
	case FencingStopAndCopy:
		w := msBetween(st.HardDeleteAt, end)
		return w, w
	case FencingReadOnly:
		w := msBetween(st.PreLockedAt, end)
		return w, w
	case FencingDeleteBlocking:
		return msBetween(st.WriteLockedAt, end), msBetween(st.HardDeleteAt, end)
	}
	w := msBetween(st.WriteLockedAt, end)
	return w, w
}

// Fence migrates one workload (the paper's size mix, live writes) once per
// strategy, each in a fresh deployment, and compares the windows in which
// users could not write (or delete). Errors: ErrOptions, or the first
// failing run's.
func Fence(ctx context.Context, o FenceOptions) (*Result, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	mix := workload.PaperMix(o.Big)
	bigClass := mix[len(mix)-1].Name
	convs := workload.Assign("fence", o.Conversations, mix, 1, 0)
	if o.Huge > 0 {
		size := o.HugeSize
		if size == 0 {
			size = DefaultHugeSize
		}
		huge := workload.SizeClass{Name: fmt.Sprint(size), Messages: size}
		mix = append(mix, huge)
		bigClass = huge.Name
		for i := range o.Huge {
			convs = append(convs, workload.Conv{ID: fmt.Sprintf("fence-huge-%04d", i), Class: huge.Name, Size: size})
		}
	}
	us := users(o.Clients)
	base := system.Config{Supercluster: o.Supercluster, WAN: o.WAN}
	if o.Warmup {
		say(o.Progress, "warm-up (not measured)")
		warm := workload.Assign("warm", 3, workload.PaperMix(min(o.Big, 100)), 2, 0)
		if _, _, err := fenceRun(ctx, base, FencingProtocol, warm, us[:1], o.Concurrency, o.Progress); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	var results []fenceStrategy
	var phys physical
	for _, s := range o.Strategies {
		say(o.Progress, "strategy %s", s)
		r, p, err := fenceRun(ctx, base, s, convs, us, o.Concurrency, o.Progress)
		if s == FencingProtocol {
			phys = p
		}
		if err != nil {
			return nil, fmt.Errorf("strategy %s: %w", s, err)
		}
		results = append(results, r)
	}
	ours := results[0]
	res := &Result{Suite: "fence", Durability: DurableSingle, Ours: ours,
		Target: fmt.Sprintf("p99 write-blocked window of stop-and-copy / protocol >= 100x on the %s-message class", bigClass)}
	topology := "one embedded cluster on loopback (both regions)"
	if o.Supercluster {
		res.Durability = "supercluster, one node per region: JetStream sync_interval always, Pebble fsync per commit"
		topology = fmt.Sprintf("supercluster, one cluster per region, gateway links shaped %q", o.WAN.String())
	}
	toMin := map[string]float64{}
	for _, c := range mix {
		toMin[c.Name] = Ratio(ours.WriteBlockedMs[c.Name].P99, phys.MinMs)
	}
	ratios := map[string]map[string]float64{}
	var baselines []fenceStrategy
	for _, r := range results[1:] {
		baselines = append(baselines, r)
		m := map[string]float64{}
		for _, c := range mix {
			m["write_p99_"+c.Name] = Ratio(r.WriteBlockedMs[c.Name].P99, ours.WriteBlockedMs[c.Name].P99)
			m["delete_p99_"+c.Name] = Ratio(r.DeleteBlockedMs[c.Name].P99, ours.DeleteBlockedMs[c.Name].P99)
			m["write_avg_"+c.Name] = Ratio(r.WriteBlockedMs[c.Name].Avg, ours.WriteBlockedMs[c.Name].Avg)
		}
		ratios[r.Strategy] = m
		if r.Strategy == FencingStopAndCopy {
			res.Ratio = m["write_p99_"+bigClass]
		}
	}
	res.Baseline = baselines
	res.Details = map[string]any{"ratios_vs_protocol": ratios, "classes": mix, "conversations": len(convs), "clients": o.Clients, "concurrency": o.Concurrency, "warmup": o.Warmup,
		"topology": topology, "wan": o.WAN.String(), "physical": phys, "physical_min_ms": phys.MinMs, "ratio_to_min": toMin}
	done := !slices.ContainsFunc(results, func(r fenceStrategy) bool { return r.Completed != r.Migrations })
	res.Met = done && res.Ratio >= 100
	res.Notes = []string{
		"windows come from phase timestamps and end at the swap: protocol = write lock -> swap; stop-and-copy = hard-delete lock (the write fence is set in the next step) -> swap; read-only = pre-lock (write fence set at the source on the next step, before the convergence wait) -> swap",
		"read-only is approximated: the routing lock cannot be a write lock before convergence, so the store's write fence alone blocks writes in Phase 1",
		"delete-blocking is approximated: the stores have no delete-refusing fence level, so the engine runs the protocol and delete_blocked_ms is the window (hard-delete lock -> swap) in which such a design would refuse a delete; under the protocol deletes are tombstoned in Phase 2 and refused only in Phase 3",
		"client: what the SDK saw (423s, the delay their retries added); it includes cache convergence after the swap",
		"physical_min_ms = p50 of a request/reply from the orchestrators' connection to the target region's cluster + p50 of a conditional ROUTING update, both measured in the protocol run's deployment before its migrations; ratio_to_min = protocol write-blocked p99 / physical_min_ms per class",
	}
	return res, nil
}

// fenceRun measures one strategy in a fresh deployment: seed, live
// traffic, one tenant move of every conversation.
// For the protocol it also measures the physical bound in the same
// deployment, before seeding.
func fenceRun(ctx context.Context, cfg system.Config, strategy string, convs []workload.Conv, us []string, conc int, progress func(string)) (fenceStrategy, physical, error) {
	out := fenceStrategy{Strategy: strategy, WriteBlockedMs: map[string]Pct{}, DeleteBlockedMs: map[string]Pct{}}
	var phys physical
	policy, err := FencePolicy(strategy)
	if err != nil {
		return out, phys, err
	}
	cfg.WorkerOptions = []orchestrator.WorkerOption{orchestrator.WithFencePolicy(policy)}
	e, err := startEnv(ctx, cfg)
	if err != nil {
		return out, phys, err
	}
	defer e.Close()
	if strategy == FencingProtocol {
		if phys, err = e.physicalMin(ctx, e.Target); err != nil {
			return out, phys, err
		}
		say(progress, "physical bound: rtt p50 %.1f ms + routing write p50 %.1f ms = %.1f ms", phys.RTTMs.P50, phys.RoutingWriteMs.P50, phys.MinMs)
	}
	t0 := time.Now()
	if err := e.seed(ctx, convs, us, progress); err != nil {
		return out, phys, err
	}
	say(progress, "%s: seeded in %.1f s", strategy, time.Since(t0).Seconds())
	tr, err := e.traffic(ctx, convs, us, 1)
	if err != nil {
		return out, phys, err
	}
	time.Sleep(300 * time.Millisecond)
	ms, wall, err := e.moveAll(ctx, "fence-"+strategy, convs, conc, progress)
	time.Sleep(300 * time.Millisecond)
	out.Client = fenceOf(tr.Stop())
	if err != nil {
		return out, phys, err
	}
	out.WallS = wall.Seconds()
	writes, dels := map[string][]float64{}, map[string][]float64{}
	for _, m := range ms {
		out.Migrations++
		if m.state.Status != events.StatusCompleted {
			continue
		}
		out.Completed++
		w, d := fenceWindows(strategy, m.state)
		writes[m.conv.Class] = append(writes[m.conv.Class], w)
		dels[m.conv.Class] = append(dels[m.conv.Class], d)
	}
	for c, v := range writes {
		out.WriteBlockedMs[c] = Percentiles(v)
		out.DeleteBlockedMs[c] = Percentiles(dels[c])
	}
	say(progress, "%s: %d/%d completed in %.1f s; write-blocked %v", strategy, out.Completed, out.Migrations, out.WallS, out.WriteBlockedMs)
	return out, phys, nil
}

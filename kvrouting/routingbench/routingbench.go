// Package routingbench measures resolve + decide for routing-embedded locks
// against the lock-record baseline (`cutover bench routing`; paper 000
// §5.3 inferred this comparison, we measure it).
package routingbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/kvrouting/lockrecord"
	cnats "github.com/cutover/cutover/nats"
)

// Options configures a run. Zero values mean defaults.
type Options struct {
	Ops        int       // operations per measurement (default 20 000)
	Resources  int       // distinct resources (default 1 000)
	Fractions  []float64 // locked fractions for the mixed runs (default 0.001, 0.01, 0.1)
	SyncAlways *bool     // durability of the embedded server (default true)
	Progress   func(string)
}

// Figure is one measured configuration.
type Figure struct {
	NsPerOp         float64 `json:"ns_per_op"`
	StoreReadsPerOp float64 `json:"store_reads_per_op"`
	Ops             int     `json:"ops"`
}

// Mixed is one locked-fraction comparison.
type Mixed struct {
	LockedFraction float64 `json:"locked_fraction"`
	Ours           Figure  `json:"ours"`
	Baseline       Figure  `json:"baseline"`
	TimeRatio      float64 `json:"time_ratio"`
	ReadsRatio     float64 `json:"reads_ratio"`
}

// Result is the JSON printed by `cutover bench routing --json`.
type Result struct {
	Suite      string  `json:"suite"`
	Durability string  `json:"durability"`
	Embedded   Figure  `json:"embedded"`
	Baseline   Figure  `json:"baseline"`
	Locked     Figure  `json:"locked"`
	Ratio      float64 `json:"ratio"`
	Target     string  `json:"target"`
	Met        bool    `json:"target_met"`
	Mixed      []Mixed `json:"mixed"`
}

// Run starts an embedded server and measures.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Ops <= 0 {
		o.Ops = 20_000
	}
	if o.Resources <= 0 {
		o.Resources = 1_000
	}
	if len(o.Fractions) == 0 {
		o.Fractions = []float64{0.001, 0.01, 0.1}
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string) {}
	}
	srv, err := cnats.StartServer(cnats.Options{SyncAlways: o.SyncAlways})
	if err != nil {
		return Result{}, err
	}
	defer srv.Shutdown()
	nc, js, err := cnats.Connect(ctx, srv.ClientURL())
	if err != nil {
		return Result{}, err
	}
	defer nc.Close()
	if _, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{Replicas: 1}); err != nil {
		return Result{}, err
	}
	lkv, err := lockrecord.Provision(ctx, js, 1)
	if err != nil {
		return Result{}, err
	}
	store, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		return Result{}, err
	}
	locker, err := kvrouting.NewLocker(store, kvrouting.LockConfig{FenceConvergence: true, ClockSkew: time.Second}) // locks in force at once: the lock paths are measured
	if err != nil {
		return Result{}, err
	}
	resolver, err := kvrouting.NewResolver(store, kvrouting.ResolverConfig{
		Tiers: []*kvrouting.Tier{kvrouting.NewTier("local", time.Hour, 0)}, ClockSkew: time.Second,
	})
	if err != nil {
		return Result{}, err
	}
	checker := lockrecord.New(nc, lkv, resolver)

	progress(fmt.Sprintf("registering %d resources", o.Resources))
	resources := make([]kvrouting.Resource, o.Resources)
	locked := make([]bool, o.Resources)
	for i := range resources {
		resources[i] = kvrouting.Resource{Kind: "conv", ID: fmt.Sprintf("bench-%06d", i)}
		if _, err := locker.Register(ctx, resources[i], "us-east"); err != nil && err != kvrouting.ErrExists {
			return Result{}, err
		}
	}
	// A locked resource for the read-through figure: pre-locked with its
	// not-before passed (convergence delay 0), so every resolve reads through.
	lockedRes := kvrouting.Resource{Kind: "conv", ID: "bench-locked"}
	if _, err := locker.Register(ctx, lockedRes, "us-east"); err != nil {
		return Result{}, err
	}
	g, err := locker.PreLock(ctx, lockedRes, "eu-west", "bench")
	if err != nil {
		return Result{}, err
	}
	time.Sleep(1100 * time.Millisecond) // past not-before + skew
	if _, err := locker.EscalateHardDelete(ctx, lockedRes, g.Token, g.Doc); err != nil {
		return Result{}, err
	}
	// Warm the caches.
	for _, r := range resources {
		if _, _, err := resolver.Decide(ctx, r, "us-east", kvrouting.OpUpdate); err != nil {
			return Result{}, err
		}
	}

	ours := func(r kvrouting.Resource) error {
		_, _, err := resolver.Decide(ctx, r, "us-east", kvrouting.OpUpdate)
		return err
	}
	base := func(r kvrouting.Resource) error {
		_, err := checker.Decide(ctx, r, "us-east", kvrouting.OpUpdate)
		return err
	}
	measure := func(name string, pick func(i int) kvrouting.Resource, fn func(kvrouting.Resource) error, reads func() uint64) (Figure, error) {
		progress("measuring " + name)
		r0 := reads()
		start := time.Now()
		for i := 0; i < o.Ops; i++ {
			if err := fn(pick(i)); err != nil {
				return Figure{}, fmt.Errorf("%s: %w", name, err)
			}
		}
		el := time.Since(start)
		return Figure{NsPerOp: float64(el.Nanoseconds()) / float64(o.Ops), StoreReadsPerOp: float64(reads()-r0) / float64(o.Ops), Ops: o.Ops}, nil
	}
	storeReads := func() uint64 { return store.Stats().Reads() }
	allReads := func() uint64 { return store.Stats().Reads() + checker.Reads() }
	uniform := func(i int) kvrouting.Resource { return resources[i%len(resources)] }

	var res Result
	res.Suite = "routing"
	res.Durability = "single node, sync_interval always"
	if o.SyncAlways != nil && !*o.SyncAlways {
		res.Durability = "single node, lazy fsync"
	}
	if res.Embedded, err = measure("embedded (unlocked, cached)", uniform, ours, storeReads); err != nil {
		return res, err
	}
	if res.Baseline, err = measure("lock-record baseline", uniform, base, allReads); err != nil {
		return res, err
	}
	if res.Locked, err = measure("locked (read-through)", func(int) kvrouting.Resource { return lockedRes }, ours, storeReads); err != nil {
		return res, err
	}
	res.Ratio = res.Baseline.NsPerOp / res.Embedded.NsPerOp
	res.Target = "embedded store_reads_per_op == 0 and baseline ns_per_op >= 100x embedded"
	res.Met = res.Embedded.StoreReadsPerOp == 0 && res.Ratio >= 100

	// Mixed workloads: a fraction f of operations hit locked resources
	// (paper 000 §5.3: the baseline performs about 1/f times as many reads).
	for _, f := range o.Fractions {
		nLocked := max(1, int(float64(o.Resources)*f+0.5))
		for i := range locked {
			locked[i] = false
		}
		for i := 0; i < nLocked; i++ {
			r := resources[i]
			g, err := locker.PreLock(ctx, r, "eu-west", "bench-mixed")
			if err != nil {
				return res, err
			}
			locked[i] = true
			// Converged caches: every tier now holds the locked document
			// (in production this is the convergence wait).
			if _, err := resolver.ResolveLeader(ctx, r); err != nil {
				return res, err
			}
			if err := checker.Put(ctx, r, lockrecord.Record{Type: kvrouting.LockPre, Token: g.Token, Expiry: g.Expiry}); err != nil {
				return res, err
			}
		}
		time.Sleep(1100 * time.Millisecond)
		rng := rand.New(rand.NewPCG(1, uint64(f*1e6)))
		seq := make([]int, o.Ops)
		for i := range seq {
			if rng.Float64() < f {
				seq[i] = rng.IntN(nLocked)
			} else {
				seq[i] = nLocked + rng.IntN(o.Resources-nLocked)
			}
		}
		pick := func(i int) kvrouting.Resource { return resources[seq[i]] }
		var m Mixed
		m.LockedFraction = f
		if m.Ours, err = measure(fmt.Sprintf("ours f=%g", f), pick, ours, storeReads); err != nil {
			return res, err
		}
		if m.Baseline, err = measure(fmt.Sprintf("baseline f=%g", f), pick, base, allReads); err != nil {
			return res, err
		}
		m.TimeRatio = m.Baseline.NsPerOp / m.Ours.NsPerOp
		if m.Ours.StoreReadsPerOp > 0 {
			m.ReadsRatio = m.Baseline.StoreReadsPerOp / m.Ours.StoreReadsPerOp
		}
		res.Mixed = append(res.Mixed, m)
		for i := 0; i < nLocked; i++ {
			d, err := locker.Get(ctx, resources[i])
			if err != nil {
				return res, err
			}
			if _, err := locker.Release(ctx, resources[i], d.Token(), d); err != nil {
				return res, err
			}
			if err := checker.Put(ctx, resources[i], lockrecord.Record{}); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

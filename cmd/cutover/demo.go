package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
)

func init() {
	register("demo", "migrate a set of live resources' locks and routing end to end on an embedded NATS", runDemo)
}

// runDemo is the interim main job: the largest real scenario that works
// today. It drives the full lock lifecycle (pre-lock → convergence →
// hard-delete → write → atomic swap) for many resources on an embedded
// JetStream (1 node, or a 3-node R3 cluster), while client goroutines
// resolve and decide operations through cached resolvers, and checks the
// routing invariants independently at the end. Data copy joins it when the
// services and the orchestrator land.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "demo [--resources N] [--cluster 1|3] [--clients N]", stdout)
	n := fs.Int("resources", 300, "resources (conversations) to migrate")
	nodes := fs.Int("cluster", 1, "JetStream nodes (1, or 3 for an R3 cluster)")
	clients := fs.Int("clients", 8, "concurrent client goroutines")
	parallel := fs.Int("parallel", 32, "migrations in flight")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *n < 1 || *clients < 1 || *parallel < 1 || (*nodes != 1 && *nodes != 3) {
		return fmt.Errorf("%w: --resources, --clients, --parallel must be >= 1 and --cluster 1 or 3", errUsage)
	}
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }

	var url string
	if *nodes == 1 {
		srv, err := cnats.StartServer(cnats.Options{})
		if err != nil {
			return err
		}
		defer srv.Shutdown()
		url = srv.ClientURL()
	} else {
		cl, err := cnats.StartCluster(cnats.ClusterOptions{Nodes: *nodes})
		if err != nil {
			return err
		}
		defer cl.Shutdown()
		url = cl.ClientURLs()
	}
	say("embedded JetStream: %d node(s), sync always, at %s", *nodes, url)
	nc, js, err := cnats.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer nc.Close()
	if _, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{Nodes: *nodes}); err != nil {
		return err
	}
	store, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		return err
	}
	// Dev timings: tiers of 150 ms / 300 ms and a 200 ms replication bound
	// give a 500 ms convergence delay; the write lease is 5 s.
	newResolver := func() (*kvrouting.Resolver, error) {
		return kvrouting.NewResolver(store, kvrouting.ResolverConfig{
			Tiers:            []*kvrouting.Tier{kvrouting.NewTier("local", 150*time.Millisecond, 0), kvrouting.NewTier("regional", 300*time.Millisecond, 0)},
			ReplicationBound: 200 * time.Millisecond, ClockSkew: 50 * time.Millisecond,
		})
	}
	probe, err := newResolver()
	if err != nil {
		return err
	}
	locker, err := kvrouting.NewLocker(store, kvrouting.LockConfig{
		PreLockLease: time.Minute, HardDeleteLease: 20 * time.Second, WriteLease: 5 * time.Second, MaxLease: 10 * time.Minute,
		SecondaryLease: time.Hour, ConvergenceDelay: probe.ConvergenceDelay(), ClockSkew: 50 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	buffer := 100 * time.Millisecond
	say("convergence delay %s (+%s buffer), write lease %s", probe.ConvergenceDelay(), buffer, locker.Config().WriteLease)

	resources := make([]kvrouting.Resource, *n)
	for i := range resources {
		resources[i] = kvrouting.Resource{Kind: "conv", ID: fmt.Sprintf("demo-%05d", i)}
		if _, err := locker.Register(ctx, resources[i], "us-east"); err != nil && !errors.Is(err, kvrouting.ErrExists) {
			return err
		}
	}
	say("registered %d conversations at us-east", *n)

	// Live traffic: clients resolve and decide random operations.
	var decided, rejected, tombstoned, misrouted atomic.Int64
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	var twg sync.WaitGroup
	for c := 0; c < *clients; c++ {
		r, err := newResolver()
		if err != nil {
			stopTraffic()
			return err
		}
		twg.Add(1)
		go func(seed uint64) {
			defer twg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			for trafficCtx.Err() == nil {
				res := resources[rng.IntN(len(resources))]
				op := kvrouting.OpClass(rng.IntN(4))
				rs, err := r.Resolve(trafficCtx, res)
				if err != nil {
					continue
				}
				d := kvrouting.Decide(rs.Doc, rs.Doc.Primary.Region, op, time.Now(), 50*time.Millisecond)
				decided.Add(1)
				switch d.Outcome {
				case kvrouting.Reject:
					rejected.Add(1)
					if d.Reason == kvrouting.ReasonNotAuthoritative {
						misrouted.Add(1)
					}
				case kvrouting.Tombstone:
					tombstoned.Add(1)
				}
			}
		}(uint64(c))
	}

	type timing struct{ pre, hd, write, swap, total time.Duration }
	var mu sync.Mutex
	var timings []timing
	var failed []string
	sem := make(chan struct{}, *parallel)
	var wg sync.WaitGroup
	start := time.Now()
	var done atomic.Int64
	for i, res := range resources {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, res kvrouting.Resource) {
			defer wg.Done()
			defer func() { <-sem }()
			t0 := time.Now()
			g, err := locker.PreLock(ctx, res, "eu-west", fmt.Sprintf("m-%05d", i))
			if err != nil {
				mu.Lock()
				failed = append(failed, res.String()+": "+err.Error())
				mu.Unlock()
				return
			}
			// paper 000 §4.1: wait the convergence delay + buffer before any
			// lock restricts a user operation.
			time.Sleep(time.Until(g.NotBefore) + buffer)
			t1 := time.Now()
			d, err := locker.EscalateHardDelete(ctx, res, g.Token, g.Doc)
			if err == nil {
				time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond) // historical copy stands in here
			}
			t2 := time.Now()
			if err == nil {
				d, err = locker.EscalateWrite(ctx, res, g.Token, d)
			}
			t3 := time.Now()
			if err == nil {
				_, err = locker.Swap(ctx, res, g.Token, d)
			}
			t4 := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, res.String()+": "+err.Error())
				_, _ = locker.Release(ctx, res, g.Token, nil)
				return
			}
			timings = append(timings, timing{pre: t1.Sub(t0), hd: t2.Sub(t1), write: t4.Sub(t3) + t3.Sub(t2), swap: t4.Sub(t3), total: t4.Sub(t0)})
			if k := done.Add(1); k%100 == 0 || int(k) == len(resources) {
				fmt.Fprintf(stderr, "demo: %d/%d migrated (%.1f s)\n", k, len(resources), time.Since(start).Seconds())
			}
		}(i, res)
	}
	wg.Wait()
	stopTraffic()
	twg.Wait()
	elapsed := time.Since(start)

	// Independent check: read every document from the leader.
	var atTarget, locked, badSecondary int
	for _, res := range resources {
		d, err := store.GetLeader(ctx, res)
		if err != nil {
			return err
		}
		if d.Primary.Region == "eu-west" {
			atTarget++
		}
		if !d.Primary.Lock.IsZero() {
			locked++
		}
		if d.Secondary == nil || d.Secondary.Region != "us-east" || d.Secondary.Lock.Type != kvrouting.LockSecondary {
			badSecondary++
		}
	}
	pct := func(f func(timing) time.Duration) string {
		if len(timings) == 0 {
			return "-"
		}
		v := make([]time.Duration, len(timings))
		for i, t := range timings {
			v[i] = f(t)
		}
		slices.Sort(v)
		q := func(p float64) time.Duration { return v[min(len(v)-1, int(p*float64(len(v))))] }
		return fmt.Sprintf("p50 %8s  p99 %8s  max %8s", q(0.5).Round(time.Microsecond), q(0.99).Round(time.Microsecond), v[len(v)-1].Round(time.Microsecond))
	}
	say("\n%d migrations in %.1f s (%.0f/s)", len(timings), elapsed.Seconds(), float64(len(timings))/elapsed.Seconds())
	say("  phase 1 pre-lock + convergence  %s", pct(func(t timing) time.Duration { return t.pre }))
	say("  phase 2 hard-delete window      %s", pct(func(t timing) time.Duration { return t.hd }))
	say("  phase 3 write lock (to swap)    %s", pct(func(t timing) time.Duration { return t.write }))
	say("  phase 4 swap write              %s", pct(func(t timing) time.Duration { return t.swap }))
	say("  total                           %s", pct(func(t timing) time.Duration { return t.total }))
	say("traffic: %d decisions, %d rejected 423 (%d not authoritative), %d deletes tombstoned", decided.Load(), rejected.Load(), misrouted.Load(), tombstoned.Load())
	say("store: %+v", store.Stats())
	say("invariants: at target %d/%d, primary locks left %d, old location not locked secondary %d, failed %d",
		atTarget, len(resources), locked, badSecondary, len(failed))
	for _, f := range failed[:min(len(failed), 5)] {
		say("  failed: %s", f)
	}
	if atTarget != len(resources) || locked != 0 || badSecondary != 0 || len(failed) != 0 {
		return errors.New("invariant check failed")
	}
	say("OK: every resource at the target, no orphaned locks")
	return nil
}

// Package demo is `cutover demo`, the main job (`make demo`): everything
// embedded, a seeded workload with the paper's size mix (paper 001 §6.3),
// live user traffic through the client SDK for the whole run, every
// conversation migrated to another region as one tenant move, a report
// shaped like paper 001 Table 6, and the invariant check of internal/check,
// which uses only what the clients saw acknowledged, what the stores hold
// and the routing revisions — never the engine's own opinion.
package demo

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/bench"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/check"
	"github.com/cutover/cutover/internal/pgserver"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/internal/workload"
	cnats "github.com/cutover/cutover/nats"
)

// Options are the demo's settings (the command's flags).
type Options struct {
	Conversations int
	Cluster       int
	Clients       int
	Concurrency   int
	Seed          uint64
	BigSize       int
	// Convergence is Phase 1's wait: "fence" (default) or "ttl"
	// (orchestrator.Config.Convergence).
	Convergence string
	// ResolverTTL, if set, is the TTL of the services' routing caches (one
	// tier); zero keeps the system's default tiers.
	ResolverTTL time.Duration
	// RawClients is how many plain HTTP clients post without ever
	// retrying (a browser, curl): what users without the SDK see.
	RawClients int
	// QueueWrites and QueueMax set the API's write queue
	// (system.Config.QueueWrites: 0 = the default 2 s, negative = off).
	QueueWrites time.Duration
	QueueMax    int
	// Supercluster runs one cluster per region joined by gateways, each
	// gateway link shaped by WAN (system.Config.Supercluster).
	Supercluster bool
	WAN          cnats.WAN
	// Postgres keeps the messages service of every region in PostgreSQL
	// (system.Config.Postgres) while the other services stay on Pebble:
	// a URL, or PrivatePostgres to start a private server from the
	// machine's binaries (internal/pgserver, fsync on) for the run.
	Postgres string
}

// PrivatePostgres asks Run for a private PostgreSQL server.
const PrivatePostgres = "private"

// Validate reports options the demo cannot run, as an error wrapping
// system.ErrConfig (the command's usage error): fewer than one
// conversation, client, migration in flight or message in a large
// conversation, a cluster of other than 1 or 3 nodes, negative raw clients
// or resolver TTL, a convergence other than fence, ttl or "" (fence).
func (o Options) Validate() error {
	switch {
	case o.Conversations < 1 || o.Clients < 1 || o.Concurrency < 1 || o.BigSize < 1:
		return fmt.Errorf("%w: conversations, clients, concurrency and big must be >= 1", system.ErrConfig)
	case o.Cluster != 1 && o.Cluster != 3:
		return fmt.Errorf("%w: cluster must be 1 or 3", system.ErrConfig)
	case o.RawClients < 0:
		return fmt.Errorf("%w: raw clients must be >= 0", system.ErrConfig)
	case o.Convergence != "" && o.Convergence != "fence" && o.Convergence != "ttl":
		return fmt.Errorf("%w: convergence must be fence or ttl (or empty: fence)", system.ErrConfig)
	case o.ResolverTTL < 0:
		return fmt.Errorf("%w: resolver TTL must be >= 0", system.ErrConfig)
	}
	return nil
}

// Run runs the demo, printing progress to stdout (milestones) and stderr
// (counters), and returns its report; the caller prints it and fails on
// Report.Failures. It refuses options that fail Validate before starting
// anything.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	// One process, loopback only: development identities (the gateway's
	// --insecure-dev-auth).
	cfg := system.Config{Cluster: o.Cluster, Workers: 2, Supercluster: o.Supercluster, WAN: o.WAN, InsecureDevAuth: true}
	cfg.Orchestrator.CleanupWindow = 10 * time.Minute // keep the source for the dual-authority check
	cfg.Orchestrator.Convergence = o.Convergence
	cfg.QueueWrites, cfg.QueueMax = o.QueueWrites, o.QueueMax
	if o.ResolverTTL > 0 {
		cfg.Tiers = []time.Duration{o.ResolverTTL}
	}
	pgWhere := ""
	switch o.Postgres {
	case "":
	case PrivatePostgres:
		srv, err := pgserver.Start(ctx, pgserver.Options{Durable: true})
		if err != nil {
			return nil, err
		}
		defer func() { _ = srv.Stop() }()
		cfg.Postgres, pgWhere = srv.URL(), "a private PostgreSQL server at "+srv.Addr()+" (fsync on)"
	default:
		cfg.Postgres, pgWhere = o.Postgres, "PostgreSQL at "+pgserver.Redact(o.Postgres)
	}
	sys, err := system.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer sys.Close()
	source, target := sys.Source, sys.Target
	say("cutover demo: embedded JetStream (%d node(s), sync always), regions %s and %s, API %s", o.Cluster, source, target, sys.APIURL)
	say("  auth: INSECURE development identities (--insecure-dev-auth: Bearer user:<id>, NATS without users, unsigned approvers); never in production")

	rep := &Report{}
	rep.Setup.Conversations, rep.Setup.Cluster, rep.Setup.Source, rep.Setup.Target = o.Conversations, o.Cluster, source, target
	rep.Setup.Convergence = sys.Config.Orchestrator.Convergence
	for _, ttl := range sys.Config.Tiers {
		rep.Setup.ResolverTTLMs = max(rep.Setup.ResolverTTLMs, float64(ttl.Milliseconds()))
	}
	rep.Setup.Durability = "JetStream sync_interval always; Pebble fsync per commit"
	if o.Cluster > 1 {
		rep.Setup.Durability = "JetStream R3, sync_interval always; Pebble fsync per commit"
	}
	if pgWhere != "" {
		rep.Setup.MessagesStore = "PostgreSQL (participant kit, services/pgstore); the other services on Pebble"
		rep.Setup.Durability += "; PostgreSQL synchronous commit"
		say("  messages: %s; conversations, reactions, readstate and media on Pebble", pgWhere)
	}
	if o.Supercluster {
		rep.Setup.Topology = fmt.Sprintf("supercluster: %d cluster(s) of %d node(s), gateways through WAN proxies", len(sys.Config.Regions), o.Cluster)
		rep.Setup.WAN = o.WAN.String()
		say("  supercluster: one cluster per region, gateway links shaped %q", rep.Setup.WAN)
	}

	// The independent observer of every routing revision.
	obs, err := check.Watch(ctx, sys.JS)
	if err != nil {
		return nil, err
	}
	defer obs.Stop()

	// Seed: the paper's size mix (paper 001 §6.3: 54% ~10, 39% ~80, 7% ~4,000).
	users := make([]string, o.Clients)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
	}
	mix := workload.PaperMix(o.BigSize)
	convs := workload.Assign("conv", o.Conversations, mix, o.Seed, 0.2)
	led := workload.NewLedger()
	seeder, err := client.New(sys.APIURL, "user:seed", client.WithWorkers(16))
	if err != nil {
		return nil, err
	}
	defer seeder.Close()
	total := workload.Messages(convs)
	rep.Setup.Messages = total
	n := workload.ByClass(convs)
	say("seeding %d conversations with %d messages (%d large, %d medium, %d small)...", o.Conversations, total, n[mix[2].Name], n[mix[1].Name], n[mix[0].Name])
	err = workload.Seeder{Client: seeder, Users: users, Ledger: led}.All(ctx, convs, func(posted, total int) {
		fmt.Fprintf(stderr, "demo: seeded %d/%d messages\n", posted, total)
	})
	if err != nil {
		return nil, err
	}
	say("seeded in %.1f s", time.Since(start).Seconds())

	// Live traffic through the SDK for the whole migration.
	ids := workload.IDs(convs)
	tr, err := workload.StartTraffic(ctx, workload.TrafficConfig{APIs: []string{sys.APIURL}, Users: users, Convs: workload.NewConvSet(ids...),
		Seed: o.Seed, Ledger: led, OnClient: func(u string, c *client.Client) { sys.Metrics.WatchClient(u, c.Stats) }})
	if err != nil {
		return nil, err
	}
	defer tr.Stop()
	raw := workload.StartRaw(ctx, workload.RawConfig{API: sys.APIURL, Users: users, Clients: o.RawClients,
		Convs: workload.NewConvSet(ids...), Seed: o.Seed, Ledger: led})
	defer raw.Stop()
	time.Sleep(500 * time.Millisecond)

	// The tenant move: every conversation to the target region.
	resources := make([]string, len(ids))
	for i, c := range ids {
		resources[i] = "conv/" + c
	}
	say("tenant move: %d conversations %s → %s, %d in flight", len(resources), source, target, o.Concurrency)
	tid, wall, err := sys.MoveTenant(ctx, "demo-tenant", target, resources, o.Concurrency, 0, func(tv system.TenantProgress, d time.Duration) {
		fmt.Fprintf(stderr, "demo: migrated %d/%d (active %d, failed %d) %.1f s\n", tv.Completed, tv.Total, tv.Active, tv.Failed, d.Seconds())
	})
	if err != nil {
		return nil, err
	}
	say("tenant move %s finished in %.1f s", tid, wall.Seconds())
	time.Sleep(500 * time.Millisecond) // traffic after the cutover lands at the target
	st := tr.Stop()
	rep.Raw = raw.Stop()
	rep.Writes.QueuedServerSide = int64(sys.API.QueueStats().Queued)
	rep.Setup.QueueWritesMs = float64(max(sys.Config.QueueWrites, 0).Milliseconds())
	w := &rep.Writes
	w.Attempted, w.Acknowledged, w.Failed, w.Reads, w.FailedBy = st.Attempted, st.Acknowledged, st.FailedOther, st.Reads, st.FailedBy
	w.Rejected423, w.Recovered, w.Unrecovered, w.MaxFenceMs = st.Rejected423, st.Recovered, st.Unrecovered, st.MaxFenceMs()

	if err := rep.migrations(ctx, sys, tid); err != nil {
		return nil, err
	}
	lc := sys.Locker.Config()
	res, err := check.Run(ctx, check.Config{Ledger: led, Convs: ids, Reader: seeder, Routing: sys.Locker.Get,
		Source: source, Target: target, Observer: obs, ClockSkew: lc.ClockSkew, WriteLease: lc.WriteLease,
		Stamps: check.RegionStamps(sys.Regions), Authorities: check.RegionAuthorities(sys.Regions), Regions: sys.Config.Regions,
		CleanupWindow: sys.Config.Orchestrator.CleanupWindow, CleanupSlack: 30 * time.Second})
	if err != nil {
		return nil, err
	}
	rep.Invariants = res.Invariants
	rep.Setup.DurationS = time.Since(start).Seconds()
	return rep, nil
}

// migrations fills the migration figures from the events of the tenant's
// children.
func (r *Report) migrations(ctx context.Context, sys *system.System, tid string) error {
	var pre, hist, wl, cut, tot []float64
	for _, v := range sys.Projector.Snapshot().Migrations {
		if v.Parent != tid || v.Phase == events.PhaseTenant {
			continue
		}
		r.Migrations.Total++
		switch v.Status {
		case events.StatusCompleted:
			r.Migrations.Completed++
			if v.Attempt <= 1 {
				r.Migrations.FirstAttempt++
			}
		case events.StatusFailed, events.StatusDropped:
			r.Migrations.Failed++
		}
		if f := v.Figures; f != nil && v.Status == events.StatusCompleted {
			pre, hist, wl, cut, tot = append(pre, float64(f.PreLockMs)), append(hist, float64(f.HistoricalMs)), append(wl, float64(f.WriteLockMs)), append(cut, float64(f.CutoverMs)), append(tot, float64(f.TotalMs))
		}
		hs, err := sys.Orch.History(ctx, v.ID)
		if err != nil {
			return err
		}
		for _, e := range hs {
			var val *events.Validated
			if b, ok := events.BodyAs[events.Validated](e); ok {
				val = &b
			} else if b, ok := events.BodyAs[events.Swapped](e); ok {
				val = b.Validation // a validation passed in the swap's step
			}
			if val != nil {
				r.Validation.Runs++
				if !val.OK {
					r.Validation.Failures++
				}
			}
			if e.Type == events.TypeRolledBack {
				r.Migrations.RolledBack++
			}
		}
	}
	r.PhasesMs.PreLock, r.PhasesMs.HistoricalCopy, r.PhasesMs.WriteLock = percentiles(pre), percentiles(hist), percentiles(wl)
	r.PhasesMs.Cutover, r.PhasesMs.Total = percentiles(cut), percentiles(tot)
	return nil
}

// Pct summarises one phase's durations.
type Pct struct {
	Avg float64 `json:"avg"`
	P50 float64 `json:"p50"`
	P75 float64 `json:"p75"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func percentiles(v []float64) Pct {
	avg, q, mx := bench.Quantiles(v, 0.50, 0.75, 0.99)
	return Pct{Avg: avg, P50: q[0], P75: q[1], P99: q[2], Max: mx}
}

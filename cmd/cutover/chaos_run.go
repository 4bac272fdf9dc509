//go:build ignore

package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/services/api"
	"github.com/cutover/cutover/services/chat"
	"github.com/cutover/cutover/services/client"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/fx"
)

// Chaos timings: short leases so that expiry, pauses and fences happen many
// times in a run. The stale API's cache TTL is far past the convergence
// delay the orchestrator waits.
const (
	chaosWriteLease = 3 * time.Second
	chaosStaleTTL   = 8 * time.Second
	chaosDrain      = 2 * time.Minute
	// chaosRoutingHistory is the ROUTING bucket's history during a run (the
	// KV maximum).
	chaosRoutingHistory = jetstream.KeyValueMaxHistory
)

// chaosWorker is one orchestrator worker the nemesis may kill or pause.
type chaosWorker struct {
	id     int
	w      *orchestrator.Worker
	ctx    context.Context
	cancel context.CancelFunc
	// pause, when armed, makes the worker's next write-lock step block
	// (after the lock is taken, before its event is appended) for longer
	// than the write lease: a stale holder that later resumes.
	pause atomic.Bool
}

// chaosRun is the state of one run; see chaos().
type chaosRun struct {
	o      chaosOptions
	stderr io.Writer
	cfg    *systemConfig
	pc     *cnats.ProxiedCluster
	nc     *nats.Conn
	js     jetstream.JetStream
	lk     *kvrouting.Locker
	dir    *contractnats.Directory
	orch   *orchestrator.Client
	rep    *chaosReport
	obs    *routingObserver

	staleRequests atomic.Int64
	nextWorker    atomic.Int64

	mu struct {
		sync.Mutex
		workers  []*chaosWorker
		convs    []string
		busy     map[string]string // conversation → migration (or tenant) in flight
		inflight map[string][]string
		all      []string // every migration started (tenant children added when known)
		tenants  []string
		paused   map[kvrouting.Token]bool
	}
}

func (r *chaosRun) logf(format string, a ...any) {
	if r.o.verbose {
		fmt.Fprintf(r.stderr, "chaos: "+format+"\n", a...)
	}
}

// schedule records a nemesis action (the seeded schedule, for the report).
func (r *chaosRun) schedule(format string, a ...any) {
	s := fmt.Sprintf(format, a...)
	r.logf("%s", s)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rep.Nemesis.Schedule) < 200 {
		r.rep.Nemesis.Schedule = append(r.rep.Nemesis.Schedule, s)
	}
}

func chaos(ctx context.Context, o chaosOptions, stderr io.Writer) (*chaosReport, error) {
	start := time.Now()
	r := &chaosRun{o: o, stderr: stderr, rep: &chaosReport{Seed: o.seed}}
	r.mu.busy, r.mu.inflight, r.mu.paused = map[string]string{}, map[string][]string{}, map[kvrouting.Token]bool{}

	base, err := os.MkdirTemp("", "cutover-chaos-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	pc, err := cnats.StartProxiedCluster(cnats.ClusterOptions{Nodes: 3, BaseDir: base + "/nats", Name: "chaos"})
	if err != nil {
		return nil, err
	}
	r.pc = pc
	defer pc.Shutdown()

	cfg := &systemConfig{NATSURL: pc.ClientURLs(), Cluster: 3, DataDir: base, HTTPAddr: "127.0.0.1:0"}
	cfg.Locks = kvrouting.LockConfig{PreLockLease: time.Minute, HardDeleteLease: 10 * time.Second,
		WriteLease: chaosWriteLease, MaxLease: 10 * time.Minute, SecondaryLease: time.Hour}
	cfg.Orchestrator.CleanupWindow = 10 * time.Minute // keep the old location for the dual-authority check
	cfg.Orchestrator.AckWait = 3 * time.Second
	cfg.Orchestrator.RescheduleBackoff = 500 * time.Millisecond
	cfg.Orchestrator.StepTimeout = 5 * time.Second
	if err := cfg.ensureDefaults(); err != nil {
		return nil, err
	}
	r.cfg = cfg
	if err := provisionChaos(ctx, cfg.NATSURL, cfg.Regions[1:]); err != nil {
		return nil, err
	}
	var (
		hs      *httpServer
		regions regionMap
	)
	app := newApp(io.Discard, systemModule(cfg), apiModule(), fx.Provide(provideDirectory, provideOrchClient),
		fx.Populate(&hs, &r.orch, &r.lk, &regions, &r.nc, &r.js, &r.dir))
	startCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return nil, err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = app.Stop(stopCtx)
	}()
	// The system provisions the bucket with its default history; keep
	// the most a KV allows, so that the observer's ordered consumer, when
	// a leader change resets it, resumes without a revision purged under it.
	if err := provisionChaos(ctx, cfg.NATSURL, nil); err != nil {
		return nil, err
	}
	r.rep.Invariants.WriteLockExpiryMs = float64(r.lk.Config().WriteLease.Milliseconds())

	// The independent observer of every routing revision.
	r.obs, err = watchRouting(ctx, r.js)
	if err != nil {
		return nil, err
	}
	defer r.obs.stop()

	// A second API over the same stores whose resolvers keep documents far
	// past the convergence delay: requests sent there decide on stale
	// routing, and only the fence at the resource stands in their way.
	staleURL, stopStale, err := r.serveStaleAPI(regions)
	if err != nil {
		return nil, err
	}
	defer stopStale()
	mainURL := "http://" + hs.addr

	for range o.workers {
		if err := r.startWorker(); err != nil {
			return nil, err
		}
	}
	defer r.stopWorkers()

	// Seed conversations.
	seeder, err := client.New(mainURL, "user:seed")
	if err != nil {
		return nil, err
	}
	defer seeder.Close()
	users := make([]string, o.clients)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
	}
	led := &ledger{msgs: map[string]map[string]*msgState{}}
	wrng := rand.New(rand.NewPCG(o.seed, 7))
	newConv := func(ctx context.Context, i int) error {
		conv := fmt.Sprintf("chaos-%04d", i)
		if _, err := seeder.CreateConversation(ctx, client.NewConversation{ID: conv, Title: conv, Members: users}); err != nil {
			return fmt.Errorf("create %s: %w", conv, err)
		}
		n := 5 + wrng.IntN(20)
		for j := range n {
			id, text := fmt.Sprintf("s%03d", j), fmt.Sprintf("seed %d of %s", j, conv)
			if _, err := seeder.PostMessage(ctx, conv, client.NewMessage{ID: id, Text: text}); err != nil {
				led.uncertain(conv, id, text, false)
				continue
			}
			led.set(conv, id, msgState{text: text})
		}
		r.mu.Lock()
		r.mu.convs = append(r.mu.convs, conv)
		r.mu.Unlock()
		return nil
	}
	for i := range 24 {
		if err := newConv(ctx, i); err != nil {
			return nil, err
		}
	}

	// Live traffic: half the users talk to the stale API.
	think := cmp.Or(o.think, 100*time.Millisecond)
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	defer stopTraffic()
	var attempted, acked, failedOther, reads atomic.Int64
	var clients []*client.Client
	var twg sync.WaitGroup
	for ui, u := range users {
		base := mainURL
		if ui%2 == 1 {
			base = staleURL
		}
		c, err := client.New(base, "user:"+u)
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
		twg.Go(func() {
			rng := rand.New(rand.NewPCG(o.seed, uint64(ui)+100))
			own := map[string][]string{}
			n := 0
			for trafficCtx.Err() == nil {
				r.mu.Lock()
				conv := r.mu.convs[rng.IntN(len(r.mu.convs))]
				r.mu.Unlock()
				x := rng.IntN(100)
				var err error
				write := true
				switch {
				case x < 45:
					n++
					id, text := fmt.Sprintf("%s-%06d", u, n), fmt.Sprintf("live %d from %s", n, u)
					attempted.Add(1)
					if _, err = c.PostMessage(trafficCtx, conv, client.NewMessage{ID: id, Text: text}); err == nil {
						led.set(conv, id, msgState{text: text})
						own[conv] = append(own[conv], id)
					} else {
						led.uncertain(conv, id, text, false)
					}
				case x < 60 && len(own[conv]) > 0:
					id := own[conv][rng.IntN(len(own[conv]))]
					text := fmt.Sprintf("edited %d by %s", rng.IntN(1e6), u)
					attempted.Add(1)
					if _, err = c.EditMessage(trafficCtx, conv, id, text); err == nil {
						led.set(conv, id, msgState{text: text})
					} else {
						led.uncertain(conv, id, text, false)
					}
				case x < 72 && len(own[conv]) > 0:
					i := rng.IntN(len(own[conv]))
					id := own[conv][i]
					attempted.Add(1)
					if _, err = c.DeleteMessage(trafficCtx, conv, id); err == nil {
						led.set(conv, id, msgState{deleted: true})
						own[conv] = slices.Delete(own[conv], i, i+1)
					} else {
						led.uncertain(conv, id, "", true)
					}
				default:
					write = false
					reads.Add(1)
					_, err = c.ListMessages(trafficCtx, conv, client.ListOptions{Limit: 20})
				}
				switch {
				case err == nil:
					if write {
						acked.Add(1)
					}
				case trafficCtx.Err() != nil:
				case errors.Is(err, client.ErrUnrecovered):
				default:
					failedOther.Add(1)
				}
				// Think time: before the fence fixes, stuck 423s throttled the
				// users; unthrottled they wrote ~300 messages/s into a few
				// dozen conversations, which grew until a migration took
				// minutes (44 migrations in a 10-minute run).
				sleepCtx(trafficCtx, think/2+time.Duration(rng.Int64N(int64(think))))
			}
		})
	}

	// Migrations run continuously; the nemesis runs beside them.
	runCtx, stopRun := context.WithTimeout(ctx, o.duration)
	defer stopRun()
	var nwg sync.WaitGroup
	nwg.Go(func() { r.migrate(runCtx, newConv) })
	nwg.Go(func() { r.nemesis(runCtx, ctx) })
	nwg.Wait()
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
	time.Sleep(chaosStaleTTL / 4) // traffic after the last cutovers
	stopTraffic()
	twg.Wait()
	for _, c := range clients {
		st := c.Stats()
		r.rep.Writes.Rejected423 += st.Rejected423
		r.rep.Writes.Unrecovered += st.Unrecovered
		r.rep.Writes.MaxFenceMs = max(r.rep.Writes.MaxFenceMs, float64(st.FenceDelayMax.Microseconds())/1000)
		_ = c.Close()
	}
	w := &r.rep.Writes
	w.Attempted, w.Acknowledged, w.Failed, w.Reads = attempted.Load(), acked.Load(), failedOther.Load(), reads.Load()
	r.rep.Nemesis.StaleRequests = int(r.staleRequests.Load())

	if err := r.check(ctx, regions, seeder, led); err != nil {
		return nil, err
	}
	r.rep.DurationS = time.Since(start).Seconds()
	return r.rep, nil
}

// provisionChaos creates the routing bucket, its mirror, the pages stream
// and the orchestrator's streams at R3 before anything uses them. A just
// formed cluster may refuse a placement ("peer offline") or time out while
// its peers report in; creation is idempotent, so it retries.
func provisionChaos(ctx context.Context, url string, mirrors []string) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	nc, js, err := cnats.Connect(cctx, url)
	if err != nil {
		return err
	}
	defer nc.Close()
	steps := []func(context.Context) error{
		func(ctx context.Context) error {
			_, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{Nodes: 3, History: chaosRoutingHistory})
			return err
		},
		func(ctx context.Context) error { _, err := contractnats.ProvisionPages(ctx, js, 3); return err },
		func(ctx context.Context) error {
			return orchestrator.Provision(ctx, js, orchestrator.StreamConfig{Replicas: 3})
		},
	}
	for _, m := range mirrors {
		steps = append(steps, func(ctx context.Context) error { _, err := cnats.ProvisionMirror(ctx, js, m, 1); return err })
	}
	for _, step := range steps {
		deadline := time.Now().Add(45 * time.Second)
		for {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := step(sctx)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("chaos: provision: %w", err)
			}
			sleepCtx(ctx, 250*time.Millisecond)
		}
	}
	return nil
}

func (r *chaosRun) serveStaleAPI(regions regionMap) (string, func(), error) {
	rs := resolverMap{}
	for i, name := range r.cfg.Regions {
		rc := kvrouting.ResolverConfig{Region: name, Tiers: []*kvrouting.Tier{kvrouting.NewTier(name+"-stale", chaosStaleTTL, 0)},
			ReplicationBound: r.cfg.ReplicationBound, ClockSkew: r.cfg.ClockSkew, JS: r.js}
		if i > 0 {
			rc.MirrorRegion = name
		}
		res, err := kvrouting.NewResolver(r.lk.Store(), rc)
		if err != nil {
			return "", nil, err
		}
		rs[name] = res
	}
	h, err := api.New(api.Config{Regions: regions, Resolvers: rs, Locker: r.lk, DefaultRegion: r.cfg.Regions[0],
		Auth: api.DevAuth{ServiceSecrets: map[string]string{"validator": r.cfg.ServiceSecret}}, Logger: r.cfg.Logger})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		r.staleRequests.Add(1)
		h.ServeHTTP(w, q)
	})}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// startWorker starts one more orchestrator worker.
func (r *chaosRun) startWorker() error {
	cw := &chaosWorker{id: int(r.nextWorker.Add(1))}
	cw.ctx, cw.cancel = context.WithCancel(context.Background())
	oc := r.cfg.Orchestrator
	oc.Locker, oc.Directory, oc.Logger = r.lk, r.dir, r.cfg.Logger
	oc.BeforeAppend = func(st *events.State, next events.Body) error {
		if next.Type() != events.TypeWriteLocked || !cw.pause.CompareAndSwap(true, false) {
			return nil
		}
		r.mu.Lock()
		r.mu.paused[kvrouting.Token(st.Token)] = true
		r.rep.Nemesis.PausesTriggered++
		r.mu.Unlock()
		r.logf("worker %d paused holding the write lock of %s", cw.id, st.Resource)
		select {
		case <-time.After(chaosWriteLease + 2*time.Second):
		case <-cw.ctx.Done():
		}
		r.logf("worker %d resumes (stale) on %s", cw.id, st.Resource)
		return nil
	}
	w, err := orchestrator.NewWorker(r.nc, r.js, oc)
	if err != nil {
		return err
	}
	cw.w = w
	go func() { _ = w.Run(cw.ctx) }()
	r.mu.Lock()
	r.mu.workers = append(r.mu.workers, cw)
	r.rep.Nemesis.WorkersStarted++
	r.mu.Unlock()
	return nil
}

func (r *chaosRun) killWorker(cw *chaosWorker) {
	cw.cancel()
	done := make(chan struct{})
	go func() { _ = cw.w.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		r.logf("worker %d: close still running after 10 s", cw.id)
	}
}

func (r *chaosRun) stopWorkers() {
	r.mu.Lock()
	ws := r.mu.workers
	r.mu.workers = nil
	r.mu.Unlock()
	for _, cw := range ws {
		r.killWorker(cw)
	}
}

// migrate keeps migrations running until ctx ends: single starts, small
// tenant moves, and now and then a new conversation.
func (r *chaosRun) migrate(ctx context.Context, newConv func(context.Context, int) error) {
	rng := rand.New(rand.NewPCG(r.o.seed, 11))
	tick := 0
	var (
		creating atomic.Bool
		bg       sync.WaitGroup
		starting = newLimiter(16)
	)
	defer bg.Wait()
	defer starting.Wait()
	r.mu.Lock()
	nextConv := len(r.mu.convs) // the next conversation's number
	r.mu.Unlock()
	var stats struct {
		ticks, noIdle, getErr, locked, startErr atomic.Int64
		reapNs, startNs                         atomic.Int64
	}
	defer func() {
		r.logf("driver: %d ticks, %d with no idle conversation, candidate reads failed %d, locked %d, starts failed %d; reap %.1f s, starts %.1f s",
			stats.ticks.Load(), stats.noIdle.Load(), stats.getErr.Load(), stats.locked.Load(), stats.startErr.Load(),
			time.Duration(stats.reapNs.Load()).Seconds(), time.Duration(stats.startNs.Load()).Seconds())
	}()
	for ctx.Err() == nil {
		tick++
		stats.ticks.Add(1)
		t0 := time.Now()
		left := r.reap(ctx)
		stats.reapNs.Add(int64(time.Since(t0)))
		if d := time.Since(t0); d > time.Second {
			r.logf("slow reap: %d in flight checked in %s", left, d.Round(time.Millisecond))
		}
		// Now and then a new conversation, and always when few are idle (so
		// the number of conversations, not the engine, never limits the
		// migrations started).
		// In the background, one at a time: creating one posts its seed
		// messages through the API, which under faults can take a minute.
		if (rng.IntN(4) == 0 || len(r.idleConvs()) < 6) && creating.CompareAndSwap(false, true) {
			i := nextConv
			nextConv++
			bg.Go(func() {
				defer creating.Store(false)
				if err := newConv(ctx, i); err != nil {
					r.logf("new conversation: %v", err)
				}
			})
		}
		idle := r.idleConvs()
		if len(idle) == 0 {
			stats.noIdle.Add(1)
		}
		t1 := time.Now()
		rng.Shuffle(len(idle), func(i, j int) { idle[i], idle[j] = idle[j], idle[i] })
		// Starts run in the background (at most 16 at once): under a
		// partition a routing read or a start can wait out its timeouts,
		// and the driver must keep starting migrations meanwhile (a
		// driver that waited started 364 in 10 minutes, the engine idle).
		// The conversations are reserved first so no tick picks them twice.
		if tick%8 == 0 && len(idle) >= 3 {
			// A tenant move: up to 4 idle conversations not at the target.
			target := r.cfg.Regions[rng.IntN(len(r.cfg.Regions))]
			cands := r.reserve(idle[:min(len(idle), 8)])
			tenant := fmt.Sprintf("t%d", tick)
			if !starting.TryGo(func() {
				var res []string
				for _, c := range cands {
					if len(res) < 4 {
						if doc, err := r.lk.Get(ctx, chatResource(c)); err == nil && doc.Primary.Region != target && doc.Primary.Lock.IsZero() {
							res = append(res, c)
							continue
						}
					}
					r.unreserve(c)
				}
				if len(res) == 0 {
					return
				}
				rs := make([]string, len(res))
				for i, c := range res {
					rs[i] = "conv/" + c
				}
				tid, err := r.orch.StartTenant(ctx, events.StartTenant{Tenant: tenant, Target: target, Resources: rs, Concurrency: 2})
				if err != nil {
					stats.startErr.Add(1)
					r.unreserve(res...)
					return
				}
				r.track(tid, true, res...)
			}) {
				r.unreserve(cands...)
			}
		} else {
			for _, c := range r.reserve(idle[:min(len(idle), 1+rng.IntN(3))]) {
				if !starting.TryGo(func() {
					doc, err := r.lk.Get(ctx, chatResource(c))
					switch {
					case err != nil:
						stats.getErr.Add(1)
						r.unreserve(c)
						return
					case !doc.Primary.Lock.IsZero():
						stats.locked.Add(1)
						r.unreserve(c)
						return
					}
					id, err := r.orch.Start(ctx, events.Start{Resource: "conv/" + c, Target: r.other(doc.Primary.Region)})
					if err != nil {
						stats.startErr.Add(1)
						r.unreserve(c)
						return
					}
					r.track(id, false, c)
				}) {
					r.unreserve(c)
				}
			}
		}
		stats.startNs.Add(int64(time.Since(t1)))
		if d := time.Since(t0); d > 2*time.Second {
			r.logf("slow tick: %s", d.Round(time.Millisecond))
		}
		sleepCtx(ctx, time.Duration(200+rng.IntN(400))*time.Millisecond)
	}
}

func chatResource(conv string) kvrouting.Resource {
	return kvrouting.Resource{Kind: chat.KindConversation, ID: conv}
}

func (r *chaosRun) other(region string) string {
	for _, x := range r.cfg.Regions {
		if x != region {
			return x
		}
	}
	return region
}

func (r *chaosRun) idleConvs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.mu.convs {
		if _, ok := r.mu.busy[c]; !ok {
			out = append(out, c)
		}
	}
	return out
}

// reserve marks the idle ones of convs busy (no migration id yet) and
// returns them, so that a start running in the background is not raced by
// the next tick.
func (r *chaosRun) reserve(convs []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range convs {
		if _, busy := r.mu.busy[c]; !busy {
			r.mu.busy[c] = ""
			out = append(out, c)
		}
	}
	return out
}

// unreserve frees conversations reserved for a start that did not happen.
func (r *chaosRun) unreserve(convs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range convs {
		if r.mu.busy[c] == "" {
			delete(r.mu.busy, c)
		}
	}
}

// limiter runs at most n functions at once in the background.
type limiter struct {
	sem chan struct{}
	wg  sync.WaitGroup
}

func newLimiter(n int) *limiter { return &limiter{sem: make(chan struct{}, n)} }

// TryGo runs f in the background unless n are running; it reports whether
// it did.
func (l *limiter) TryGo(f func()) bool {
	select {
	case l.sem <- struct{}{}:
	default:
		return false
	}
	l.wg.Go(func() {
		defer func() { <-l.sem }()
		f()
	})
	return true
}

// Wait waits for every function started.
func (l *limiter) Wait() { l.wg.Wait() }

// track records a started migration (or tenant move) over convs.
func (r *chaosRun) track(id string, tenant bool, convs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range convs {
		r.mu.busy[c] = id
	}
	r.mu.inflight[id] = append(r.mu.inflight[id], convs...)
	if tenant {
		r.mu.tenants = append(r.mu.tenants, id)
		r.rep.Migrations.Tenants++
	} else {
		r.mu.all = append(r.mu.all, id)
		r.rep.Migrations.Started++
	}
}

// reap frees the conversations of finished migrations; it reports how many
// are still in flight.
func (r *chaosRun) reap(ctx context.Context) int {
	r.mu.Lock()
	ids := make([]string, 0, len(r.mu.inflight))
	for id := range r.mu.inflight {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	// All at once: during a leader kill each read may wait out its timeout,
	// and one tick must not wait for the sum of them.
	states := make([]*events.State, len(ids))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if st, _, err := r.orch.State(sctx, id); err == nil {
				states[i] = st
			}
		})
	}
	wg.Wait()
	left := 0
	for i, id := range ids {
		st := states[i]
		if st == nil || !st.Status.Terminal() {
			left++
			continue
		}
		r.mu.Lock()
		for _, c := range r.mu.inflight[id] {
			if r.mu.busy[c] == id {
				delete(r.mu.busy, c)
			}
		}
		delete(r.mu.inflight, id)
		if slices.Contains(r.mu.tenants, id) {
			for _, ch := range st.Children {
				if !slices.Contains(r.mu.all, ch) {
					r.mu.all = append(r.mu.all, ch)
					r.rep.Migrations.Started++
				}
			}
		}
		r.mu.Unlock()
	}
	return left
}

// drain waits until every tracked migration is terminal.
func (r *chaosRun) drain(ctx context.Context) error {
	deadline := time.Now().Add(chaosDrain)
	for {
		left := r.reap(ctx)
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d migrations still running after %s", left, chaosDrain)
		}
		r.logf("draining: %d in flight", left)
		sleepCtx(ctx, 500*time.Millisecond)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

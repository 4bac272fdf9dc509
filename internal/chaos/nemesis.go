package chaos

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	cnats "github.com/cutover/cutover/nats"
)

// nemesis breaks one thing at a time on a schedule drawn from the seed
// until run ends: rounds of every fault in a seeded order (leader kills
// twice per round), so that each kind happens; the first round always
// completes, however short the run. Actions use ctx, which outlives run.
// The sequence of actions and their parameters depends on the seed only;
// when they land relative to the migrations depends on the machine.
func (r *run) nemesis(run, ctx context.Context) {
	rng := rand.New(rand.NewPCG(r.o.Seed, 3))
	round := []func(){
		func() { r.killLeader(ctx, rng) },
		func() { r.killLeader(ctx, rng) },
		func() { r.killAWorker(rng) },
		func() { r.pauseAWorker(rng) },
		func() { r.partition(ctx, rng) },
		func() { r.duplicateStart(ctx, rng) },
		func() { r.steer(ctx, rng) },
	}
	if r.pg != nil {
		round = append(round, func() { r.restartPostgres(ctx, rng) })
	}
	sleep(run, time.Second)
	for first := true; first || run.Err() == nil; first = false {
		for _, i := range rng.Perm(len(round)) {
			if ctx.Err() != nil || (!first && run.Err() != nil) {
				return
			}
			round[i]()
			sleep(ctx, time.Duration(300+rng.IntN(1200))*time.Millisecond)
		}
	}
}

// steer is an operator steering a migration in flight (cutover migrate
// pause / throttle / resume): it pauses one, or a tenant move, holds it
// for a while, changes its rate (a tenant move's concurrency too) and
// resumes it. The pause is an event the faults above must not lose; the
// resume is sent whatever happens, so that the run can drain.
func (r *run) steer(ctx context.Context, rng *rand.Rand) {
	hold := time.Duration(200+rng.IntN(1800)) * time.Millisecond
	k, conc, rate := rng.IntN(1<<30), 1+rng.IntN(4), []int{events.NoRate, 200, 2000}[rng.IntN(3)]
	r.mu.Lock()
	ids := make([]string, 0, len(r.mu.inflight))
	for id := range r.mu.inflight {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	if len(ids) == 0 {
		r.schedule("steer: no migration in flight")
		return
	}
	slices.Sort(ids)
	id := ids[k%len(ids)]
	r.schedule("steer %s: pause for %s, throttle (concurrency %d, rate %d), resume", id, hold, conc, rate)
	r.mu.Lock()
	r.rep.Nemesis.Steers++
	r.mu.Unlock()
	send := func(ctx context.Context, cmd events.Body) {
		for i := 0; i < 20; i++ { // a leader may be down: the command stream answers again soon
			if err := r.sys.Orch.Send(ctx, cmd); err == nil || ctx.Err() != nil {
				return
			}
			sleep(ctx, 250*time.Millisecond)
		}
		r.logf("steer %s: %s not sent", id, cmd.Type())
	}
	send(ctx, events.Pause{MigrationID: id, Reason: "chaos"})
	sleep(ctx, hold)
	send(ctx, events.Throttle{MigrationID: id, Concurrency: conc, Rate: rate})
	send(context.WithoutCancel(ctx), events.Resume{MigrationID: id})
}

// killLeader crashes the node leading ROUTING or the migration events
// stream and restarts it after a pause (topology.crashLeader).
func (r *run) killLeader(ctx context.Context, rng *rand.Rand) {
	stream := cnats.RoutingStream
	if rng.IntN(2) == 1 {
		stream = events.EventStream
	}
	down := time.Duration(200+rng.IntN(1500)) * time.Millisecond
	node, restart, err := r.topo.crashLeader(ctx, stream)
	if err != nil {
		r.schedule("kill-leader %s: no leader now (%v)", stream, err)
		return
	}
	r.schedule("kill-leader %s: %s for %s", stream, node, down)
	r.mu.Lock()
	r.rep.Nemesis.LeaderKills++
	r.mu.Unlock()
	sleep(ctx, down)
	if err := restart(); err != nil {
		r.logf("restart %s: %v", node, err)
	}
}

// restartPostgres crashes the messages' PostgreSQL server (immediate
// shutdown: connections cut, transactions in flight lost) and starts it
// again after a pause: the participants answer unavailable meanwhile, and
// whatever was acknowledged must survive.
func (r *run) restartPostgres(ctx context.Context, rng *rand.Rand) {
	down := time.Duration(200+rng.IntN(1500)) * time.Millisecond
	if err := r.pg.Kill(ctx); err != nil {
		r.logf("kill postgres: %v", err)
		return
	}
	r.schedule("restart-postgres: down for %s", down)
	r.mu.Lock()
	r.rep.Nemesis.PostgresRestarts++
	r.mu.Unlock()
	sleep(ctx, down)
	// Restart even when ctx has ended: the drain and the check need it.
	if err := r.pg.Restart(context.WithoutCancel(ctx)); err != nil {
		r.logf("restart postgres: %v", err)
	}
}

// killAWorker stops a worker wherever it is (mid-phase: there is always
// work in flight) and starts a fresh one.
func (r *run) killAWorker(rng *rand.Rand) {
	r.mu.Lock()
	if len(r.mu.workers) == 0 {
		r.mu.Unlock()
		return
	}
	k := rng.IntN(len(r.mu.workers))
	cw := r.mu.workers[k]
	r.mu.workers = append(r.mu.workers[:k:k], r.mu.workers[k+1:]...)
	r.rep.Nemesis.WorkerKills++
	r.mu.Unlock()
	r.schedule("kill-worker %d", cw.id)
	r.killWorker(cw)
	if err := r.startWorker(); err != nil {
		r.logf("start worker: %v", err)
	}
}

// pauseAWorker arms a pause point (workers.go pausePoints): the next step
// of any worker that ends there stalls past the write lease and the ack
// wait, so a second worker takes the migration over, then the first
// resumes as a stale holder. Every other pause is at the write lock, the
// point that matters most; the others go to the point paused least so far
// (ties: armed least, then seeded), and a point stays armed until a step
// reaches it, so that rare points (a rollback, a cleanup) are paused too.
func (r *run) pauseAWorker(rng *rand.Rand) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.armed == nil {
		r.mu.armed, r.mu.armings = map[string]bool{}, map[string]int{}
	}
	point := "write-locked"
	if r.rep.Nemesis.Pauses%2 == 1 {
		best := -1
		for _, i := range rng.Perm(len(pausePoints)) {
			p := pausePoints[i]
			if r.mu.armed[p] {
				continue
			}
			if best < 0 || less(r.rep.Nemesis.PausePoints[p], r.mu.armings[p], r.rep.Nemesis.PausePoints[pausePoints[best]], r.mu.armings[pausePoints[best]]) {
				best = i
			}
		}
		if best < 0 {
			return // every point armed already
		}
		point = pausePoints[best]
	}
	r.mu.armed[point] = true
	r.mu.armings[point]++
	r.rep.Nemesis.Pauses++
	if len(r.rep.Nemesis.Schedule) < 200 {
		r.rep.Nemesis.Schedule = append(r.rep.Nemesis.Schedule, "pause the next step at "+point)
	}
}

// less orders pause points: fewer pauses first, then fewer armings.
func less(fired, armed, fired2, armed2 int) bool {
	return fired < fired2 || (fired == fired2 && armed < armed2)
}

// partition cuts a node (in a supercluster, a region) off, then heals it
// (topology.partition).
func (r *run) partition(ctx context.Context, rng *rand.Rand) {
	mode, name := cnats.ProxyDrop, "drop"
	if rng.IntN(2) == 1 {
		mode, name = cnats.ProxyBlackhole, "blackhole"
	}
	hold := time.Duration(1000+rng.IntN(3000)) * time.Millisecond
	what, wait, heal, ok := r.topo.partition(rng, mode, r.sys.NC.ConnectedUrl())
	if !ok {
		return
	}
	r.schedule("partition %s (%s) for %s", what, name, hold)
	r.mu.Lock()
	r.rep.Nemesis.Partitions++
	r.mu.Unlock()
	if wait(time.Now().Add(hold)) {
		r.logf("partition of %s leaked", what)
		r.mu.Lock()
		r.rep.Nemesis.PartitionLeaks++
		r.mu.Unlock()
	}
	heal()
}

// duplicateStart races two start commands for one idle conversation. It
// looks for an idle, unlocked one for up to 10 s (under a leader kill the
// routing read may fail for a while), so that the fault happens.
func (r *run) duplicateStart(ctx context.Context, rng *rand.Rand) {
	var c, target string
	k := rng.IntN(1 << 30) // one draw: the schedule stays the seed's
	for deadline := time.Now().Add(10 * time.Second); c == "" && time.Now().Before(deadline) && ctx.Err() == nil; {
		idle := r.idleConvs()
		if len(idle) > 0 {
			cand := idle[k%len(idle)]
			k++
			if doc, err := r.sys.Locker.Get(ctx, chatResource(cand)); err == nil && doc.Primary.Lock.IsZero() {
				c, target = cand, r.other(doc.Primary.Region)
				break
			}
		}
		sleep(ctx, 200*time.Millisecond)
	}
	if c == "" {
		r.schedule("duplicate-start: no idle unlocked conversation in 10 s")
		return
	}
	r.schedule("duplicate-start %s → %s", c, target)
	var wg sync.WaitGroup
	ids := make([]string, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() {
			ids[i], errs[i] = r.sys.Orch.Start(ctx, events.Start{Resource: "conv/" + c, Target: target})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		r.logf("duplicate start: %v", err)
	}
	for i, id := range ids {
		if errs[i] == nil {
			r.track(id, false, c)
		}
	}
	r.mu.Lock()
	r.rep.Nemesis.DuplicateStarts++
	r.mu.Unlock()
}

// serveStaleAPI serves a second user-facing API over the same regions
// whose resolvers keep routing documents for staleTTL, far past the
// convergence delay the orchestrator waits: a stale service instance. It
// returns its base URL and a function that stops it.
func (r *run) serveStaleAPI() (string, func(), error) {
	cfg := r.sys.Config
	rs, err := system.NewResolvers(cfg, r.sys.Routing, r.sys.JS, []time.Duration{staleTTL}, "stale")
	if err != nil {
		return "", nil, err
	}
	h, err := system.NewAPI(cfg, r.sys.Regions, rs, r.sys.Locker, nil)
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
		h.Close()
	}, nil
}

// heal ends every fault: links open, every node running, no armed pause,
// at least o.Workers workers.
func (r *run) heal(ctx context.Context) error {
	if err := r.topo.healAll(ctx); err != nil {
		return err
	}
	r.mu.Lock()
	n := len(r.mu.workers)
	clear(r.mu.armed)
	r.mu.Unlock()
	for ; n < r.o.Workers; n++ {
		if err := r.startWorker(); err != nil {
			return err
		}
	}
	return nil
}

//go:build ignore

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cutover/cutover/bench"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/projector"
	"github.com/cutover/cutover/services/client"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/fx"
)

// benchEnvOptions configures one in-process deployment for a bench suite.
// Everything runs with the durable default: one embedded JetStream node
// with sync_interval always, Pebble fsync per commit (bench.DurableSingle).
type benchEnvOptions struct {
	// Fencing is the fencing strategy (bench.FencePolicy; "": the protocol).
	Fencing string
	// NoHolderCache runs the workers without the holder's cached document
	// (orchestrator.WithoutHolderCache).
	NoHolderCache bool
	// Tiers, ReplicationBound and ConvergenceBuffer set the convergence
	// delay (zero: the dev defaults of systemConfig).
	Tiers             []time.Duration
	ReplicationBound  time.Duration
	ConvergenceBuffer time.Duration
	Workers           int
	Parallel          int
	// BackgroundSteps is the orchestrator's bound on concurrent steps
	// outside Phase 3 per worker (0: its default).
	BackgroundSteps int
	// PageLimit is the export page size (0: the contract's default).
	PageLimit int
	// LazyFsync runs the embedded JetStream server with its default
	// background fsync instead of sync always (Pebble keeps fsync per
	// commit): bench.LazyJetStream.
	LazyFsync bool
	// Cluster runs an embedded cluster of this many nodes (streams and the
	// routing bucket R3) instead of one node: bench.DurableR3.
	Cluster int
}

// benchEnv is a running deployment: the API, the orchestrator, the routing
// store, the regions.
type benchEnv struct {
	app            *fx.App
	dir            string
	api            string
	orch           *orchestrator.Client
	proj           *projector.Projector
	lk             *kvrouting.Locker
	regions        regionMap
	source, target string
	cfg            *systemConfig
	js             jetstream.JetStream
	srv            *cnats.Server
}

func startBenchEnv(ctx context.Context, o benchEnvOptions, stdout io.Writer) (*benchEnv, error) {
	dir, err := os.MkdirTemp("", "cutover-bench-")
	if err != nil {
		return nil, err
	}
	cfg := &systemConfig{DataDir: dir, HTTPAddr: "127.0.0.1:0", Cluster: max(1, o.Cluster), Workers: o.Workers,
		Tiers: o.Tiers, ReplicationBound: o.ReplicationBound}
	var srv *cnats.Server
	if o.LazyFsync {
		lazy := false
		srv, err = cnats.StartServer(cnats.Options{StoreDir: dir + "/nats", SyncAlways: &lazy})
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		cfg.NATSURL = srv.ClientURL()
	}
	fail := func(err error) (*benchEnv, error) {
		if srv != nil {
			srv.Shutdown()
		}
		os.RemoveAll(dir)
		return nil, err
	}
	policy, err := bench.FencePolicy(o.Fencing)
	if err != nil {
		return fail(err)
	}
	cfg.WorkerOptions = []orchestrator.WorkerOption{orchestrator.WithFencePolicy(policy)}
	if o.NoHolderCache {
		cfg.WorkerOptions = append(cfg.WorkerOptions, orchestrator.WithoutHolderCache())
	}
	cfg.Orchestrator.CleanupWindow = 10 * time.Minute
	cfg.Orchestrator.ConvergenceBuffer = o.ConvergenceBuffer
	cfg.Orchestrator.Parallel = o.Parallel
	cfg.Orchestrator.BackgroundSteps = o.BackgroundSteps
	cfg.Orchestrator.PageLimit = o.PageLimit
	if err := cfg.ensureDefaults(); err != nil {
		return fail(err)
	}
	e := &benchEnv{dir: dir, cfg: cfg, source: cfg.Regions[0], target: cfg.Regions[1], srv: srv}
	var hs *httpServer
	e.app = newApp(stdout, systemModule(cfg), apiModule(), orchestratorModule(), metricsModule(false),
		fx.Populate(&hs, &e.orch, &e.proj, &e.lk, &e.regions, &e.js))
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := e.app.Start(sctx); err != nil {
		return fail(err)
	}
	e.api = "http://" + hs.addr
	return e, nil
}

func (e *benchEnv) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_ = e.app.Stop(ctx)
	if e.srv != nil {
		e.srv.Shutdown()
	}
	_ = os.RemoveAll(e.dir)
}

// sizeClass is one class of the paper's size mix (paper 001 §6.3).
type sizeClass struct {
	Name     string
	Messages int
	Share    float64
}

// paperMix is 54 % ~10 messages, 39 % ~80, 7 % ~4,000 (big is the last).
func paperMix(big int) []sizeClass {
	return []sizeClass{{"10", 10, 0.54}, {"80", 80, 0.39}, {fmt.Sprint(big), big, 0.07}}
}

// benchConv is one seeded conversation.
type benchConv struct {
	ID    string
	Class string
	Size  int
}

// mixConvs assigns n conversations to the classes of mix, at least one per
// class when n >= len(mix), shuffled by seed.
func mixConvs(prefix string, n int, mix []sizeClass, seed uint64) []benchConv {
	var out []benchConv
	left := n
	for i, c := range mix {
		k := int(c.Share*float64(n) + 0.5)
		if i == len(mix)-1 {
			k = left
		}
		// Leave one for each class still to come.
		k = max(0, min(max(k, 1), left-(len(mix)-1-i)))
		for range k {
			out = append(out, benchConv{Class: c.Name, Size: c.Messages})
		}
		left -= k
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	for i := range out {
		out[i].ID = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return out
}

// seed creates the conversations and posts their messages through the SDK.
func (e *benchEnv) seed(ctx context.Context, convs []benchConv, users []string, progress func(string)) error {
	c, err := client.New(e.api, "user:seed", client.WithWorkers(32))
	if err != nil {
		return err
	}
	defer c.Close()
	for _, cv := range convs {
		if _, err := c.CreateConversation(ctx, client.NewConversation{ID: cv.ID, Title: cv.ID, Members: users}); err != nil {
			return fmt.Errorf("seed %s: %w", cv.ID, err)
		}
	}
	var pend []*client.Pending
	var done atomic.Int64
	for _, cv := range convs {
		for k := 0; k < cv.Size; k += 50 {
			lo, hi, conv := k, min(cv.Size, k+50), cv.ID
			pend = append(pend, c.Enqueue(func(ctx context.Context) error {
				for j := lo; j < hi; j++ {
					if _, err := c.PostMessage(ctx, conv, client.NewMessage{ID: fmt.Sprintf("s%05d", j), Text: fmt.Sprintf("seed message %d of %s", j, conv)}); err != nil {
						return err
					}
					if v := done.Add(1); v%5000 == 0 && progress != nil {
						progress(fmt.Sprintf("seeded %d messages", v))
					}
				}
				return nil
			}))
		}
	}
	for _, p := range pend {
		if err := p.Wait(ctx); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	return nil
}

// traffic is live user traffic through the SDK: posts, edits, deletes and
// reads on random conversations until stop.
type traffic struct {
	stop     context.CancelFunc
	wg       sync.WaitGroup
	clients  []*client.Client
	attempts atomic.Int64
	failed   atomic.Int64
}

func (e *benchEnv) startTraffic(ctx context.Context, convs []benchConv, users []string, seed uint64) (*traffic, error) {
	tctx, stop := context.WithCancel(ctx)
	t := &traffic{stop: stop}
	for ui, u := range users {
		c, err := client.New(e.api, "user:"+u)
		if err != nil {
			stop()
			return nil, err
		}
		t.clients = append(t.clients, c)
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(ui)+100))
			own := map[string][]string{}
			n := 0
			for tctx.Err() == nil {
				conv := convs[r.IntN(len(convs))].ID
				x := r.IntN(100)
				var err error
				switch {
				case x < 40:
					n++
					id := fmt.Sprintf("%s-%06d", u, n)
					t.attempts.Add(1)
					if _, err = c.PostMessage(tctx, conv, client.NewMessage{ID: id, Text: "live " + id}); err == nil {
						own[conv] = append(own[conv], id)
					}
				case x < 55 && len(own[conv]) > 0:
					t.attempts.Add(1)
					_, err = c.EditMessage(tctx, conv, own[conv][r.IntN(len(own[conv]))], fmt.Sprintf("edited %d", r.IntN(1e6)))
				case x < 65 && len(own[conv]) > 0:
					i := r.IntN(len(own[conv]))
					t.attempts.Add(1)
					if _, err = c.DeleteMessage(tctx, conv, own[conv][i]); err == nil {
						own[conv] = slices.Delete(own[conv], i, i+1)
					}
				default:
					_, err = c.ListMessages(tctx, conv, client.ListOptions{Limit: 20})
				}
				if err != nil && tctx.Err() == nil && !errors.Is(err, client.ErrUnrecovered) {
					t.failed.Add(1)
				}
				time.Sleep(time.Duration(2+r.IntN(6)) * time.Millisecond)
			}
		}()
	}
	return t, nil
}

// clientFence is what the users felt: 423s and the delay they added.
type clientFence struct {
	Writes      int64   `json:"writes_attempted"`
	Rejected423 int64   `json:"rejected_423"`
	Fenced      int64   `json:"fenced_ops"`
	Unrecovered int64   `json:"unrecovered"`
	OtherFailed int64   `json:"failed_other"`
	AvgDelayMs  float64 `json:"avg_fence_delay_ms"`
	MaxDelayMs  float64 `json:"max_fence_delay_ms"`
}

// finish stops the traffic and sums the clients' counters.
func (t *traffic) finish() clientFence {
	t.stop()
	t.wg.Wait()
	var f clientFence
	var sum time.Duration
	for _, c := range t.clients {
		st := c.Stats()
		f.Rejected423 += st.Rejected423
		f.Fenced += st.Fenced
		f.Unrecovered += st.Unrecovered
		sum += st.FenceDelaySum
		f.MaxDelayMs = max(f.MaxDelayMs, float64(st.FenceDelayMax.Microseconds())/1000)
		_ = c.Close()
	}
	f.Writes, f.OtherFailed = t.attempts.Load(), t.failed.Load()
	if f.Fenced > 0 {
		f.AvgDelayMs = float64(sum.Microseconds()) / 1000 / float64(f.Fenced)
	}
	return f
}

// migrated is one finished child migration of a tenant move.
type migrated struct {
	conv  benchConv
	state *events.State
}

// moveAll migrates every conversation to the target as one tenant move and
// returns the children's final states and the move's wall time.
func (e *benchEnv) moveAll(ctx context.Context, tenant string, convs []benchConv, concurrency int, progress func(string)) ([]migrated, time.Duration, error) {
	resources := make([]string, len(convs))
	byRes := map[string]benchConv{}
	for i, c := range convs {
		resources[i] = "conv/" + c.ID
		byRes[resources[i]] = c
	}
	start := time.Now()
	tid, err := e.orch.StartTenant(ctx, events.StartTenant{Tenant: tenant, Target: e.target, Resources: resources, Concurrency: concurrency})
	if err != nil {
		return nil, 0, err
	}
	last := -1
	for {
		st, _, err := e.orch.State(ctx, tid)
		if err == nil && st.Status.Terminal() {
			break
		}
		if tv, ok := e.proj.Tenant(tid); ok && progress != nil && tv.Completed+tv.Failed+tv.Dropped != last {
			last = tv.Completed + tv.Failed + tv.Dropped
			progress(fmt.Sprintf("migrated %d/%d (active %d, failed %d) %.1f s", tv.Completed, tv.Total, tv.Active, tv.Failed, time.Since(start).Seconds()))
		}
		if time.Since(start) > 15*time.Minute {
			return nil, 0, errors.New("tenant move did not finish in 15 minutes")
		}
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	wall := time.Since(start)
	var out []migrated
	for _, v := range e.proj.Snapshot().Migrations {
		if v.Tenant != tenant || v.ID == tid || v.Phase == events.PhaseTenant {
			continue
		}
		st, _, err := e.orch.State(ctx, v.ID)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, migrated{conv: byRes[st.Resource], state: st})
	}
	return out, wall, nil
}

func msBetween(a, b time.Time) float64 {
	if a.IsZero() || b.IsZero() {
		return 0
	}
	return float64(b.Sub(a).Microseconds()) / 1000
}

// moveDirect starts one migration per conversation at once (no tenant
// fan-out: the workers' Parallel limit is the only throttle) and returns
// their final states and the wall time until the last one ended.
func (e *benchEnv) moveDirect(ctx context.Context, convs []benchConv, progress func(string)) ([]migrated, time.Duration, error) {
	start := time.Now()
	ids := map[string]benchConv{}
	for _, c := range convs {
		id, err := e.orch.Start(ctx, events.Start{Resource: "conv/" + c.ID, Target: e.target})
		if err != nil {
			return nil, 0, err
		}
		ids[id] = c
	}
	last := -1
	for {
		ended := 0
		for _, v := range e.proj.Snapshot().Migrations {
			if _, ok := ids[v.ID]; ok && v.Status.Terminal() {
				ended++
			}
		}
		if ended == len(ids) {
			break
		}
		if progress != nil && ended/50 != last {
			last = ended / 50
			progress(fmt.Sprintf("migrated %d/%d %.1f s", ended, len(ids), time.Since(start).Seconds()))
		}
		if time.Since(start) > 15*time.Minute {
			return nil, 0, errors.New("migrations did not finish in 15 minutes")
		}
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	wall := time.Since(start)
	out := make([]migrated, 0, len(ids))
	for id, c := range ids {
		st, _, err := e.orch.State(ctx, id)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, migrated{conv: c, state: st})
	}
	return out, wall, nil
}

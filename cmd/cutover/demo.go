package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/projector"
	"github.com/cutover/cutover/services/chat"
	"github.com/cutover/cutover/services/client"
	"github.com/cutover/cutover/services/store"
	"go.uber.org/fx"
)

func init() {
	register("demo", "migrate a realistic chat workload between regions under live traffic, then check nothing was lost", runDemo)
}

// demoOptions are the demo's flags.
type demoOptions struct {
	conversations int
	cluster       int
	clients       int
	concurrency   int
	seed          uint64
	jsonFile      string
	bigSize       int
}

// runDemo is the main job (`make demo`): everything embedded, a seeded
// workload with the paper's size mix (paper 001 §6.3), live user traffic
// through the client SDK for the whole run, every conversation migrated to
// another region as one tenant move, a report shaped like paper 001 Table 6,
// and an invariant check that uses only what the clients saw acknowledged
// and what the stores hold — never the engine's own opinion.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "demo [--conversations N] [--cluster 1|3] [--clients N] [--json FILE]", stdout)
	var o demoOptions
	fs.IntVar(&o.conversations, "conversations", 200, "conversations to seed and migrate (54% ~10 messages, 39% ~80, 7% ~4,000)")
	fs.IntVar(&o.cluster, "cluster", 1, "embedded JetStream nodes: 1, or 3 for an R3 cluster")
	fs.IntVar(&o.clients, "clients", 6, "concurrent users driving live traffic")
	fs.IntVar(&o.concurrency, "concurrency", 16, "migrations in flight (tenant fan-out limit)")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed")
	fs.StringVar(&o.jsonFile, "json", "", "also write the report as JSON to this file")
	fs.IntVar(&o.bigSize, "big", 4000, "messages in a large (channel) conversation")
	if err := parse(fs, args); err != nil {
		return err
	}
	if o.conversations < 1 || o.clients < 1 || o.concurrency < 1 || o.bigSize < 1 || (o.cluster != 1 && o.cluster != 3) {
		return fmt.Errorf("%w: --conversations, --clients, --concurrency, --big must be >= 1 and --cluster 1 or 3", errUsage)
	}
	rep, err := demo(ctx, o, stdout, stderr)
	if err != nil {
		return err
	}
	rep.print(stdout)
	if o.jsonFile != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(o.jsonFile, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if bad := rep.failures(); len(bad) > 0 {
		return fmt.Errorf("invariants violated: %v", bad)
	}
	return nil
}

// --- the report ---

type pct struct {
	Avg float64 `json:"avg"`
	P50 float64 `json:"p50"`
	P75 float64 `json:"p75"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func percentiles(v []float64) pct {
	if len(v) == 0 {
		return pct{}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	q := func(p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return pct{Avg: sum / float64(len(s)), P50: q(0.50), P75: q(0.75), P99: q(0.99), Max: s[len(s)-1]}
}

type demoReport struct {
	Setup struct {
		Conversations int     `json:"conversations"`
		Messages      int     `json:"messages_seeded"`
		Cluster       int     `json:"nats_nodes"`
		Durability    string  `json:"durability"`
		Source        string  `json:"source"`
		Target        string  `json:"target"`
		DurationS     float64 `json:"duration_s"`
	} `json:"setup"`
	Migrations struct {
		Total        int `json:"total"`
		Completed    int `json:"completed"`
		FirstAttempt int `json:"first_attempt"`
		RolledBack   int `json:"rolled_back"`
		Failed       int `json:"failed"`
	} `json:"migrations"`
	PhasesMs struct {
		PreLock        pct `json:"pre_lock"`
		HistoricalCopy pct `json:"historical_copy"`
		WriteLock      pct `json:"write_lock"`
		Cutover        pct `json:"cutover"`
		Total          pct `json:"total"`
	} `json:"phases_ms"`
	Writes struct {
		Attempted    int64   `json:"attempted"`
		Acknowledged int64   `json:"acknowledged"`
		Rejected423  int64   `json:"rejected_423"`
		Recovered    int64   `json:"recovered"`
		Unrecovered  int64   `json:"unrecovered"`
		Failed       int64   `json:"failed_other"`
		MaxFenceMs   float64 `json:"max_client_fence_ms"`
		Reads        int64   `json:"reads"`
	} `json:"writes"`
	Validation struct {
		Runs     int `json:"runs"`
		Failures int `json:"failures"`
	} `json:"validation"`
	Invariants struct {
		LostWrites          int      `json:"lost_writes"`
		Resurrected         int      `json:"resurrected"`
		DualAuthorityWrites int      `json:"dual_authority_writes"`
		PartialCutovers     int      `json:"partial_cutovers"`
		OrphanedLocks       int      `json:"orphaned_locks"`
		NotAtTarget         int      `json:"not_at_target"`
		MaxWriteFenceMs     float64  `json:"max_write_fence_ms"`
		WriteLockExpiryMs   float64  `json:"write_lock_expiry_ms"`
		Unacknowledged      int      `json:"unacknowledged_present"`
		Uncertain           int      `json:"unacknowledged_applied"`
		Samples             []string `json:"samples,omitempty"`
	} `json:"invariants"`
}

func (r *demoReport) failures() []string {
	inv := r.Invariants
	var bad []string
	add := func(n int, what string) {
		if n != 0 {
			bad = append(bad, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(inv.LostWrites, "lost writes")
	add(inv.Resurrected, "resurrected deletes")
	add(inv.DualAuthorityWrites, "writes at a non-authoritative location")
	add(inv.PartialCutovers, "partial cutovers")
	add(inv.OrphanedLocks, "orphaned locks")
	add(inv.NotAtTarget, "conversations not at the target")
	add(r.Migrations.Total-r.Migrations.Completed, "migrations not completed")
	add(int(r.Writes.Unrecovered), "unrecovered 423s")
	if inv.MaxWriteFenceMs > inv.WriteLockExpiryMs {
		bad = append(bad, fmt.Sprintf("write fence %.0f ms beyond its expiry %.0f ms", inv.MaxWriteFenceMs, inv.WriteLockExpiryMs))
	}
	return bad
}

func (r *demoReport) print(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	s := r.Setup
	p("\n== cutover demo: %d conversations (%d messages) %s → %s, %d NATS node(s), %s, %.1f s", s.Conversations, s.Messages, s.Source, s.Target, s.Cluster, s.Durability, s.DurationS)
	m := r.Migrations
	p("migrations: %d total, %d completed, %d first attempt (%.1f%%), %d rolled back, %d failed", m.Total, m.Completed, m.FirstAttempt, 100*float64(m.FirstAttempt)/float64(max(1, m.Total)), m.RolledBack, m.Failed)
	p("\nper-phase durations (paper 001 Table 6 shape), milliseconds")
	p("  %-22s %9s %9s %9s %9s %9s", "metric", "avg", "p50", "p75", "p99", "max")
	row := func(name string, q pct) {
		p("  %-22s %9.1f %9.1f %9.1f %9.1f %9.1f", name, q.Avg, q.P50, q.P75, q.P99, q.Max)
	}
	row("Total duration", r.PhasesMs.Total)
	row("Phase 1 (pre-lock)", r.PhasesMs.PreLock)
	row("Phase 2 (hist. copy)", r.PhasesMs.HistoricalCopy)
	row("Phase 3 (write lock)", r.PhasesMs.WriteLock)
	row("Phase 4 (cutover)", r.PhasesMs.Cutover)
	wr := r.Writes
	p("\nlive traffic: %d writes attempted, %d acknowledged, %d reads; 423: %d rejected, %d writes recovered, %d unrecovered; %d other failures; longest client-felt fence %.0f ms",
		wr.Attempted, wr.Acknowledged, wr.Reads, wr.Rejected423, wr.Recovered, wr.Unrecovered, wr.Failed, wr.MaxFenceMs)
	p("validation: %d runs, %d failures", r.Validation.Runs, r.Validation.Failures)
	inv := r.Invariants
	p("\ninvariants (checked from acknowledged client operations and the stores, not the engine):")
	p("  lost acknowledged writes      %d", inv.LostWrites)
	p("  resurrected deletes           %d", inv.Resurrected)
	p("  writes at a non-authoritative location %d", inv.DualAuthorityWrites)
	p("  partial cutovers              %d", inv.PartialCutovers)
	p("  orphaned locks                %d", inv.OrphanedLocks)
	p("  conversations not at target   %d", inv.NotAtTarget)
	p("  longest write fence           %.0f ms (write-lock expiry %.0f ms)", inv.MaxWriteFenceMs, inv.WriteLockExpiryMs)
	p("  (writes whose reply never came, found applied: %d unknown posts, %d edits; allowed)", inv.Unacknowledged, inv.Uncertain)
	for _, x := range inv.Samples {
		p("    %s", x)
	}
	if bad := r.failures(); len(bad) == 0 {
		p("\nOK: every invariant holds")
	} else {
		p("\nFAIL: %v", bad)
	}
}

// --- the ledger of acknowledged operations ---

// msgState is a message's last acknowledged state, plus the outcomes of
// writes whose reply never came (cancelled in flight when the traffic
// stopped, or failed without a clear answer): those may or may not have
// committed, so the checker accepts them too, and only them.
type msgState struct {
	text         string
	deleted      bool
	maybe        []string
	maybeDeleted bool
}

type ledger struct {
	mu   sync.Mutex
	msgs map[string]map[string]*msgState // conversation → message id → last acknowledged state
}

// uncertain records a write to (conv, id) whose outcome is unknown.
func (l *ledger) uncertain(conv, id, text string, deleted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.msgs[conv]
	if m == nil {
		m = map[string]*msgState{}
		l.msgs[conv] = m
	}
	st := m[id]
	if st == nil {
		st = &msgState{deleted: true} // a post that may not have committed: absent is fine
		m[id] = st
	}
	if deleted {
		st.maybeDeleted = true
	} else {
		st.maybe = append(st.maybe, text)
	}
}

func (l *ledger) set(conv, id string, s msgState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.msgs[conv]
	if m == nil {
		m = map[string]*msgState{}
		l.msgs[conv] = m
	}
	m[id] = &s
}

func demo(ctx context.Context, o demoOptions, stdout, stderr io.Writer) (*demoReport, error) {
	start := time.Now()
	say := func(format string, a ...any) { fmt.Fprintf(stdout, format+"\n", a...) }
	cfg := &systemConfig{InMemory: false, HTTPAddr: "127.0.0.1:0", Cluster: o.cluster, Workers: 2}
	dir, err := os.MkdirTemp("", "cutover-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cfg.DataDir = dir
	cfg.Orchestrator.CleanupWindow = 10 * time.Minute // keep the source for the dual-authority check
	if err := cfg.ensureDefaults(); err != nil {
		return nil, err
	}
	source, target := cfg.Regions[0], cfg.Regions[1]
	var (
		hs      *httpServer
		orch    *orchestrator.Client
		proj    *projector.Projector
		lk      *kvrouting.Locker
		regions regionMap
		mets    *metrics
	)
	app := newApp(stdout, systemModule(cfg), apiModule(), orchestratorModule(), metricsModule(true), fx.Populate(&hs, &orch, &proj, &lk, &regions, &mets))
	startCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return nil, err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = app.Stop(stopCtx)
	}()
	api := "http://" + hs.addr
	say("cutover demo: embedded JetStream (%d node(s), sync always), regions %s and %s, API %s", o.cluster, source, target, api)

	rep := &demoReport{}
	rep.Setup.Conversations, rep.Setup.Cluster, rep.Setup.Source, rep.Setup.Target = o.conversations, o.cluster, source, target
	rep.Setup.Durability = "JetStream sync_interval always; Pebble fsync per commit"
	if o.cluster > 1 {
		rep.Setup.Durability = "JetStream R3, sync_interval always; Pebble fsync per commit"
	}
	rep.Invariants.WriteLockExpiryMs = float64(lk.Config().WriteLease.Milliseconds())

	// Seed: the paper's size mix (paper 001 §6.3: 54% ~10, 39% ~80, 7% ~4,000).
	users := make([]string, o.clients)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
	}
	rng := rand.New(rand.NewPCG(o.seed, 42))
	sizes := make([]int, o.conversations)
	nBig := int(0.07*float64(o.conversations) + 0.5)
	nMid := int(0.39*float64(o.conversations) + 0.5)
	for i := range sizes {
		base := 10
		switch {
		case i < nBig:
			base = o.bigSize
		case i < nBig+nMid:
			base = 80
		}
		sizes[i] = max(1, base*(80+rng.IntN(41))/100)
	}
	rng.Shuffle(len(sizes), func(i, j int) { sizes[i], sizes[j] = sizes[j], sizes[i] })
	led := &ledger{msgs: map[string]map[string]*msgState{}}
	convs := make([]string, o.conversations)
	seeder, err := client.New(api, "user:seed", client.WithWorkers(16))
	if err != nil {
		return nil, err
	}
	defer seeder.Close()
	for i := range convs {
		convs[i] = fmt.Sprintf("conv-%04d", i)
		if _, err := seeder.CreateConversation(ctx, client.NewConversation{ID: convs[i], Title: fmt.Sprintf("demo %d", i), Members: users}); err != nil {
			return nil, fmt.Errorf("seed: %w", err)
		}
	}
	total := 0
	for _, n := range sizes {
		total += n
	}
	rep.Setup.Messages = total
	say("seeding %d conversations with %d messages (%d large, %d medium, %d small)...", o.conversations, total, nBig, nMid, o.conversations-nBig-nMid)
	var seeded atomic.Int64
	var pend []*client.Pending
	for ci, n := range sizes {
		conv := convs[ci]
		for k := 0; k < n; k += 50 {
			lo, hi := k, min(n, k+50)
			pend = append(pend, seeder.Enqueue(func(ctx context.Context) error {
				for j := lo; j < hi; j++ {
					id, text := fmt.Sprintf("s%05d", j), fmt.Sprintf("seed message %d of %s", j, conv)
					if _, err := seeder.PostMessage(ctx, conv, client.NewMessage{ID: id, Text: text}); err != nil {
						return err
					}
					led.set(conv, id, msgState{text: text})
					if v := seeded.Add(1); v%5000 == 0 {
						fmt.Fprintf(stderr, "demo: seeded %d/%d messages\n", v, total)
					}
				}
				return nil
			}))
		}
	}
	for _, p := range pend {
		if err := p.Wait(ctx); err != nil {
			return nil, fmt.Errorf("seed: %w", err)
		}
	}
	say("seeded in %.1f s", time.Since(start).Seconds())

	// Live traffic through the SDK for the whole migration.
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	defer stopTraffic()
	var attempted, acked, failedOther, reads atomic.Int64
	var clients []*client.Client
	var twg sync.WaitGroup
	for ui, u := range users {
		c, err := client.New(api, "user:"+u)
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
		mets.WatchClient(u, c.Stats)
		twg.Add(1)
		go func(ui int, u string, c *client.Client) {
			defer twg.Done()
			r := rand.New(rand.NewPCG(o.seed, uint64(ui)+100))
			own := map[string][]string{} // conversation → this user's live messages
			n := 0
			for trafficCtx.Err() == nil {
				conv := convs[r.IntN(len(convs))]
				x := r.IntN(100)
				var err error
				write := true
				switch {
				case x < 40: // new write
					n++
					id, text := fmt.Sprintf("%s-%06d", u, n), fmt.Sprintf("live %d from %s", n, u)
					attempted.Add(1)
					if _, err = c.PostMessage(trafficCtx, conv, client.NewMessage{ID: id, Text: text}); err == nil {
						led.set(conv, id, msgState{text: text})
						own[conv] = append(own[conv], id)
					} else {
						led.uncertain(conv, id, text, false)
					}
				case x < 55 && len(own[conv]) > 0: // update
					id := own[conv][r.IntN(len(own[conv]))]
					text := fmt.Sprintf("edited %d by %s", r.IntN(1e6), u)
					attempted.Add(1)
					if _, err = c.EditMessage(trafficCtx, conv, id, text); err == nil {
						led.set(conv, id, msgState{text: text})
					} else {
						led.uncertain(conv, id, text, false)
					}
				case x < 65 && len(own[conv]) > 0: // delete
					i := r.IntN(len(own[conv]))
					id := own[conv][i]
					attempted.Add(1)
					if _, err = c.DeleteMessage(trafficCtx, conv, id); err == nil {
						led.set(conv, id, msgState{deleted: true})
						own[conv] = slices.Delete(own[conv], i, i+1)
					} else {
						led.uncertain(conv, id, "", true)
					}
				case x < 75: // reaction (a write, not tracked by the ledger)
					attempted.Add(1)
					err = c.React(trafficCtx, conv, "s00000", []string{"tada", "eyes", "rocket"}[r.IntN(3)])
				default: // read
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
				time.Sleep(time.Duration(2+r.IntN(6)) * time.Millisecond)
			}
		}(ui, u, c)
	}
	time.Sleep(500 * time.Millisecond)

	// The tenant move: every conversation to the target region.
	resources := make([]string, len(convs))
	for i, c := range convs {
		resources[i] = "conv/" + c
	}
	migStart := time.Now()
	tid, err := orch.StartTenant(ctx, events.StartTenant{Tenant: "demo-tenant", Target: target, Resources: resources, Concurrency: o.concurrency})
	if err != nil {
		return nil, err
	}
	say("tenant move %s: %d conversations %s → %s, %d in flight", tid, len(resources), source, target, o.concurrency)
	last := -1
	for {
		st, _, err := orch.State(ctx, tid)
		if err == nil && st.Status.Terminal() {
			break
		}
		if tv, ok := proj.Tenant(tid); ok && tv.Completed+tv.Failed+tv.Dropped != last {
			last = tv.Completed + tv.Failed + tv.Dropped
			fmt.Fprintf(stderr, "demo: migrated %d/%d (active %d, failed %d) %.1f s\n", tv.Completed, tv.Total, tv.Active, tv.Failed, time.Since(migStart).Seconds())
		}
		if time.Since(migStart) > 15*time.Minute {
			return nil, errors.New("tenant move did not finish in 15 minutes")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	say("tenant move finished in %.1f s", time.Since(migStart).Seconds())
	time.Sleep(500 * time.Millisecond) // traffic after the cutover lands at the target
	stopTraffic()
	twg.Wait()
	for _, c := range clients {
		st := c.Stats()
		rep.Writes.Rejected423 += st.Rejected423
		rep.Writes.Recovered += st.Recovered
		rep.Writes.Unrecovered += st.Unrecovered
		rep.Writes.MaxFenceMs = max(rep.Writes.MaxFenceMs, float64(st.FenceDelayMax.Microseconds())/1000)
		_ = c.Close()
	}
	rep.Writes.Attempted, rep.Writes.Acknowledged, rep.Writes.Failed, rep.Writes.Reads = attempted.Load(), acked.Load(), failedOther.Load(), reads.Load()

	if err := demoCheck(ctx, rep, orch, proj, lk, regions, seeder, led, convs, tid, source, target); err != nil {
		return nil, err
	}
	rep.Setup.DurationS = time.Since(start).Seconds()
	return rep, nil
}

// demoCheck fills the migration figures and the invariants.
func demoCheck(ctx context.Context, rep *demoReport, orch *orchestrator.Client, proj *projector.Projector, lk *kvrouting.Locker,
	regions regionMap, reader *client.Client, led *ledger, convs []string, tid, source, target string) error {
	// Migration figures, from the events (history of each conversation's migrations).
	snap := proj.Snapshot()
	var pre, hist, wl, cut, tot []float64
	swapAt := map[string]time.Time{}
	timeline := map[string][]string{}
	for _, v := range snap.Migrations {
		if v.Tenant == "" || v.Phase == events.PhaseTenant || v.ID == tid {
			continue
		}
		rep.Migrations.Total++
		switch v.Status {
		case events.StatusCompleted:
			rep.Migrations.Completed++
			if v.Attempt <= 1 {
				rep.Migrations.FirstAttempt++
			}
		case events.StatusFailed, events.StatusDropped:
			rep.Migrations.Failed++
		}
		if f := v.Figures; f != nil && v.Status == events.StatusCompleted {
			pre, hist, wl, cut, tot = append(pre, float64(f.PreLockMs)), append(hist, float64(f.HistoricalMs)), append(wl, float64(f.WriteLockMs)), append(cut, float64(f.CutoverMs)), append(tot, float64(f.TotalMs))
		}
		hs, err := orch.History(ctx, v.ID)
		if err != nil {
			return err
		}
		for _, e := range hs {
			var val *events.Validated
			switch b := e.Body.(type) {
			case events.Validated:
				val = &b
			case *events.Validated:
				val = b
			case events.Swapped: // a validation passed in the swap's step
				val = b.Validation
			}
			if val != nil {
				rep.Validation.Runs++
				if !val.OK {
					rep.Validation.Failures++
				}
			}
			timeline[v.Resource] = append(timeline[v.Resource], fmt.Sprintf("%s@%s", e.Type, e.Time.Format("15:04:05.000")))
			switch e.Type {
			case events.TypeRolledBack:
				rep.Migrations.RolledBack++
			case events.TypeSwapped:
				swapAt[v.Resource] = e.Time
			}
		}
	}
	rep.PhasesMs.PreLock, rep.PhasesMs.HistoricalCopy, rep.PhasesMs.WriteLock = percentiles(pre), percentiles(hist), percentiles(wl)
	rep.PhasesMs.Cutover, rep.PhasesMs.Total = percentiles(cut), percentiles(tot)
	rep.Invariants.MaxWriteFenceMs = rep.PhasesMs.WriteLock.Max

	inv := &rep.Invariants
	led.mu.Lock()
	defer led.mu.Unlock()
	for _, conv := range convs {
		res := kvrouting.Resource{Kind: chat.KindConversation, ID: conv}
		// Routing: at the target, unlocked, the old location a locked secondary.
		doc, err := lk.Get(ctx, res)
		if err != nil {
			return err
		}
		if doc.Primary.Region != target {
			inv.NotAtTarget++
		}
		if doc.Primary.Region == target && (!doc.Primary.Lock.IsZero() || doc.Secondary == nil || doc.Secondary.Region != source || doc.Secondary.Lock.Type != kvrouting.LockSecondary) {
			inv.PartialCutovers++
		}
		if doc.Primary.Region == source && doc.Primary.Lock.IsZero() && doc.Target != "" {
			inv.PartialCutovers++
		}
		if !doc.Primary.Lock.IsZero() {
			inv.OrphanedLocks++
		}
		// Every acknowledged write present with its last acknowledged
		// content; every acknowledged delete absent — read through the API
		// (which now routes to the target).
		seen := map[string]string{}
		for m, err := range reader.AllMessages(ctx, conv, client.ListOptions{Limit: 200}) {
			if err != nil {
				return fmt.Errorf("read %s: %w", conv, err)
			}
			seen[m.ID] = m.Text
		}
		for id, st := range led.msgs[conv] {
			text, ok := seen[id]
			switch {
			case !ok && (st.deleted || st.maybeDeleted):
			case ok && !st.deleted && text == st.text:
			case ok && slices.Contains(st.maybe, text):
				inv.Uncertain++
			case st.deleted && ok:
				inv.Resurrected++
				if len(inv.Samples) < 10 {
					inv.Samples = append(inv.Samples, fmt.Sprintf("resurrected %s/%s: %q", conv, id, text))
				}
			default:
				inv.LostWrites++
				if len(inv.Samples) < 10 {
					inv.Samples = append(inv.Samples, fmt.Sprintf("lost %s/%s: want %q, present=%v text %q; migration: %v", conv, id, st.text, ok, text, timeline[res.String()]))
				}
			}
		}
		for id := range seen {
			if _, ok := led.msgs[conv][id]; !ok {
				inv.Unacknowledged++
				if len(inv.Samples) < 10 {
					inv.Samples = append(inv.Samples, fmt.Sprintf("unacknowledged %s/%s: %q", conv, id, seen[id]))
				}
			}
		}
		// No write accepted at the old location after the swap: the source
		// stores hold no change stamped after the swap (imports keep their
		// source timestamps, so only user writes could).
		if at, ok := swapAt[res.String()]; ok {
			for _, p := range regions[source].ParticipantsFor(chat.KindConversation) {
				sp, ok := p.(interface {
					Store() *store.Store
				})
				if !ok {
					continue
				}
				recs, _, _, err := sp.Store().Changes(res.String(), 0, 0, 10_000)
				if err != nil {
					return err
				}
				for _, r := range recs {
					if r.UpdatedAt > at.UnixNano() || r.DeletedAt > at.UnixNano() {
						inv.DualAuthorityWrites++
					}
				}
			}
		}
	}
	return nil
}

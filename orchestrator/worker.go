package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/nats/natsclient"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/run"
)

// Durable consumer names shared by every worker.
const (
	CommandConsumer = "orchestrator-commands"
	WorkConsumer    = "orchestrator-work"
)

// Worker consumes commands and drives migrations. Many workers share the
// durable consumers; any worker resumes any migration. Run blocks; Close
// stops it. Safe for use by one Run caller and any Close callers.
type Worker struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	cfg  Config
	skew time.Duration
	log  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	// background holds a slot per running step of a migration not in
	// Phase 3 (Config.BackgroundSteps).
	background chan struct{}
	// fencing decides the source fences before Phase 3 (WithFencePolicy).
	fencing FencePolicy
	// holders is the holder's document cache (nil: WithoutHolderCache).
	holders *holderCache
	// chainSteps takes the steps of chained in the append of the step
	// before them (engine.go), where the event stream stages an atomic
	// batch in memory (batchesInMemory); set by Run before any step.
	chainSteps bool
	// served remembers when each (kind, region) last answered an admission
	// probe (admission.go): kind + "\x00" + region → time.Time.
	served sync.Map
	// timer is WithOpTimer's function (nil: none).
	timer func(op string, took time.Duration)
}

// NewWorker returns a worker; the streams must exist (Provision). opts are
// for `cutover bench` only (worker_options.go). Errors: ErrInvalid for a bad
// config or conflicting options.
func NewWorker(nc *nats.Conn, js jetstream.JetStream, cfg Config, opts ...WorkerOption) (*Worker, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o workerOptions
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: nil worker option", ErrInvalid)
		}
		if err := opt.configureWorker(&o); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Worker{nc: nc, js: js, cfg: cfg, skew: cfg.Locker.Config().ClockSkew, log: cfg.Logger,
		ctx: ctx, cancel: cancel, done: make(chan struct{}), background: make(chan struct{}, cfg.BackgroundSteps),
		fencing: o.fencing, holders: processHolders, timer: o.timer}
	if w.fencing == nil {
		w.fencing = ProtocolFencing()
	}
	if o.noHolderCache {
		w.holders = nil
	}
	return w, nil
}

// timed starts timing one operation of kind op (WithOpTimer); calling
// what it returns ends it. Without a timer both cost nothing.
func (w *Worker) timed(op string) func() {
	if w.timer == nil {
		return func() {}
	}
	start := time.Now()
	return func() { w.timer(op, time.Since(start)) }
}

// Done is closed when Run has returned.
func (w *Worker) Done() <-chan struct{} { return w.done }

// Close stops the worker and waits for Run to return. In-flight work is
// negatively acknowledged so another worker takes it at once.
func (w *Worker) Close() error {
	w.cancel()
	w.once.Do(func() { close(w.done) }) // Run never started: nothing to wait for
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("orchestrator: worker did not stop within 10s")
	}
	return nil
}

// Run consumes commands and work until ctx ends or Close is called. The
// command consumer and the work consumer are oklog/run actors: the first to
// fail stops the other. It returns nil on a clean stop.
func (w *Worker) Run(ctx context.Context) error {
	started := false
	w.once.Do(func() { started = true })
	if !started {
		return ErrClosed
	}
	defer close(w.done)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-w.ctx.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	// Creating the consumers is idempotent and is retried while the
	// answer is "not yet" (a cluster restarting after a crash); any other
	// error stops the worker, and its process (internal/system).
	var cmds, work jetstream.Consumer
	err := natsclient.RetryIdempotent(ctx, func(ctx context.Context) (err error) {
		cmds, err = w.js.CreateOrUpdateConsumer(ctx, events.CommandStream, jetstream.ConsumerConfig{
			Durable: CommandConsumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: w.cfg.AckWait, MaxDeliver: -1,
		})
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil // closed while starting
		}
		return fmt.Errorf("orchestrator: command consumer: %w", err)
	}
	err = natsclient.RetryIdempotent(ctx, func(ctx context.Context) (err error) {
		work, err = w.js.CreateOrUpdateConsumer(ctx, events.WorkStream, jetstream.ConsumerConfig{
			Durable: WorkConsumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: w.cfg.AckWait, MaxDeliver: -1,
			MaxAckPending: 100_000,
		})
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("orchestrator: work consumer: %w", err)
	}
	if s, err := w.js.Stream(ctx, events.EventStream); err == nil {
		w.chainSteps = batchesInMemory(s.CachedInfo().Config)
	}
	var g run.Group
	g.Add(w.consumeActor(ctx, cmds, w.handleCommand), func(error) { cancel() })
	g.Add(w.consumeActor(ctx, work, w.drive), func(error) { cancel() })
	err = g.Run()
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return nil
	}
	return err
}

// consumeActor consumes c, handling up to Parallel messages at once, until
// ctx ends.
func (w *Worker) consumeActor(ctx context.Context, c jetstream.Consumer, handle func(context.Context, jetstream.Msg)) func() error {
	return func() error {
		sem := make(chan struct{}, w.cfg.Parallel)
		var wg sync.WaitGroup
		cc, err := c.Consume(func(m jetstream.Msg) {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				_ = m.Nak()
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				handle(ctx, m)
			}()
		}, jetstream.PullMaxMessages(w.cfg.Parallel))
		if err != nil {
			return err
		}
		<-ctx.Done()
		cc.Stop()
		wg.Wait()
		return ctx.Err()
	}
}

// handleCommand applies one command. Commands are acknowledged once their
// effect is durable; a redelivered command is deduplicated by Msg-Id and by
// the expected-sequence append.
func (w *Worker) handleCommand(ctx context.Context, m jetstream.Msg) {
	env, err := events.Decode(m.Data())
	if err != nil {
		w.log.Warn("dropping undecodable command", "subject", m.Subject(), "err", err)
		_ = m.Term()
		return
	}
	sctx, cancel := context.WithTimeout(ctx, w.cfg.StepTimeout)
	defer cancel()
	switch b := env.Body.(type) {
	case events.Start:
		err = w.start(sctx, env, b)
	case events.StartTenant:
		err = w.startTenant(sctx, env, b)
	case events.Cancel:
		err = w.mutateState(sctx, b.MigrationID, env.ID, events.CancelRequested{Reason: b.Reason})
		if errors.Is(err, ErrNotFound) {
			err = nil
		}
	case events.Pause:
		err = w.steer(sctx, b.MigrationID, env.ID, pauseBody(b))
	case events.Resume:
		err = w.steer(sctx, b.MigrationID, env.ID, resumeBody(b))
	case events.Throttle:
		err = w.steer(sctx, b.MigrationID, env.ID, throttleBody(b))
	case events.ForceRelease:
		err = w.forceRelease(sctx, env, b)
	case events.FenceClear:
		err = w.clearFence(sctx, env, b)
	default:
		err = fmt.Errorf("%w: %s is not a command", ErrInvalid, env.Type)
	}
	switch {
	case err == nil:
		_ = m.Ack()
	case errors.Is(err, ErrInvalid):
		w.log.Warn("dropping invalid command", "type", env.Type, "err", err)
		_ = m.Term()
	case ctx.Err() != nil:
		_ = m.Nak()
	default:
		w.log.Warn("command failed; will retry", "type", env.Type, "err", err)
		_ = m.NakWithDelay(w.cfg.RetryBackoff)
	}
}

// start creates a migration: Requested (with the freshly generated token,
// persisted BEFORE any lock is attempted) then its work message; or, when
// nothing serves the target (admission.go), Requested and Failed at once.
func (w *Worker) start(ctx context.Context, env *events.Envelope, b events.Start) error {
	res, err := kvrouting.ParseResource(b.Resource)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	id := b.MigrationID
	if id == "" {
		id = startID(env.ID, b)
	}
	if !events.ValidID(id) || b.Target == "" {
		return fmt.Errorf("%w: migration id %q, target %q", ErrInvalid, id, b.Target)
	}
	attempt := max(b.Attempt, 1)
	body := events.Requested{Resource: b.Resource, Target: b.Target, Parent: b.Parent, Tenant: b.Tenant,
		Attempt: attempt, MaxAttempts: max(w.cfg.MaxAttempts, attempt), Token: string(kvrouting.NewToken()),
		MaxWriteBlock: max(b.MaxWriteBlock, 0), Rate: max(b.Rate, 0)}
	// The resource index first: a migration is never missing from it (an
	// entry whose migration was never created is skipped by readers).
	if err := index(ctx, w.js, res, id); err != nil {
		return err
	}
	if reason := w.unserved(ctx, res.Kind, b.Target); reason != "" {
		return w.refuse(ctx, id, env.ID, body, reason)
	}
	return w.create(ctx, id, env.ID, body)
}

// create appends the first event of an aggregate (expected last subject
// sequence 0) and publishes its work message. An aggregate that already
// exists is not an error: its work message is (re)published, which is
// harmless (a duplicate driver loses every append race).
func (w *Worker) create(ctx context.Context, id, cause string, body events.Body) error {
	_, _, err := appendTo(ctx, w.js, id, nil, 0, body, cause, w.cfg.Clock(), id+"-created")
	if err != nil && !errors.Is(err, ErrConflict) {
		return err
	}
	msg := nats.NewMsg(events.WorkSubject(id))
	msg.Data = []byte(id)
	_, err = publishRetry(ctx, w.js, msg, jetstream.WithMsgID(id+"-work"))
	return err
}

// mutateState appends body to a migration on behalf of a command,
// re-reading and retrying when a worker advances it concurrently.
func (w *Worker) mutateState(ctx context.Context, id, cause string, body events.Body) error {
	return w.mutate(ctx, id, cause, func(*events.State) events.Body { return body })
}

// mutate appends the event decide returns for a migration's current state
// (none: nil) on behalf of cause, re-reading and retrying when a worker
// advances it concurrently; a migration that ended is left as it is. The
// migration is then nudged: its own work message may be parked on a long
// timer (a second driver is harmless: it loses every append race).
func (w *Worker) mutate(ctx context.Context, id, cause string, decide func(*events.State) events.Body) error {
	for {
		st, seq, err := Load(ctx, w.nc, id)
		if err != nil {
			return err
		}
		if st.Status.Terminal() {
			return nil
		}
		body := decide(st)
		if body == nil {
			return nil
		}
		_, aseq, err := appendEvent(ctx, w.js, st, seq, body, cause, w.cfg.Clock())
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return err
		}
		msg := nats.NewMsg(events.WorkSubject(id))
		msg.Data = []byte(id)
		_, err = publishRetry(ctx, w.js, msg, jetstream.WithMsgID(fmt.Sprintf("%s-nudge-%d", id, aseq)))
		return err
	}
}

// index records aggregate id (a migration, or an audit) under res in the
// resource index (events.IndexSubject; Client.MigrationsOf). Idempotent.
func index(ctx context.Context, js jetstream.JetStream, res kvrouting.Resource, id string) error {
	m := nats.NewMsg(events.IndexSubject(res.Key(), id))
	m.Data = []byte(id)
	_, err := publishRetry(ctx, js, m, jetstream.WithMsgID(id+"-idx"))
	return err
}

package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/nats-io/nats.go/jetstream"
)

// outcome is what one step decided.
type outcome struct {
	// body is the event to append (nil: none).
	body events.Body
	// then are more events of the same step, after body in order (one
	// fact each: a tenant step records every child that ended and every
	// child it started); body and then are ONE atomic append, all of them
	// or none, conditioned on the sequence the step read.
	then []events.Body
	// wait, when positive, re-arms the durable timer: the work message is
	// negatively acknowledged with this delay (never an in-memory sleep).
	wait time.Duration
	// ack ends the work: the migration needs no more steps.
	ack bool
	// alongside is the rest of the step's work that its events do not
	// record and need not wait for (the escalation's fenced first delta
	// pages): the engine runs it while it appends the events, and waits
	// for both before the hooks see the events and before the next step.
	// Its effects are idempotent, as every step's, and the next step does
	// them again when they were lost.
	alongside func(ctx context.Context)
}

func waitFor(d time.Duration) outcome { return outcome{wait: max(d, time.Millisecond)} }

// drive advances one migration as far as it can go: read the last event
// (state + sequence), take the next step, append its event conditioned on
// that sequence, repeat; until a wait (NakWithDelay) or the end (Ack).
// After its own append the worker goes on from the state and sequence it
// just wrote (the append was conditional on the sequence it read, so they
// are the current ones unless another worker advanced the migration since,
// which the next conditional append detects): one read per delivery, not
// one per step.
func (w *Worker) drive(ctx context.Context, m jetstream.Msg) {
	id, ok := events.MigrationIDFromSubject(m.Subject())
	if !ok {
		_ = m.Term()
		return
	}
	var (
		st  *events.State
		seq uint64
	)
	for {
		if ctx.Err() != nil {
			_ = m.Nak()
			return
		}
		next, nseq, stop := w.driveOnce(ctx, m, id, st, seq)
		if stop {
			return
		}
		if next != nil {
			_ = m.InProgress()
		}
		st, seq = next, nseq
	}
}

// driveOnce performs one step from st at seq (nil: load them first). stop
// reports that the message was settled (or the worker crashed on purpose);
// otherwise next is the state after the appended event and nseq its
// sequence, or nil when the next step must load again.
func (w *Worker) driveOnce(ctx context.Context, m jetstream.Msg, id string, st *events.State, seq uint64) (next *events.State, nseq uint64, stop bool) {
	sctx, cancel := context.WithTimeout(ctx, w.cfg.StepTimeout)
	defer cancel()
	if st == nil {
		var err error
		st, seq, err = Load(sctx, w.nc, id)
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalid) {
			_ = m.Ack() // a work message without a migration: nothing to drive
			return nil, 0, true
		}
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("load failed", "migration", id, "err", err)
			}
			_ = m.NakWithDelay(w.cfg.RetryBackoff)
			return nil, 0, true
		}
	}
	now := w.cfg.Clock()
	d := w.decide(st, now)
	if queues(d, st, now) {
		// Phase 3 first: other steps with work to do take a background
		// slot, so a write-locked migration's appends never queue behind
		// more than BackgroundSteps of them (the write fence users feel).
		release, ok := w.takeBackground(ctx)
		if !ok {
			_ = m.Nak()
			return nil, 0, true
		}
		defer release()
		now = w.cfg.Clock()
		d = w.decide(st, now)
	}
	out, steps := w.chain(ctx, st, w.stepAt(sctx, st, now, d))
	var bodies []events.Body
	for _, t := range steps {
		bodies = append(bodies, t.bodies...)
	}
	// The step's work alongside its append (one synced write less in
	// front of what follows: the escalation's fenced exports and its
	// WriteLocked append overlap inside the write-blocked window).
	var beside sync.WaitGroup
	if out.alongside != nil {
		lctx, lcancel := context.WithTimeout(ctx, w.cfg.StepTimeout)
		beside.Go(func() { defer lcancel(); out.alongside(lctx) })
	}
	defer beside.Wait() // also on every return below: nothing outlives the step
	if len(bodies) > 0 {
		if hook := w.cfg.BeforeAppend; hook != nil {
			for _, t := range steps {
				for _, b := range t.bodies { // with the state its step was decided on
					if hook(t.st, b) != nil {
						return nil, 0, true // simulated crash: the side effects happened, their events are lost
					}
				}
			}
		}
		// A fresh context: a step that timed out must still record its
		// failure (it counts toward the phase's retry limit). The step's
		// events are one atomic append: all of them or none.
		actx, acancel := context.WithTimeout(ctx, w.cfg.StepTimeout)
		timed := w.timed(OpEventAppend)
		envs, aseq, err := appendEvents(actx, w.js, st, seq, bodies, w.cfg.Clock())
		timed()
		acancel()
		beside.Wait()
		if errors.Is(err, ErrConflict) {
			return nil, 0, false // another worker advanced it: drop the step, re-read
		}
		if errors.Is(err, ErrIllegalTransition) {
			// A step produced an event the transition table refuses: a
			// defect, never folded on. The migration waits, visibly.
			w.log.Error("step refused by the transition table", "migration", id, "phase", st.Phase, "events", len(bodies), "err", err)
			_ = m.NakWithDelay(max(w.cfg.RetryBackoff, time.Second))
			return nil, 0, true
		}
		if err != nil {
			w.log.Warn("append failed", "migration", id, "err", err)
			_ = m.NakWithDelay(w.cfg.RetryBackoff)
			return nil, 0, true
		}
		for _, env := range envs {
			w.log.Debug("event", "migration", id, "type", env.Type, "phase", env.State.Phase)
			if hook := w.cfg.AfterAppend; hook != nil && hook(env) != nil {
				return nil, 0, true // simulated crash: settle nothing, AckWait redelivers
			}
		}
		next, nseq = envs[len(envs)-1].State, aseq
	}
	switch {
	case out.ack:
		_ = m.Ack()
		return nil, 0, true
	case out.wait > 0:
		_ = m.NakWithDelay(out.wait)
		return nil, 0, true
	}
	return next, nseq, false // next nil (no event): the next step re-reads
}

// taken is one step's events and the state it was decided on.
type taken struct {
	st     *events.State
	bodies []events.Body
}

// bodies are the outcome's events in order (body, then then).
func (o outcome) bodies() []events.Body {
	var bs []events.Body
	for _, b := range append([]events.Body{o.body}, o.then...) {
		if b != nil {
			bs = append(bs, b)
		}
	}
	return bs
}

// chained lists the steps that go into the same append as the event
// before them: the step that follows an event of the key's type, when it
// is the value's action. Every other step's events are appended before the
// next step starts. A chained step's events cost no synced append of their
// own, and a crash before the append loses both steps' events: each is
// then taken again, which is harmless for these two.
var chained = map[string]action{
	// The historical copy, under the hard-delete lock just taken: after a
	// lost append the escalation finds its own lock (the token) and the
	// imports are idempotent, as for any step whose event was lost.
	events.HardDeleteLocked{}.Type(): actHistorical,
	// The completion after the swap: bookkeeping (and the start of a
	// pending child, one idempotent command).
	events.Swapped{}.Type(): actComplete,
}

// batchesInMemory reports whether the server stages an atomic batch
// appended to a stream of config sc in memory until its commit: a
// replicated stream or a memory one. An R1 file stream's batch is staged
// in a file store of its own (nats-server 2.15: newBatchStore), created,
// fsynced and removed per batch: a two-event batch measured about 5.7
// fsyncs against two appends' 2 (strace of `cutover bench throughput`), so
// chaining steps there costs more writes than it saves, and the engine
// appends each step on its own.
func batchesInMemory(sc jetstream.StreamConfig) bool {
	return sc.Replicas > 1 || sc.Storage == jetstream.MemoryStorage
}

// chain takes the step chained after out's last event, if any, on the
// state out's events lead to, in a step context of its own. It returns the
// outcome that settles the work (the last step's) and every step's events.
func (w *Worker) chain(ctx context.Context, st *events.State, out outcome) (outcome, []taken) {
	steps := []taken{{st: st, bodies: out.bodies()}}
	bs := steps[0].bodies
	if !w.chainSteps || out.ack || out.wait > 0 || out.alongside != nil || len(bs) == 0 {
		return out, steps
	}
	next, ok := chained[bs[len(bs)-1].Type()]
	if !ok {
		return out, steps
	}
	now := w.cfg.Clock()
	cur := st
	for _, b := range bs {
		env, err := newEvent(st.ID, cur, b, "", now, "")
		if err != nil {
			return out, steps // the append refuses it too, and says so
		}
		cur = env.State
	}
	if w.decide(cur, now).action != next {
		return out, steps
	}
	cctx, cancel := context.WithTimeout(ctx, w.cfg.StepTimeout)
	defer cancel()
	then := w.step(cctx, cur)
	return then, append(steps, taken{st: cur, bodies: then.bodies()})
}

// backgroundLease is the longest a step holds its background slot. A step
// that takes longer (stuck on a partitioned request until its timeout)
// gives the slot back and runs on unbounded: the bound shapes the queue in
// front of Phase 3 under load, and must not let a few stuck steps stop
// every other migration (with 8 slots held by steps waiting out a
// partition, a chaos run completes 51 migrations in 3 minutes instead of
// 439).
const backgroundLease = 250 * time.Millisecond

// takeBackground waits for a background slot; release gives it back (at
// the latest after backgroundLease). ok is false when ctx ended first.
func (w *Worker) takeBackground(ctx context.Context) (release func(), ok bool) {
	select {
	case w.background <- struct{}{}:
	case <-ctx.Done():
		return nil, false
	}
	var once sync.Once
	give := func() { once.Do(func() { <-w.background }) }
	t := time.AfterFunc(backgroundLease, give)
	return func() { t.Stop(); give() }, true
}

// step takes the next step of st, paper 001 Algorithm 1 (§4.5): nextAction
// decides from the folded state which action runs, and each runs as one
// method, one file per phase (phase_*.go). Every side effect is
// idempotent, so a step replayed after a crash or a lost race is harmless.
func (w *Worker) step(ctx context.Context, st *events.State) outcome {
	now := w.cfg.Clock()
	return w.stepAt(ctx, st, now, w.decide(st, now))
}

// decide is nextAction with the worker's limits.
func (w *Worker) decide(st *events.State, now time.Time) decision {
	return nextAction(st, now, limits{phaseRetries: w.cfg.PhaseRetries, skew: w.skew})
}

// stepAt is step with the decision already taken at now.
func (w *Worker) stepAt(ctx context.Context, st *events.State, now time.Time, d decision) outcome {
	res := d.res
	switch d.action {
	case actTenant:
		return w.tenantStep(ctx, st, now)
	case actAck:
		return outcome{ack: true}
	case actFail:
		return outcome{body: events.Failed{Reason: d.reason}}
	case actRollback: // lines 15–17
		return w.rollback(ctx, st, res, d.reason)
	case actPreLock: // Phase 1: line 2
		return w.preLock(ctx, st, res, now)
	case actAwaitConvergence: // line 3, then line 5
		return w.awaitConvergence(ctx, st, res, now)
	case actEscalateHardDelete: // Phase 2: line 5
		return w.escalateHardDelete(ctx, st, res, now)
	case actHistorical: // lines 6–10, then Phase 3: line 12
		return w.historical(ctx, st, res, now)
	case actDelta: // line 13, then lines 14–19
		return w.delta(ctx, st, res)
	case actSwap: // Phase 4: line 19
		return w.cutover(ctx, st, res, nil)
	case actScheduleCleanup: // line 20
		return w.scheduleCleanup(ctx, st)
	case actComplete:
		return w.complete(ctx, st, now)
	case actCleanSource: // line 20, once the window has passed
		return w.cleanSource(ctx, st, now)
	case actReschedule: // line 16
		return w.reschedule(st, now)
	case actPaused:
		return w.paused(ctx, st, res, now)
	}
	return outcome{body: events.Failed{Reason: fmt.Sprintf("no step for action %s", d.action)}}
}

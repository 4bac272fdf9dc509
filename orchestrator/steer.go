package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
)

// Steering a running migration or tenant move (`cutover migrate pause`,
// `resume`, `throttle`): each command is recorded as an event in the
// aggregate's own log (Paused, Resumed, Throttled), so it survives worker
// crashes and any worker honours it. Nothing here is kept in memory.

// pausePoll is the longest a paused migration's timer sleeps: Resumed
// nudges it at once; the timer is the fallback, and the lease renewals'
// clock.
const pausePoll = time.Minute

// steer records a steering command's event on its aggregate. A command
// for a migration that does not exist, or has ended, changes nothing.
func (w *Worker) steer(ctx context.Context, id, cause string, decide func(*events.State) events.Body) error {
	err := w.mutate(ctx, id, cause, decide)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// stale reports whether a command sent at sent is older than the last of
// its kind applied (at last): commands are handled concurrently and may be
// redelivered, so a pause delivered after the resume that followed it must
// not hold the migration again.
func stale(sent, last time.Time) bool { return !sent.IsZero() && !sent.After(last) }

// pauseBody is a Pause command's event: nothing when stale, or when
// already paused and it carries no newer send time. A pause that changes
// nothing is still recorded when it is the newest (it orders the commands
// delivered after it: a resume sent before it must stay stale).
func pauseBody(b events.Pause) func(*events.State) events.Body {
	return func(st *events.State) events.Body {
		if stale(b.Sent, st.PauseSentAt) || st.Paused && b.Sent.IsZero() {
			return nil
		}
		return events.Paused{Reason: b.Reason, Sent: b.Sent}
	}
}

// resumeBody is a Resume command's event, as pauseBody: a resume that
// finds the migration not paused (its pause not delivered yet) is recorded
// all the same, so that the pause, delivered late, is stale.
func resumeBody(b events.Resume) func(*events.State) events.Body {
	return func(st *events.State) events.Body {
		if stale(b.Sent, st.PauseSentAt) || !st.Paused && b.Sent.IsZero() {
			return nil
		}
		return events.Resumed{Sent: b.Sent}
	}
}

// throttleBody is a Throttle command's event: the settings after it, whole
// (a tenant move's concurrency is ignored on a migration); nothing when
// they do not change or it is stale.
func throttleBody(b events.Throttle) func(*events.State) events.Body {
	return func(st *events.State) events.Body {
		if stale(b.Sent, st.ThrottleSentAt) {
			return nil
		}
		rate, conc := st.Rate, 0
		if f := st.Fanout; f != nil {
			rate, conc = f.Rate, f.Concurrency
			if b.Concurrency > 0 {
				conc = b.Concurrency
			}
		}
		switch {
		case b.Rate > 0:
			rate = b.Rate
		case b.Rate == events.NoRate:
			rate = 0
		}
		same := st.Fanout == nil && rate == st.Rate || st.Fanout != nil && rate == st.Fanout.Rate && conc == st.Fanout.Concurrency
		if same && b.Sent.IsZero() {
			return nil
		}
		return events.Throttled{Concurrency: conc, Rate: rate, Sent: b.Sent}
	}
}

// paused is a paused migration's step: it takes none of the protocol's
// steps, and keeps the locks it holds alive — the pre-lock and the
// hard-delete lock are renewed as the historical copy renews them (paper
// 001 §5.2, Algorithm 1 line 8), up to their cap (Table 5: two weeks from
// the pre-lock); never the write lock, which no pause holds (pausable).
// A pause that would outlast the cap rolls back before the lock lapses,
// saying so: the source stays authoritative and a resume starts afresh.
func (w *Worker) paused(ctx context.Context, st *events.State, res kvrouting.Resource, now time.Time) outcome {
	if !holdsLease(st.Phase) {
		return waitFor(pausePoll)
	}
	if st.Phase == events.PhaseHistorical {
		// A write lock whose event lost the append race to the pause:
		// Phase 3 has begun, and a pause never holds it. The historical
		// step records it (the escalation is idempotent) and goes on.
		d, o, bad := w.verify(ctx, st, res)
		if bad {
			return o
		}
		if d.Primary.Lock.Type == kvrouting.LockWrite {
			return w.historical(ctx, st, res, now)
		}
	}
	if o, ok := w.renewHardDelete(ctx, st, res, now); ok {
		return o
	}
	margin := w.renewMargin()
	left := st.LockExpiry.Sub(now)
	if left < margin { // the renewal could not extend it: the cap
		return w.rollback(ctx, st, res, fmt.Sprintf("paused past the lock's bound: the lock expires at %s and cannot be renewed further (paused %s)",
			st.LockExpiry.Format(time.RFC3339), now.Sub(st.PausedAt).Round(time.Second)))
	}
	return waitFor(min(left-margin, pausePoll))
}

// holdsLease reports whether a migration in phase p holds a renewable lock
// (the pre-lock, then the hard-delete lock).
func holdsLease(p events.Phase) bool {
	switch p {
	case events.PhasePreLocked, events.PhaseConverged, events.PhaseHistorical:
		return true
	}
	return false
}

// renewMargin is how close to its expiry a renewable lock is renewed: the
// configured margin, at most a third of the lease (a margin longer than
// the lease would renew on every step).
func (w *Worker) renewMargin() time.Duration {
	return min(w.cfg.RenewMargin, w.cfg.Locker.Config().HardDeleteLease/3)
}

// pace is how long a historical copy at rate records a second waits after
// a step that copied n records since start: the copy respects the rate
// over time whichever worker drives it (the wait is the durable timer).
func pace(rate, n int, elapsed time.Duration) time.Duration {
	if rate <= 0 || n <= 0 {
		return 0
	}
	return max(time.Duration(n)*time.Second/time.Duration(rate)-elapsed, 0)
}

// recordsOf counts the records of a step's historical pages.
func recordsOf(b events.Body) int {
	switch b := b.(type) {
	case events.PageCopied:
		return b.Count
	case events.PagesCopied:
		n := 0
		for _, p := range b.Pages {
			n += p.Count
		}
		return n
	}
	return 0
}

// steerChildren brings a tenant move's running children in line with it:
// paused while it is (ByParent; a child an operator paused is left
// alone), resumed when it is no longer, and copying at its child rate.
// Each is a conditional append to the child's own log; one that fails is
// retried by the next step.
func (w *Worker) steerChildren(ctx context.Context, tenant *events.State, children []*events.State) {
	f := tenant.Fanout
	for _, cs := range children {
		if cs == nil || cs.Status.Terminal() {
			continue
		}
		if body := childSteer(tenant, f, cs); body != nil {
			err := w.mutate(ctx, cs.ID, tenant.ID, func(cur *events.State) events.Body { return childSteer(tenant, f, cur) })
			if err != nil && ctx.Err() == nil {
				w.log.Warn("steering a child failed; the next step retries", "tenant", tenant.ID, "migration", cs.ID, "err", err)
			}
		}
	}
}

// childSteer is the event that brings child cs in line with tenant move
// f, or nil.
func childSteer(tenant *events.State, f *events.TenantState, cs *events.State) events.Body {
	switch {
	case tenant.Paused && !cs.Paused:
		return events.Paused{Reason: "tenant move paused", ByParent: true}
	case !tenant.Paused && cs.Paused && cs.PausedByParent:
		return events.Resumed{ByParent: true}
	case cs.Rate != f.ChildRate():
		return events.Throttled{Rate: f.ChildRate()}
	}
	return nil
}

// brake is the tenant move's automatic throttle (the Vitess and gh-ost
// throttlers' idea, on what users and the source stores feel): it halves
// the move's concurrency (down to one) and says why when
//   - MaxWriteLockP99: BrakeMinSamples children or more have ended since
//     the last brake and the 99th percentile of their write-blocked time
//     passes it; or
//   - MaxSourceLatency: the slowest export page of the last historical step
//     of a child read in this step (running, or ended since the last step)
//     took longer, and BrakeCooldown has passed since the last brake (time
//     for samples at the new concurrency).
//
// Nil when it does not trip.
func brake(f *events.TenantState, children []*events.State, now time.Time) *events.Throttled {
	if f.Concurrency <= 1 {
		return nil
	}
	halve := func(reason string) *events.Throttled {
		return &events.Throttled{Concurrency: max(f.Concurrency/2, 1), Rate: f.Rate, Auto: true, Reason: reason}
	}
	if f.MaxWriteLockP99 > 0 && len(f.Blocked) >= events.BrakeMinSamples {
		if p99 := time.Duration(percentile(f.Blocked, 0.99)) * time.Millisecond; p99 > f.MaxWriteLockP99 {
			return halve(fmt.Sprintf("write-lock p99 %s over %s across the last %d children", p99, f.MaxWriteLockP99, len(f.Blocked)))
		}
	}
	if f.MaxSourceLatency > 0 && now.Sub(f.LastBrakeAt) >= events.BrakeCooldown {
		var worst *events.State
		for _, cs := range children {
			if cs != nil && (worst == nil || cs.SourceLatency > worst.SourceLatency) {
				worst = cs
			}
		}
		if worst != nil && worst.SourceLatency > f.MaxSourceLatency {
			return halve(fmt.Sprintf("source export latency %s over %s (%s at %s)", worst.SourceLatency, f.MaxSourceLatency, worst.Resource, worst.Source))
		}
	}
	return nil
}

// percentile is the nearest-rank q-quantile of xs (not empty).
func percentile(xs []int64, q float64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(float64(len(s))*q+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

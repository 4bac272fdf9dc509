package orchestrator

import (
	"context"
	"errors"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// Phase 2: hard-delete lock and historical copy (paper 001 §4.1.2,
// Algorithm 1 lines 4–10).

// escalateHardDelete takes the hard-delete lock once the pre-lock has
// converged (Algorithm 1 line 5) and records it with the services whose
// historical copy starts. The source's stores learn the lock from the
// historical export requests, stamped with it (copyRun): the first one of
// each service installs it — deletes become tombstones, paper 001 §4.3 —
// before it issues the sync token. A delete decided on an older revision
// and delivered after that is refused as moved; one decided on the lock's
// own revision brings the lock with it.
func (w *Worker) escalateHardDelete(ctx context.Context, st *events.State, res kvrouting.Resource, now time.Time) outcome {
	tok := kvrouting.Token(st.Token)
	// Re-read the location: drop a resource already at the target. The
	// holder's cached document stands in for the read: the escalation's
	// conditional write proves it current (paper 000 §8).
	doc := w.cached(st)
	if doc == nil {
		d, err := w.cfg.Locker.Get(ctx, res)
		if err != nil {
			return w.transient(st, err)
		}
		doc = d
	}
	if doc.Primary.Region == st.Target {
		return outcome{body: events.Dropped{Reason: "already at target"}}
	}
	if doc.Primary.Lock.Token != tok {
		return w.rollback(ctx, st, res, "pre-lock lost")
	}
	eps, err := w.endpoints(ctx, st.Source, res.Kind)
	if err != nil {
		return w.transient(st, err)
	}
	at := w.cfg.Clock()
	timed := w.timed(OpRoutingWrite)
	d, err := w.cfg.Locker.EscalateHardDelete(ctx, res, tok, doc) // line 5
	timed()
	if errors.Is(err, kvrouting.ErrNotConverged) {
		return waitFor(doc.Primary.Lock.NotBefore.Add(w.skew).Sub(now))
	}
	if o, bad := w.lockErr(ctx, st, res, err); bad {
		return o
	}
	w.remember(st, d)
	ev := events.HardDeleteLocked{Expiry: d.Primary.Lock.Expiry, At: at}
	for _, ep := range eps {
		ev.Services = append(ev.Services, ep.Service())
	}
	ev.Since, ev.ReverseOf = w.reverseSince(ctx, st, d, ev.Services) // the reverse window (reverse.go)
	if ev.ReverseOf != "" {
		w.log.Info("historical copy", "migration", st.ID, "mode", reverseSummary(ev.Since), "since", ev.ReverseOf)
	}
	return outcome{body: ev}
}

// historical is the Historical phase, Algorithm 1 lines 6–10: start the
// child migrations dependents discovered (line 9), extend the hard-delete
// lock before it expires (line 8), copy and checkpoint the next pages of
// every service not done (lines 6–8); once every service's historical copy
// is done, Phase 3 starts in the same step (line 12).
func (w *Worker) historical(ctx context.Context, st *events.State, res kvrouting.Resource, now time.Time) outcome {
	if o, ok := w.startChild(ctx, st); ok {
		return o
	}
	if o, ok := w.renewHardDelete(ctx, st, res, now); ok {
		return o
	}
	if pending := st.Pending(false); len(pending) > 0 {
		d, o, bad := w.verify(ctx, st, res)
		if bad {
			return o
		}
		start := w.cfg.Clock()
		o, _ = w.copyPages(ctx, st, d, contract.Historical, pending)
		if o.wait == 0 { // the rate (Throttled): a durable wait, whichever worker goes on
			o.wait = pace(st.Rate, recordsOf(o.body), w.cfg.Clock().Sub(start))
		}
		return o
	}
	return w.escalateWrite(ctx, st, res)
}

// renewHardDelete extends the hard-delete lock (and the pre-lock) when it
// is within the renew margin of its expiry (paper 001 §5.2, Algorithm 1
// line 8), and tells the source's stores, whose tombstone deletes end with
// the lock (a service whose copy is done exports nothing more to bring
// them the renewal). ok is false when there was
// nothing to renew, or the renewal did not extend the lock: the step goes
// on.
func (w *Worker) renewHardDelete(ctx context.Context, st *events.State, res kvrouting.Resource, now time.Time) (o outcome, ok bool) {
	if st.LockExpiry.Sub(now) >= w.renewMargin() {
		return outcome{}, false
	}
	timed := w.timed(OpRoutingWrite)
	d, err := w.cfg.Locker.Renew(ctx, res, kvrouting.Token(st.Token), w.cached(st))
	timed()
	if o, bad := w.lockErr(ctx, st, res, err); bad {
		return o, true
	}
	w.remember(st, d)
	exp := d.Primary.Lock.Expiry
	if !exp.After(st.LockExpiry) {
		return outcome{}, false
	}
	if err := w.authorize(ctx, st, st.Source, d); err != nil {
		return w.transient(st, err), true
	}
	return outcome{body: events.Renewed{Expiry: exp}}, true
}

// startChild starts the first pending child migration, if any (Algorithm 1
// line 9). The command's Msg-Id and the child's derived id make a replay
// harmless.
func (w *Worker) startChild(ctx context.Context, st *events.State) (outcome, bool) {
	if len(st.PendingChildren) == 0 {
		return outcome{}, false
	}
	child := st.PendingChildren[0]
	cmd := events.Start{Resource: child, Target: st.Target, Parent: st.ID, Tenant: st.Tenant, MaxWriteBlock: st.MaxWriteBlock, Rate: st.Rate}
	cmd.MigrationID = startID("", cmd)
	if err := sendCommand(ctx, w.js, DeriveID("child-cmd", st.ID, child, st.Token), st.ID, cmd); err != nil {
		return w.transient(st, err), true
	}
	return outcome{body: events.ChildStarted{Resource: child, MigrationID: cmd.MigrationID}}, true
}

package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services/contract"
)

// Admission: a start is refused at once, before anything is locked, when
// its target cannot be migrated to: a region that no
// deployment serves, or a resource kind that no service owns. Otherwise
// the migration would pre-lock, fail its copy PhaseRetries times, roll
// back and reschedule, MaxAttempts times, while its status says active.

// probeTries is how many probes a "not served" answer needs before a start
// is refused: a region whose servers are reconnecting (a NATS node
// restarting) answers "no responders" for a moment.
const probeTries = 3

// probeFresh is how long a region's answer to an admission probe admits
// the next starts to it without probing again. The probe is one request to
// every service owning the kind at the target (4 of a chat migration's 29
// contract requests); a burst of starts to one region needs it once. The
// probe catches a misconfigured target, not a region that stops serving
// between the start and the copy: that one fails the slow way anyway,
// probe or not.
const probeFresh = 2 * time.Second

// unserved returns why a resource of kind cannot be migrated to target, or
// "" when it can or the directory cannot tell (then the migration starts,
// and fails the slow way if it must). A target admitted less than
// probeFresh ago (it answered, or the directory could not tell) is not
// probed again.
func (w *Worker) unserved(ctx context.Context, kind, target string) string {
	key := kind + "\x00" + target
	if at, ok := w.served.Load(key); ok && w.cfg.Clock().Sub(at.(time.Time)) < probeFresh {
		return ""
	}
	if err := w.notServedAt(ctx, kind, target); err != nil {
		w.served.Delete(key)
		return fmt.Sprintf("refused: target region %q is not served: %v", target, err)
	}
	w.served.Store(key, w.cfg.Clock())
	return ""
}

// notServedAt returns the directory's answer when it says that no service
// owning resources of kind answers at region (probeTries probes), and nil
// when one does or it cannot tell.
func (w *Worker) notServedAt(ctx context.Context, kind, region string) error {
	if _, err := w.cfg.Directory.Endpoints(ctx, region, kind); err != nil {
		if notServed(err) {
			return err
		}
		return nil
	}
	p, ok := w.cfg.Directory.(contract.RegionProber)
	if !ok {
		return nil
	}
	for try := 1; ; try++ {
		err := p.ProbeRegion(ctx, region, kind)
		if err == nil || !notServed(err) {
			return nil
		}
		if try == probeTries {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(w.cfg.RetryBackoff):
		}
	}
}

// notServed reports whether a directory error says "nothing there":
// LocalDirectory's ErrNotFound or a contract CodeNotFound.
func notServed(err error) bool {
	return errors.Is(err, ErrNotFound) || contract.AsError(err).Code == contract.CodeNotFound
}

// refuse records a migration refused at its start: its Requested event,
// then Failed with reason, and no work message. Nothing else is written: no
// routing lock, no fence. If the migration exists already (an earlier
// delivery of the start command admitted it and may be driving it), it is
// left to its work: create republishes that.
func (w *Worker) refuse(ctx context.Context, id, cause string, req events.Requested, reason string) error {
	env, seq, err := appendTo(ctx, w.js, id, nil, 0, req, cause, w.cfg.Clock(), id+"-created")
	if errors.Is(err, ErrConflict) {
		return w.create(ctx, id, cause, req)
	}
	if err != nil {
		return err
	}
	_, _, err = appendTo(ctx, w.js, id, env.State, seq, events.Failed{Reason: reason}, cause, w.cfg.Clock(), id+"-refused")
	if errors.Is(err, ErrConflict) {
		return nil // appended by an earlier delivery of this command
	}
	return err
}

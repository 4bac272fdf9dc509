package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/services/contractnats"
)

// StartRequest is `cutover migrate start`: migrate one resource.
type StartRequest struct {
	// NATS is the deployment's URL (several comma separated).
	NATS string
	// Resource is the resource to move, "kind/id".
	Resource string
	// Target is the region to move it to.
	Target string
	// Wait follows the migration to its end, printing its phase transitions.
	Wait bool
	// Timeout bounds the following with Wait; 0 follows for ever. The
	// migration goes on either way.
	Timeout time.Duration
	// JSON prints JSON: the started migration, or with Wait one event per line.
	JSON bool
	// MaxWriteBlock is the write-block budget (0: the write lease).
	MaxWriteBlock time.Duration
	// Rate caps the historical copy in records a second (0: no cap).
	Rate int
}

// Start asks the orchestrator to migrate r.Resource and prints the
// migration id, or with r.Wait follows it to its end. It returns an error
// wrapping ErrUsage for a bad resource or target, before connecting; any
// other error when the deployment cannot be reached, no contract service
// answers in the target region, the orchestrator refuses, following gives
// up, or the migration fails (a start the orchestrator refuses ends
// Failed with its reason). Any goroutine may call it; each call has its
// own connection.
func Start(ctx context.Context, r StartRequest, stdout, stderr io.Writer) error {
	res, err := parseResource(r.Resource)
	if err != nil {
		return err
	}
	if err := CheckRegion("to", r.Target); err != nil {
		return err
	}
	if r.MaxWriteBlock < 0 {
		return fmt.Errorf("%w: --max-write-block must be >= 0", ErrUsage)
	}
	if r.Rate < 0 {
		return fmt.Errorf("%w: --rate must be >= 0", ErrUsage)
	}
	o, err := dial(ctx, r.NATS)
	if err != nil {
		return err
	}
	defer o.Close()
	eps, err := contractnats.Discover(ctx, o.nc)
	if err != nil {
		return err
	}
	pf, err := runPreflight(ctx, o, eps, res, r.Target)
	if err != nil {
		return err
	}
	if err := pf.refusal(res); err != nil {
		return err
	}
	id, err := o.orch.Start(ctx, events.Start{Resource: res.String(), Target: r.Target, MaxWriteBlock: r.MaxWriteBlock, Rate: r.Rate})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if !r.Wait {
		if r.JSON {
			return writeJSON(stdout, map[string]string{"migration_id": id, "resource": res.String(), "target": r.Target})
		}
		fmt.Fprintln(stdout, id)
		return nil
	}
	if !r.JSON {
		fmt.Fprintf(stdout, "migration %s: %s → %s\n", id, res, r.Target)
	}
	st, err := followMigration(ctx, o, id, r.Timeout, r.JSON, stdout, stderr)
	if err != nil {
		return err
	}
	if st.Status == events.StatusFailed {
		return fmt.Errorf("migration %s failed: %s", id, st.Reason)
	}
	return nil
}

// CancelRequest is `cutover migrate cancel`: roll a migration back and
// stop it.
type CancelRequest struct {
	// NATS is the deployment's URL (several comma separated).
	NATS string
	// ID is the migration to cancel.
	ID string
	// Reason says why; it is recorded in the migration's events.
	Reason string
	// Wait follows the migration until it has rolled back.
	Wait bool
	// Timeout bounds the following with Wait; 0 follows for ever.
	Timeout time.Duration
}

// Cancel asks the orchestrator to cancel migration r.ID, which must exist
// (it waits up to 5 s for a just-started one) and not yet have swapped. It
// returns an error wrapping ErrUsage for a malformed id, before connecting;
// any other error when the migration is unknown, has ended or swapped, the
// cancel is refused, or, with r.Wait, the migration completed anyway. Any
// goroutine may call it.
func Cancel(ctx context.Context, r CancelRequest, stdout, stderr io.Writer) error {
	id := r.ID
	if err := parseMigrationID(id); err != nil {
		return err
	}
	o, err := dial(ctx, r.NATS)
	if err != nil {
		return err
	}
	defer o.Close()
	// A migration started a moment ago may still be a queued command; a
	// cancel sent before it exists would be dropped, so wait for it.
	st, _, err := awaitMigration(ctx, o, id, 5*time.Second)
	if err != nil {
		return err
	}
	if st.Status.Terminal() {
		return fmt.Errorf("migration %s already ended (%s)", id, st.Status)
	}
	if st.Phase == events.PhaseSwapped || st.Phase == events.PhaseCleanupScheduled {
		return fmt.Errorf("migration %s is past its swap; it can no longer be cancelled", id)
	}
	if err := o.orch.Cancel(ctx, id, r.Reason); err != nil {
		return fmt.Errorf("cancel: %w", err)
	}
	fmt.Fprintf(stdout, "cancel requested for %s (%s, phase %s)\n", id, st.Resource, st.Phase)
	if !r.Wait {
		return nil
	}
	end, err := followMigration(ctx, o, id, r.Timeout, false, stdout, stderr)
	if err != nil {
		return err
	}
	if end.Status == events.StatusCompleted {
		return fmt.Errorf("migration %s completed before the cancel took effect", id)
	}
	return nil
}

// followMigration prints a migration's phase transitions (and its
// failures) until it ends, and returns its final state.
func followMigration(ctx context.Context, o *conn, id string, timeout time.Duration, asJSON bool, stdout, stderr io.Writer) (*events.State, error) {
	ctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	var last *events.State
	var t0 time.Time
	prev := events.Phase("")
	err := followEvents(ctx, o, id, 0, stderr, func(seq uint64, e *events.Envelope) bool {
		if e.State == nil {
			return false
		}
		if t0.IsZero() {
			t0 = e.Time
		}
		st := e.State
		if asJSON || st.Phase != prev || notable(e.Type) { // JSON: every event
			if asJSON {
				_ = writeJSONLine(stdout, toEventJSON(seq, e))
			} else {
				fmt.Fprintln(stdout, "  "+eventLine(e, t0))
			}
		}
		prev, last = st.Phase, st
		return st.Status.Terminal()
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && last != nil {
			return nil, fmt.Errorf("migration %s still %s in phase %s after %s; it goes on (cutover migrate status %s)", id, last.Status, last.Phase, timeout, id)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no events of migration %s within %s; is an orchestrator running?", id, timeout)
		}
		return nil, noStream(err)
	}
	if !asJSON {
		fmt.Fprintln(stdout, summaryLine(last))
	}
	return last, nil
}

// notable event types are printed even when the phase does not change.
func notable(typ string) bool {
	switch typ {
	case events.TypeStepFailed, events.TypeRolledBack, events.TypeRescheduled, events.TypeValidated,
		events.TypeCancelRequested, events.TypePaused, events.TypeResumed, events.TypeThrottled, events.TypeForceReleased, events.TypeChildStarted, events.TypeCleanedUp, events.TypeAdminRefused:
		return true
	}
	return false
}

// awaitMigration returns a migration's state and last sequence, waiting up
// to wait for it to exist (its start command may not be processed yet).
func awaitMigration(ctx context.Context, o *conn, id string, wait time.Duration) (*events.State, uint64, error) {
	deadline := time.Now().Add(wait)
	for {
		st, seq, err := o.orch.State(ctx, id)
		if err == nil {
			return st, seq, nil
		}
		if !errors.Is(err, orchestrator.ErrNotFound) {
			return nil, 0, err
		}
		if time.Now().After(deadline) {
			return nil, 0, fmt.Errorf("migration %s not found", id)
		}
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

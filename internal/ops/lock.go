package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/nats-io/nats.go/jetstream"
)

// ForceReleaseRequest is `cutover lock force-release`: clear a stuck lock
// without its token (paper 000 §8).
type ForceReleaseRequest struct {
	// NATS is the deployment's URL (several comma separated).
	NATS string
	// Resource is the locked resource, "kind/id".
	Resource string
	// Approvers approve the release; at least two distinct ones (trimmed,
	// case-insensitive) are needed.
	Approvers []string
	// Reason says why; it is recorded in the audit event.
	Reason string
	// Timeout bounds the wait for the orchestrator's audit event; 0 waits
	// for ever.
	Timeout time.Duration
	// JSON prints the audit event and the routing document after it.
	JSON bool
}

// ForceRelease has the orchestrator release r.Resource's locks, so that
// the release is recorded as a force-released event and the migration
// holding the lock rolls back, and prints the routing document after it.
// A resource holding no lock is left alone. It returns an error wrapping
// ErrUsage for a malformed resource or fewer than two distinct approvers,
// before connecting; any other error when the deployment cannot be
// reached, the orchestrator refuses, or no audit event appears within
// r.Timeout. Any goroutine may call it.
func ForceRelease(ctx context.Context, r ForceReleaseRequest, stdout, stderr io.Writer) error {
	res, err := parseResource(r.Resource)
	if err != nil {
		return err
	}
	if d := distinctApprovers(r.Approvers); len(d) < 2 {
		return fmt.Errorf("%w: force-release needs at least two distinct approvers (got %d)", ErrUsage, len(d))
	}
	o, err := dial(ctx, r.NATS)
	if err != nil {
		return err
	}
	defer o.Close()
	before, err := o.leaderDoc(ctx, res)
	if err != nil {
		return err
	}
	if before.Primary.Lock.IsZero() && (before.Secondary == nil || before.Secondary.Lock.IsZero()) {
		fmt.Fprintf(stdout, "%s holds no lock; nothing to release\n", res)
		return nil
	}
	// Subscribe before sending, so the audit event cannot slip past.
	subject := events.EventPrefix + ">"
	if before.MigrationID != "" {
		subject = events.EventSubject(before.MigrationID)
	}
	it, err := eventIterator(ctx, o.js, subject, jetstream.DeliverNewPolicy)
	if err != nil {
		return err
	}
	defer it.Stop()
	if err := o.orch.ForceRelease(ctx, res.String(), r.Approvers, r.Reason); err != nil {
		return fmt.Errorf("force-release: %w", err)
	}
	wctx, cancel := withTimeout(ctx, r.Timeout)
	defer cancel()
	var audit *events.Envelope
	var auditSeq uint64
	err = it.each(wctx, stderr, func(seq uint64, e *events.Envelope) bool {
		if b, ok := e.Body.(events.ForceReleased); ok && b.Resource == res.String() {
			audit, auditSeq = e, seq
			return true
		}
		return false
	})
	after, derr := o.leaderDoc(ctx, res)
	if err != nil {
		if derr == nil && after.Primary.Lock.IsZero() && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s was released but no audit event appeared within %s (lock held by migration %q, which the orchestrator could not record it on)", res, r.Timeout, before.MigrationID)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no force-release of %s within %s; is an orchestrator running?", res, r.Timeout)
		}
		return err
	}
	if derr != nil {
		return derr
	}
	if r.JSON {
		return writeJSON(stdout, map[string]any{"audit": toEventJSON(auditSeq, audit), "routing": toRoutingJSON(after)})
	}
	fmt.Fprintf(stdout, "released %s (held: %s); audited as %s on %s\n", res, heldLocks(before), audit.Type, audit.MigrationID)
	printRouting(stdout, after)
	return nil
}

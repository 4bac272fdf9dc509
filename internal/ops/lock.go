package ops

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/orchestrator/approval"
)

// ForceReleaseRequest is `cutover lock force-release`: clear a stuck lock
// without its token (paper 000 §8).
type ForceReleaseRequest struct {
	// NATS is the deployment's URL (several comma separated).
	NATS string
	// Resource is the locked resource, "kind/id".
	Resource string
	// Approvers, Approvals and Keys approve the release (Approvals): two
	// distinct operators' signed approvals, which the orchestrator
	// verifies against its operator registry; approver names alone only
	// for a development orchestrator.
	Approvers []string
	Approvals []string
	Keys      []string
	// Reason says why; the approvals approve it and the audit event
	// records it.
	Reason string
	// Timeout bounds the wait for the orchestrator's outcome; 0 waits for
	// ever.
	Timeout time.Duration
	// JSON prints the audit event and the routing document after it.
	JSON bool
}

// ForceRelease has the orchestrator release r.Resource's locks once it has
// verified the approvals, so that the release is recorded as a
// force-released event and the migration holding the lock rolls back, and
// prints the routing document after it. A resource holding no lock is
// left alone. It returns an error wrapping ErrUsage for a malformed
// resource or approval, or fewer than two distinct approvers, before
// connecting; one wrapping ErrRefused when the orchestrator refuses
// (nothing changed: its reason is in the error and in the refusal it
// records); any other error when the deployment cannot be reached or no
// outcome appears within r.Timeout. Any goroutine may call it.
func ForceRelease(ctx context.Context, r ForceReleaseRequest, stdout, stderr io.Writer) error {
	res, err := parseResource(r.Resource)
	if err != nil {
		return err
	}
	q := approval.Request{Operation: approval.OpForceRelease, Resource: res.String(), Reason: r.Reason}
	if err := q.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	approvers, tokens, err := Approvals{Approvers: r.Approvers, Approvals: r.Approvals, Keys: r.Keys}.collect(q, time.Now(), stderr)
	if err != nil {
		return err
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
	aid, err := o.orch.ForceRelease(ctx, events.ForceRelease{Resource: res.String(), Approvers: approvers, Approvals: tokens, Reason: r.Reason})
	if err != nil {
		return fmt.Errorf("force-release: %w", err)
	}
	audit, seq, err := awaitOutcome(ctx, o, aid, r.Timeout, stderr)
	if err != nil {
		return err
	}
	after, err := o.leaderDoc(ctx, res)
	if err != nil {
		return err
	}
	if r.JSON {
		return writeJSON(stdout, map[string]any{"audit": toEventJSON(seq, audit), "routing": toRoutingJSON(after)})
	}
	b, _ := audit.Body.(events.ForceReleased)
	fmt.Fprintf(stdout, "released %s (held: %s); audited as %s on %s (approved by %s)\n", res, heldLocks(before), audit.Type, audit.MigrationID, approvedBy(b.Approvers, b.ApprovalIDs))
	printRouting(stdout, after)
	return nil
}

// approvedBy names the approvers of an audit event and whether their
// approvals were signed.
func approvedBy(approvers, ids []string) string {
	if len(ids) == 0 {
		return strings.Join(approvers, " + ") + "; unsigned: development auth"
	}
	return strings.Join(approvers, " + ") + "; signed approvals " + strings.Join(ids, ", ")
}

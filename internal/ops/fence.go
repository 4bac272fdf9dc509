package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/orchestrator/approval"
)

// ErrNoFence is wrapped by ClearFence's error when the orchestrator found
// no service at the region holding a stranded authority record (one that
// decides a request routed by the current routing document otherwise than
// the document does): nothing was changed.
var ErrNoFence = errors.New("no stranded authority")

// ErrFenceInUse is wrapped by ClearFence's error when the region is the
// source or the target of a migration in flight: its stores' authority is
// that migration's to set (`cutover lock force-release` is the escape hatch
// for a stuck migration). Nothing was changed.
var ErrFenceInUse = errors.New("authority belongs to a migration in flight")

// ClearFenceRequest is `cutover fence clear`: repair a resource's
// authority records at a region, for instance a record that refuses users
// at what has become the primary, or one left at a higher revision than
// the routing stream's (a routing bucket recreated).
type ClearFenceRequest struct {
	// NATS is the deployment's URL (several comma separated).
	NATS string
	// Resource is the resource, "kind/id".
	Resource string
	// Region is where the records are.
	Region string
	// Approvers, Approvals and Keys approve the repair, as for
	// ForceRelease; the approvals name the region.
	Approvers []string
	Approvals []string
	Keys      []string
	// Reason says why; the approvals approve it and the audit event
	// records it.
	Reason string
	// Timeout bounds the wait for the orchestrator's outcome; 0 waits for
	// ever.
	Timeout time.Duration
	// JSON prints the audit event, the repaired records and the routing
	// document as JSON.
	JSON bool
}

// clearedFenceJSON is one repaired record for --json: the record replaced
// (its role as level, its until as expiry; records carry no token) and
// both records as the admission table writes them.
type clearedFenceJSON struct {
	Service  string `json:"service"`
	Level    string `json:"level"`
	Token    string `json:"token"`
	Expiry   string `json:"expiry"`
	Previous string `json:"previous"`
	Repaired string `json:"repaired"`
}

// ClearFence has the orchestrator repair r.Resource's stranded authority
// records at r.Region (events.FenceClear): once it has verified the
// approvals it replaces the record of every service there that decides a
// read or a write routed by the routing document otherwise than the
// document does with the authority the document gives the region
// (contract.Repairer), records a fence-force-cleared audit event, and this
// prints what it repaired. Errors: ErrUsage for a malformed resource,
// region or approval, or fewer than two distinct approvers (before
// connecting); ErrRefused when the orchestrator refuses, nothing changed —
// the approvals, a region no contract service answers in, a resource
// without a routing document, ErrFenceInUse when a migration in flight
// has r.Region as its source or target, ErrNoFence when no record there is
// stranded; an error naming the repairs done when a repair failed after
// others (they are audited). Any goroutine may call it.
func ClearFence(ctx context.Context, r ClearFenceRequest, stdout, stderr io.Writer) error {
	res, err := parseResource(r.Resource)
	if err != nil {
		return err
	}
	if err := CheckRegion("region", r.Region); err != nil {
		return err
	}
	q := approval.Request{Operation: approval.OpFenceClear, Resource: res.String(), Region: r.Region, Reason: r.Reason}
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
	aid, err := o.orch.ClearFence(ctx, events.FenceClear{Resource: res.String(), Region: r.Region, Approvers: approvers, Approvals: tokens, Reason: r.Reason})
	if err != nil {
		return fmt.Errorf("fence clear: %w", err)
	}
	audit, seq, err := awaitOutcome(ctx, o, aid, r.Timeout, stderr)
	if err != nil {
		return err
	}
	ev, ok := audit.Body.(events.FenceForceCleared)
	if !ok {
		return fmt.Errorf("fence clear: unexpected outcome %s on %s", audit.Type, aid)
	}
	doc, err := o.leaderDoc(ctx, res)
	if err != nil {
		return err
	}
	repaired := make([]clearedFenceJSON, 0, len(ev.Repairs))
	for _, p := range ev.Repairs {
		j := clearedFenceJSON{Service: p.Service, Level: p.Role, Previous: p.Previous, Repaired: ev.Repaired}
		if p.Until != 0 {
			j.Expiry = rfc(time.UnixMilli(p.Until))
		}
		repaired = append(repaired, j)
	}
	if ev.Failed != "" {
		return fmt.Errorf("%s (repaired at %s; audited as %s)", ev.Failed, strings.Join(ev.Services, ", "), audit.MigrationID)
	}
	if r.JSON {
		return writeJSON(stdout, map[string]any{"audit": toEventJSON(seq, audit), "cleared": repaired, "routing": toRoutingJSON(doc)})
	}
	for _, c := range repaired {
		fmt.Fprintf(stdout, "repaired the authority of %s at %s/%s: %s → %s\n", res, r.Region, c.Service, c.Previous, c.Repaired)
	}
	if ev.Note != "" {
		fmt.Fprintf(stdout, "note: %s\n", ev.Note)
	}
	fmt.Fprintf(stdout, "audited as %s on %s (approved by %s)\n", audit.Type, audit.MigrationID, approvedBy(ev.Approvers, ev.ApprovalIDs))
	printRouting(stdout, doc)
	return nil
}

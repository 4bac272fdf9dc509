package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
)

// ErrNoFence is wrapped by ClearFence's error when no service at the
// region holds a stranded authority record (one that decides a request
// routed by the current routing document otherwise than the document
// does): nothing was changed.
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
	// Approvers approve the repair; at least two distinct ones (trimmed,
	// case-insensitive) are needed, as for ForceRelease.
	Approvers []string
	// Reason says why; it is recorded in the audit event.
	Reason string
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

// ClearFence repairs r.Resource's authority record at every service of
// r.Region whose record is stranded — it decides a read or a write routed
// by the routing document (a leader read) otherwise than the document does
// — with the authority the document gives the region (contract.Repairer:
// the record is replaced whatever it holds), then records a fence-force-cleared audit
// event with the approvers on the migration event stream, and prints what
// it repaired. Errors, each before anything is changed: ErrUsage for a
// malformed resource or region or fewer than two distinct approvers
// (before connecting); a region no contract service answers in; a resource
// without a routing document; ErrFenceInUse when a migration in flight has
// r.Region as its source or target; ErrNoFence when no record there is
// stranded. A failure after a repair
// still records the audit of what was repaired. Any goroutine may call it.
func ClearFence(ctx context.Context, r ClearFenceRequest, stdout, stderr io.Writer) error {
	res, err := parseResource(r.Resource)
	if err != nil {
		return err
	}
	if err := CheckRegion("region", r.Region); err != nil {
		return err
	}
	approvers := distinctApprovers(r.Approvers)
	if len(approvers) < 2 {
		return fmt.Errorf("%w: fence clear needs at least two distinct approvers (got %d)", ErrUsage, len(approvers))
	}
	o, err := dial(ctx, r.NATS)
	if err != nil {
		return err
	}
	defer o.Close()
	svcs, err := servicesAt(ctx, o, r.Region)
	if err != nil {
		return err
	}
	doc, err := o.leaderDoc(ctx, res)
	if err != nil {
		return err
	}
	if doc.MigrationID != "" && !doc.Primary.Lock.IsZero() && (r.Region == doc.Primary.Region || r.Region == doc.Target) {
		return fmt.Errorf("%w: migration %s holds %s (%s lock, %s → %s); its stores' authority is its own, use `cutover lock force-release` for a stuck migration; nothing changed",
			ErrFenceInUse, doc.MigrationID, res, doc.Primary.Lock.Type, doc.Primary.Region, doc.Target)
	}
	// No migration holds the region: its authority has no lease to end.
	want := doc.AuthorityAt(r.Region, 0)
	var (
		repaired []clearedFenceJSON
		names    []string
		first    contract.Authority
		failed   error
	)
	for _, svc := range svcs {
		c := contractnats.Dial(o.nc, o.js, r.Region, svc)
		held, err := c.Authorize(ctx, res.String(), contract.Authority{})
		if err == nil && !stranded(held, want) {
			continue
		}
		prev, err := c.Repair(ctx, res.String(), want)
		if err != nil {
			failed = fmt.Errorf("repair the authority of %s at %s/%s: %w", res, r.Region, svc, err)
			break
		}
		if len(names) == 0 {
			first = prev
		}
		names = append(names, svc)
		j := clearedFenceJSON{Service: svc, Level: string(prev.RoleOf()), Previous: prev.String(), Repaired: want.String()}
		if prev.Until != 0 {
			j.Expiry = rfc(time.UnixMilli(prev.Until))
		}
		repaired = append(repaired, j)
	}
	if len(repaired) == 0 {
		if failed != nil {
			return failed
		}
		return fmt.Errorf("%w on %s at %s: every service there decides as routing does (%s; services: %s); nothing changed", ErrNoFence, res, r.Region, want, strings.Join(svcs, ", "))
	}
	audit, err := o.orch.Audit(ctx, events.FenceForceCleared{Resource: res.String(), Region: r.Region, Services: names,
		Previous: first.String(), Repaired: want.String(), Approvers: r.Approvers, Reason: r.Reason})
	if err != nil {
		return fmt.Errorf("repaired the authority of %s at %s (%s) but could not record the audit event: %w", res, r.Region, strings.Join(names, ", "), noStream(err))
	}
	if failed != nil {
		return fmt.Errorf("%w (repaired at %s; audited as %s)", failed, strings.Join(names, ", "), audit.MigrationID)
	}
	if r.JSON {
		return writeJSON(stdout, map[string]any{"audit": toEventJSON(0, audit), "cleared": repaired, "routing": toRoutingJSON(doc)})
	}
	for _, c := range repaired {
		fmt.Fprintf(stdout, "repaired the authority of %s at %s/%s: %s → %s\n", res, r.Region, c.Service, c.Previous, c.Repaired)
	}
	fmt.Fprintf(stdout, "audited as %s on %s (approved by %s)\n", audit.Type, audit.MigrationID, strings.Join(r.Approvers, " + "))
	printRouting(stdout, doc)
	return nil
}

// stranded reports whether the record held decides a read or a write
// routed by the authority want (the routing document's) otherwise than
// want itself does.
func stranded(held, want contract.Authority) bool {
	now := time.Now()
	for _, op := range []contract.Op{contract.OpRead, contract.OpCreate} {
		if contract.Admit(held, op, want, now).Verdict != contract.Admit(want, op, want, now).Verdict {
			return true
		}
	}
	return false
}

// servicesAt returns the contract services answering at region, sorted;
// an error names the regions that are served when region is not.
func servicesAt(ctx context.Context, o *conn, region string) ([]string, error) {
	eps, err := contractnats.Discover(ctx, o.nc)
	if err != nil {
		return nil, fmt.Errorf("cannot list the contract services: %w", err)
	}
	var svcs, served []string
	for _, ep := range eps {
		if ep.Region == region && !slices.Contains(svcs, ep.Service) {
			svcs = append(svcs, ep.Service)
		}
		if !slices.Contains(served, ep.Region) {
			served = append(served, ep.Region)
		}
	}
	if len(svcs) == 0 {
		slices.Sort(served)
		return nil, fmt.Errorf("region %q is not served: no contract service answers there (served: %s); nothing changed", region, strings.Join(served, ", "))
	}
	slices.Sort(svcs)
	return svcs, nil
}

package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
)

// ErrNoFence is wrapped by ClearFence's error when no service at the
// region holds an active fence on the resource: nothing was changed.
var ErrNoFence = errors.New("no active fence")

// ErrFenceInUse is wrapped by ClearFence's error when the region is the
// source or the target of a migration in flight: its fences are that
// migration's own (`cutover lock force-release` is the escape hatch for a
// stuck migration). Nothing was changed.
var ErrFenceInUse = errors.New("fence belongs to a migration in flight")

// ClearFenceRequest is `cutover fence clear`: remove a stranded write
// fence, for instance a post-swap fence left at what has become the
// primary (issue 14 #2), whatever its token.
type ClearFenceRequest struct {
	// NATS is the deployment's URL (several comma separated).
	NATS string
	// Resource is the fenced resource, "kind/id".
	Resource string
	// Region is where the fence is.
	Region string
	// Approvers approve the clear; at least two distinct ones (trimmed,
	// case-insensitive) are needed, as for ForceRelease.
	Approvers []string
	// Reason says why; it is recorded in the audit event.
	Reason string
	// JSON prints the audit event, the cleared fences and the routing
	// document as JSON.
	JSON bool
}

// clearedFenceJSON is one cleared fence for --json; the token is redacted.
type clearedFenceJSON struct {
	Service string `json:"service"`
	Level   string `json:"level"`
	Token   string `json:"token"`
	Expiry  string `json:"expiry"`
}

// ClearFence force-clears r.Resource's fence at every service of
// r.Region that holds an active one (contract.FenceAdmin), then records a
// fence-force-cleared audit event with the approvers on the migration
// event stream, and prints what it cleared. Errors, each before anything
// is changed: ErrUsage for a malformed resource or region or fewer than
// two distinct approvers (before connecting); a region no contract service
// answers in; a resource without a routing document; ErrFenceInUse when a
// migration in flight has r.Region as its source or target; ErrNoFence
// when no service there holds an active fence. A failure after a clear
// still records the audit of what was cleared. Any goroutine may call it.
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
		return fmt.Errorf("%w: migration %s holds %s (%s lock, %s → %s); its fences are its own, use `cutover lock force-release` for a stuck migration; nothing changed",
			ErrFenceInUse, doc.MigrationID, res, doc.Primary.Lock.Type, doc.Primary.Region, doc.Target)
	}
	var (
		cleared []clearedFenceJSON
		names   []string
		token   string
		failed  error
	)
	for _, svc := range svcs {
		f, err := contractnats.Dial(o.nc, o.js, r.Region, svc).ForceClearFence(ctx, res.String())
		if err != nil {
			if contract.AsError(err).Code == contract.CodeNotFound {
				continue
			}
			failed = fmt.Errorf("clear the fence of %s at %s/%s: %w", res, r.Region, svc, err)
			break
		}
		tok := kvrouting.Token(f.Token).Redacted()
		if token == "" {
			token = tok
		}
		names = append(names, svc)
		cleared = append(cleared, clearedFenceJSON{Service: svc, Level: f.Level.String(), Token: tok, Expiry: rfc(f.Expiry)})
	}
	if len(cleared) == 0 {
		if failed != nil {
			return failed
		}
		return fmt.Errorf("%w on %s at %s (services: %s); nothing changed", ErrNoFence, res, r.Region, strings.Join(svcs, ", "))
	}
	audit, err := o.orch.Audit(ctx, events.FenceForceCleared{Resource: res.String(), Region: r.Region, Services: names,
		Token: token, Approvers: r.Approvers, Reason: r.Reason})
	if err != nil {
		return fmt.Errorf("cleared the fence of %s at %s (%s) but could not record the audit event: %w", res, r.Region, strings.Join(names, ", "), noStream(err))
	}
	if failed != nil {
		return fmt.Errorf("%w (cleared at %s; audited as %s)", failed, strings.Join(names, ", "), audit.MigrationID)
	}
	if r.JSON {
		return writeJSON(stdout, map[string]any{"audit": toEventJSON(0, audit), "cleared": cleared, "routing": toRoutingJSON(doc)})
	}
	for _, c := range cleared {
		fmt.Fprintf(stdout, "cleared the %s fence of %s at %s/%s (token %s, until %s)\n", c.Level, res, r.Region, c.Service, c.Token, c.Expiry)
	}
	fmt.Fprintf(stdout, "audited as %s on %s (approved by %s)\n", audit.Type, audit.MigrationID, strings.Join(r.Approvers, " + "))
	printRouting(stdout, doc)
	return nil
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

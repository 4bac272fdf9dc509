package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contractnats"
)

// ErrPreflight is wrapped by the error of a start its pre-flight refused: the
// resource has no routing document, the target region is not served, the
// resource is already there, or a migration holds it. Nothing was written;
// cmd/cutover exits 2, as for a usage error.
var ErrPreflight = errors.New("refused by the pre-flight")

// preflight is what a start checks before it writes anything, the same
// for a real start and a dry run (which goes on to read the services'
// digests). It stops at the first failure that makes the later checks
// moot (no document; an unknown region; already at the target), so that
// no check contradicts another. It is advice, taken from a leader read:
// the orchestrator's compare-and-swap on the routing document is what
// enforces a lock, whatever happened between this read and the start.
type preflight struct {
	doc    *kvrouting.Document
	eps    []contractnats.Endpoint
	checks []PlanCheck
	ok     bool
}

func (p *preflight) check(name string, ok bool, format string, a ...any) bool {
	p.checks = append(p.checks, PlanCheck{Name: name, OK: ok, Detail: fmt.Sprintf(format, a...)})
	p.ok = p.ok && ok
	return ok
}

// refusal is the error of a failed pre-flight (nil when it passed).
func (p *preflight) refusal(res kvrouting.Resource) error {
	if p.ok {
		return nil
	}
	var why []string
	for _, c := range p.checks {
		if !c.OK {
			why = append(why, c.Detail)
		}
	}
	return fmt.Errorf("%w: %s: %s (nothing written)", ErrPreflight, res, strings.Join(why, "; "))
}

// runPreflight checks migrating res to target; eps are the contract
// services discovered (contractnats.Discover, once for many resources).
// Errors are the deployment's (unreachable, routing store down); failed
// checks are in the result.
func runPreflight(ctx context.Context, o *conn, eps []contractnats.Endpoint, res kvrouting.Resource, target string) (*preflight, error) {
	p := &preflight{ok: true, eps: eps}
	d, err := o.leaderDoc(ctx, res)
	switch {
	case errors.Is(err, errNoDocument):
		p.check("resource exists", false, "%s has no routing document", res)
		return p, nil
	case err != nil:
		return nil, err
	}
	p.doc = d
	p.check("resource exists", true, "primary %s (routing revision %d)", d.Primary.Region, d.Revision)
	var served []string
	for _, ep := range p.eps {
		if !slices.Contains(served, ep.Region) {
			served = append(served, ep.Region)
		}
	}
	slices.Sort(served)
	switch {
	case len(served) == 0:
		p.check("target region served", true, "no contract service answered discovery: %s not checked", target)
	case !p.check("target region served", slices.Contains(served, target), "%s (served: %s)", target, strings.Join(served, ", ")):
		p.checks[len(p.checks)-1].Detail = fmt.Sprintf("unknown region %s (served: %s)", target, strings.Join(served, ", "))
		return p, nil
	}
	if !p.check("not at the target", d.Primary.Region != target, "primary %s, target %s", d.Primary.Region, target) {
		p.checks[len(p.checks)-1].Detail = "already at " + target
		return p, nil
	}
	if l := d.Primary.Lock; l.InForce(time.Now(), 0) || d.MigrationID != "" {
		p.check("not locked", false, "locked by migration %s (%s lock until %s)", d.MigrationID, l.Type, rfc(l.Expiry))
	} else {
		p.check("not locked", true, "no migration holds it")
	}
	return p, nil
}

// preflightAll runs the pre-flight of every resource of a tenant move and
// refuses the whole move, naming each refused resource (the first ten),
// when any fails: a tenant move starts all or nothing.
func preflightAll(ctx context.Context, o *conn, resources []string, target string) error {
	eps, err := contractnats.Discover(ctx, o.nc)
	if err != nil {
		return err
	}
	var refused []string
	for _, r := range resources {
		res, err := parseResource(r)
		if err != nil {
			return err
		}
		pf, err := runPreflight(ctx, o, eps, res, target)
		if err != nil {
			return err
		}
		if err := pf.refusal(res); err != nil {
			refused = append(refused, strings.TrimPrefix(err.Error(), ErrPreflight.Error()+": "))
		}
	}
	if len(refused) == 0 {
		return nil
	}
	n, more := len(refused), ""
	if n > 10 {
		more = fmt.Sprintf("; and %d more", n-10)
		refused = refused[:10]
	}
	return fmt.Errorf("%w: %d of %d resources: %s%s", ErrPreflight, n, len(resources), strings.Join(refused, "; "), more)
}

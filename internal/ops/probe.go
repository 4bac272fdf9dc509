package ops

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cutover/cutover/kvrouting"
)

// The synthetic probe (paper 000 §5.4): "acquire a lock, wait out
// convergence, confirm the lock on the read path, drive simulated reads and
// writes, and assert the outcomes — so an enforcement regression surfaces as
// a probe failure rather than a data anomaly". It exercises the lock layer
// on its own, at the routing level: a probe resource with no data.

// ProbeTimings are the deployment's read-path and lock timings, which the
// probe's resolvers and locker use as every role does (paper 001 Table 5).
type ProbeTimings struct {
	// Tiers are the TTLs of the resolvers' cache tiers.
	Tiers []time.Duration
	// ReplicationBound bounds how stale a routing mirror may be.
	ReplicationBound time.Duration
	// ClockSkew bounds the clock difference between processes.
	ClockSkew time.Duration
	// ConvergenceBuffer is the orchestrator's margin on top of the
	// convergence delay before a lock is relied on.
	ConvergenceBuffer time.Duration
	// Locks are the lock leases.
	Locks kvrouting.LockConfig
}

// ProbeRequest is `cutover probe`: run one probe cycle.
type ProbeRequest struct {
	// NATS is the deployment's URL (several comma separated).
	NATS string
	// Region is where the probe resource lives.
	Region string
	// Target is the region the probe pretends to migrate it to.
	Target string
	// Keep keeps the probe resource's routing document afterwards.
	Keep bool
	// Timeout bounds the whole probe; 0 means no bound.
	Timeout time.Duration
	// JSON prints the report as JSON instead of one line per assertion.
	JSON bool
	// Timings are the deployment's timings.
	Timings ProbeTimings
}

// ProbeAssertion is one checked outcome of a probe.
type ProbeAssertion struct {
	Stage  string `json:"stage"`
	Check  string `json:"check"`
	Region string `json:"region"`
	Want   string `json:"want"`
	Got    string `json:"got"`
	Pass   bool   `json:"pass"`
}

// ProbeReport is what a probe found, as printed with --json.
type ProbeReport struct {
	Resource         string           `json:"resource"`
	Region           string           `json:"region"`
	Target           string           `json:"target"`
	ConvergenceDelay string           `json:"convergence_delay"`
	Assertions       []ProbeAssertion `json:"assertions"`
	Failed           int              `json:"failed"`
}

// Probe registers a probe resource at r.Region, pre-locks it for a
// migration to r.Target, waits out the convergence delay, escalates to the
// hard-delete and write locks and releases; at each stage it asserts,
// through a fresh resolver and through one whose cache was warmed before
// the lock, that the lock is on the read path and that paper 001 Table 4
// holds at the source and at the locked target. It prints each assertion
// and then removes the probe resource unless r.Keep. It returns an error
// wrapping ErrUsage for a bad or repeated region, before connecting; any
// other error when the deployment cannot be reached, a lock step fails, or
// any assertion fails. Any goroutine may call it.
func Probe(ctx context.Context, r ProbeRequest, stdout, stderr io.Writer) error {
	if err := CheckRegion("region", r.Region); err != nil {
		return err
	}
	if err := CheckRegion("target", r.Target); err != nil {
		return err
	}
	if r.Region == r.Target {
		return fmt.Errorf("%w: --region and --target must differ", ErrUsage)
	}
	ctx, cancel := withTimeout(ctx, r.Timeout)
	defer cancel()
	o, st, err := dialRouting(ctx, r.NATS)
	if err != nil {
		return err
	}
	defer o.Close()
	p, err := newProber(st, r.Timings, r.Region, r.Target)
	if err != nil {
		return err
	}
	if !r.JSON {
		fmt.Fprintf(stdout, "probe %s at %s (target %s), convergence delay %s\n", p.res, p.region, p.target, p.delay)
	}
	p.print = func(a ProbeAssertion) {
		if r.JSON {
			return
		}
		if a.Pass {
			fmt.Fprintf(stdout, "PASS  %-11s  %-22s  @%-10s  %s\n", a.Stage, a.Check, a.Region, a.Got)
		} else {
			fmt.Fprintf(stdout, "FAIL  %-11s  %-22s  @%-10s  want %s, got %s\n", a.Stage, a.Check, a.Region, a.Want, a.Got)
		}
	}
	runErr := p.run(ctx)
	if runErr == nil && !r.Keep {
		if err := p.remove(ctx); err != nil {
			fmt.Fprintf(stderr, "cutover probe: could not remove %s: %v\n", p.res, err)
		}
	}
	rep := ProbeReport{Resource: p.res.String(), Region: p.region, Target: p.target, ConvergenceDelay: p.delay.String(), Assertions: p.results}
	for _, a := range p.results {
		if !a.Pass {
			rep.Failed++
		}
	}
	if r.JSON {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else if runErr == nil {
		fmt.Fprintf(stdout, "probe: %d assertions, %d failed\n", len(rep.Assertions), rep.Failed)
	}
	switch {
	case runErr != nil:
		return fmt.Errorf("probe %s: %w", p.res, runErr)
	case rep.Failed > 0:
		return fmt.Errorf("%d of %d assertions failed", rep.Failed, len(rep.Assertions))
	}
	return nil
}

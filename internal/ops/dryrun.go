package ops

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
)

// Plan is what `cutover migrate start --dry-run` found: the pre-flight of
// one migration, with nothing written.
type Plan struct {
	Resource string `json:"resource"`
	Source   string `json:"source"`
	Target   string `json:"target"`
	// Checks are the pre-flight's findings, in order; OK is true when
	// every one passed.
	Checks []PlanCheck `json:"checks"`
	OK     bool        `json:"ok"`
	// Services are the source's contract services of the resource's kind
	// with their record counts (from their slice digests).
	Services []PlanService `json:"services"`
	Records  int           `json:"records"`
	Pages    int           `json:"pages"`
	// Estimate is derived from the completed migrations in the event log
	// (nil without any).
	Estimate *PlanEstimate `json:"estimate,omitempty"`
}

// PlanCheck is one pre-flight check.
type PlanCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// PlanService is one service of the resource at the source.
type PlanService struct {
	Service string `json:"service"`
	Records int    `json:"records"`
	Pages   int    `json:"pages"`
}

// PlanEstimate is the expected write-lock window and duration, from the
// completed migrations of similar size in the event log.
type PlanEstimate struct {
	Basis          int     `json:"from_migrations"`
	WriteLockP50Ms float64 `json:"write_lock_p50_ms"`
	WriteLockMaxMs float64 `json:"write_lock_max_ms"`
	DurationP50Ms  float64 `json:"duration_p50_ms"`
	DurationNote   string  `json:"note"`
}

// DryRun runs the pre-flight of migrating r.Resource to r.Target and
// prints the plan; it writes nothing (no command, no lock, no fence).
// Errors: ErrUsage for a bad resource or target, before connecting; an
// error when the deployment cannot be reached; a "pre-flight failed" error
// after printing the plan when a check failed.
func DryRun(ctx context.Context, r StartRequest, stdout io.Writer) error {
	p, err := makePlan(ctx, r)
	if err != nil {
		return err
	}
	return p.print(stdout, r.JSON)
}

// makePlan runs the pre-flight; errors are the request's or the
// connection's (failed checks are in the plan).
func makePlan(ctx context.Context, r StartRequest) (Plan, error) {
	res, err := parseResource(r.Resource)
	if err != nil {
		return Plan{}, err
	}
	if err := CheckRegion("to", r.Target); err != nil {
		return Plan{}, err
	}
	o, err := dial(ctx, r.NATS)
	if err != nil {
		return Plan{}, err
	}
	defer o.Close()
	p := Plan{Resource: res.String(), Target: r.Target, OK: true}
	check := func(name string, ok bool, format string, a ...any) {
		p.Checks = append(p.Checks, PlanCheck{Name: name, OK: ok, Detail: fmt.Sprintf(format, a...)})
		p.OK = p.OK && ok
	}
	eps, err := contractnats.Discover(ctx, o.nc)
	if err != nil {
		return Plan{}, err
	}
	pf, err := runPreflight(ctx, o, eps, res, r.Target)
	if err != nil {
		return Plan{}, err
	}
	p.Checks, p.OK = pf.checks, pf.ok
	if pf.doc == nil || !pf.ok && pf.checks[len(pf.checks)-1].Name != "not locked" {
		// No document, an unknown region or already there: the rest is moot.
		if pf.doc != nil {
			p.Source = pf.doc.Primary.Region
		}
		return p, nil
	}
	p.Source = pf.doc.Primary.Region
	var atSource, atTarget []string
	for _, ep := range pf.eps {
		switch ep.Region {
		case p.Source:
			atSource = append(atSource, ep.Service)
		case r.Target:
			atTarget = append(atTarget, ep.Service)
		}
	}
	check("target region healthy", len(atTarget) > 0, "%d contract services answer in %s", len(atTarget), r.Target)
	for _, svc := range atSource {
		if !slices.Contains(atTarget, svc) {
			check("service "+svc+" at the target", false, "%s answers at %s, not at %s", svc, p.Source, r.Target)
		}
	}
	// Every contract service keeps authority records (contract.Participant):
	// answering its digests proves it answers the contract.
	for _, svc := range atSource {
		c := contractnats.Dial(o.nc, o.js, p.Source, svc)
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ds, err := c.Digests(dctx, res.String(), contract.Authority{})
		cancel()
		if err != nil {
			check("service "+svc+" answers", false, "digests: %v", err)
			continue
		}
		n := 0
		for _, s := range ds {
			n += int(s.Count)
		}
		pages := (n + contract.DefaultPageLimit - 1) / contract.DefaultPageLimit
		p.Services = append(p.Services, PlanService{Service: svc, Records: n, Pages: pages})
		p.Records += n
		p.Pages += pages
	}
	check("services answer the contract, with fences", len(p.Services) == len(atSource) && len(atSource) > 0,
		"%d of %d services at %s (contract %s: authority, export, import, digests)", len(p.Services), len(atSource), p.Source, contractnats.Version)
	p.Estimate = estimate(ctx, o, p.Records)
	return p, nil
}

// estimate derives the write-lock window and the duration from completed
// migrations of similar size (within 4x the records), else from all.
func estimate(ctx context.Context, o *conn, records int) *PlanEstimate {
	lasts, err := lastEvents(ctx, o.js)
	if err != nil {
		return nil
	}
	var all, similar []*events.Figures
	for _, l := range lasts {
		st := l.Event.State
		if st == nil || st.Status != events.StatusCompleted || st.Figures == nil || st.Phase == events.PhaseTenant {
			continue
		}
		f := st.Figures
		all = append(all, f)
		if f.Records <= 4*max(records, 1) && 4*f.Records >= records {
			similar = append(similar, f)
		}
	}
	basis, note := similar, "from completed migrations of similar size"
	if len(basis) == 0 {
		basis, note = all, "from all completed migrations (none of similar size)"
	}
	if len(basis) == 0 {
		return nil
	}
	wl := make([]float64, len(basis))
	tot := make([]float64, len(basis))
	for i, f := range basis {
		wl[i], tot[i] = float64(f.WriteLockMs), float64(f.TotalMs)
	}
	slices.Sort(wl)
	slices.Sort(tot)
	return &PlanEstimate{Basis: len(basis), WriteLockP50Ms: wl[len(wl)/2], WriteLockMaxMs: wl[len(wl)-1],
		DurationP50Ms: tot[len(tot)/2], DurationNote: note}
}

func (p Plan) print(w io.Writer, asJSON bool) error {
	if asJSON {
		if err := writeJSON(w, p); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "dry run: %s %s → %s (nothing written)\n", p.Resource, p.Source, p.Target)
		for _, c := range p.Checks {
			mark := "ok  "
			if !c.OK {
				mark = "FAIL"
			}
			fmt.Fprintf(w, "  %s %-44s %s\n", mark, c.Name, c.Detail)
		}
		if len(p.Services) > 0 {
			var parts []string
			for _, s := range p.Services {
				parts = append(parts, fmt.Sprintf("%s %d", s.Service, s.Records))
			}
			fmt.Fprintf(w, "  records %d in %d export pages (%s)\n", p.Records, p.Pages, strings.Join(parts, ", "))
		}
		if e := p.Estimate; e != nil {
			fmt.Fprintf(w, "  estimated write lock %.0f ms (p50; max %.0f ms), duration %.1f s (p50), %s (%d)\n",
				e.WriteLockP50Ms, e.WriteLockMaxMs, e.DurationP50Ms/1000, e.DurationNote, e.Basis)
		} else {
			fmt.Fprintln(w, "  no estimate: no completed migration in the event log yet")
		}
	}
	if !p.OK {
		return fmt.Errorf("pre-flight failed: %s", failed(p.Checks))
	}
	return nil
}

func failed(cs []PlanCheck) string {
	var out []string
	for _, c := range cs {
		if !c.OK {
			out = append(out, c.Name)
		}
	}
	return strings.Join(out, ", ")
}

// DryRunTenant runs the pre-flight of every resource of r (DryRun), prints
// each plan and a total, and writes nothing. Errors as DryRun; a failed
// pre-flight of any resource fails the whole.
func DryRunTenant(ctx context.Context, r TenantRequest, stdout io.Writer) error {
	if strings.TrimSpace(r.Tenant) == "" {
		return fmt.Errorf("%w: empty tenant", ErrUsage)
	}
	if err := CheckRegion("to", r.Target); err != nil {
		return err
	}
	resources, err := tenantResources(r.Resources, r.ResourcesFile)
	if err != nil {
		return err
	}
	var bad []string
	records := 0
	for _, res := range resources {
		p, err := makePlan(ctx, StartRequest{NATS: r.NATS, Resource: res, Target: r.Target})
		if err != nil {
			return err
		}
		if err := p.print(stdout, r.JSON); err != nil {
			bad = append(bad, res)
		}
		records += p.Records
	}
	if !r.JSON {
		fmt.Fprintf(stdout, "tenant %s: %d resources, %d records, %d failed pre-flight (nothing written)\n", r.Tenant, len(resources), records, len(bad))
	}
	if len(bad) > 0 {
		return fmt.Errorf("pre-flight failed for %s", strings.Join(bad, ", "))
	}
	return nil
}

package orchestrator

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/cutover/cutover/services/contract"
)

// PageInfo is contract.PageInfo, kept under its old name.
type PageInfo = contract.PageInfo

// Endpoint is contract.Endpoint, kept under its old name: the migration
// contract of one service at one region, as the orchestrator reaches it.
type Endpoint = contract.Endpoint

// Directory is contract.Directory, kept under its old name: it finds the
// endpoints that own resources of a kind at a region.
type Directory = contract.Directory

// LocalDirectory is an in-process Directory over contract.Participant
// values: every participant of a region serves every resource kind. Safe
// for concurrent use.
type LocalDirectory struct {
	mu      sync.Mutex
	regions map[string][]contract.Participant
}

var _ Directory = (*LocalDirectory)(nil)

// NewLocalDirectory returns an empty LocalDirectory.
func NewLocalDirectory() *LocalDirectory {
	return &LocalDirectory{regions: map[string][]contract.Participant{}}
}

// Add registers p at region, replacing a participant of the same service.
func (d *LocalDirectory) Add(region string, p contract.Participant) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ps := d.regions[region]
	for i, q := range ps {
		if q.Service() == p.Service() {
			ps[i] = p
			return
		}
	}
	d.regions[region] = append(ps, p)
}

// Endpoints implements Directory. Errors: ErrNotFound for an unknown region.
func (d *LocalDirectory) Endpoints(ctx context.Context, region, resourceKind string) ([]Endpoint, error) {
	d.mu.Lock()
	ps := append([]contract.Participant(nil), d.regions[region]...)
	d.mu.Unlock()
	if len(ps) == 0 {
		return nil, fmt.Errorf("%w: no endpoints at region %q", ErrNotFound, region)
	}
	out := make([]Endpoint, len(ps))
	for i, p := range ps {
		out[i] = localEndpoint{p: p, region: region}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Service() < out[j].Service() })
	return out, nil
}

var _ Endpoint = localEndpoint{}

type localEndpoint struct {
	p      contract.Participant
	region string
}

func (e localEndpoint) Service() string { return e.p.Service() }
func (e localEndpoint) Region() string  { return e.region }

func (e localEndpoint) Export(ctx context.Context, _ string, req contract.ExportRequest) (PageInfo, error) {
	pg, err := e.p.Export(ctx, req)
	if err != nil {
		return PageInfo{}, err
	}
	pg.Attempt = req.Attempt
	return PageInfo{Service: pg.Service, Mode: pg.Mode, SyncToken: pg.SyncToken, Cursor: pg.Cursor, Next: pg.Next,
		More: pg.More, Count: len(pg.Records), Dependents: pg.Dependents, Page: &pg}, nil
}

func (e localEndpoint) Authorize(ctx context.Context, res string, a contract.Authority) (contract.Authority, error) {
	return e.p.Authorize(ctx, res, a)
}

// Import carries the import request out at the participant.
func (e localEndpoint) Import(ctx context.Context, _ string, page PageInfo) (contract.ImportResult, error) {
	if page.Seq != 0 && page.Page == nil {
		return contract.ImportResult{}, fmt.Errorf("%w: in-process import needs the page itself", ErrInvalid)
	}
	r := contract.ImportRequest{Resource: page.Resource, Authority: page.Authority, Reset: page.Reset, Page: page.Page, Digests: page.Digests}
	if r.Resource == "" && page.Page != nil {
		r.Resource = page.Page.Resource
	}
	return e.p.Import(ctx, r)
}

func (e localEndpoint) Digests(ctx context.Context, res string, a contract.Authority) ([]contract.SliceDigest, error) {
	return e.p.Digests(ctx, res, a)
}

func (e localEndpoint) Cleanup(ctx context.Context, res string, a contract.Authority) (int, error) {
	return e.p.Cleanup(ctx, res, a)
}

var _ contract.Repairer = localEndpoint{}

// Repair implements contract.Repairer when the participant does;
// otherwise it refuses with CodeInvalid, changing nothing.
func (e localEndpoint) Repair(ctx context.Context, res string, a contract.Authority) (contract.Authority, error) {
	rp, ok := e.p.(contract.Repairer)
	if !ok {
		return contract.Authority{}, contract.Errorf(contract.CodeInvalid, "%s at %s cannot repair an authority record", e.p.Service(), e.region)
	}
	return rp.Repair(ctx, res, a)
}

// onEach calls fn for every endpoint at once and returns the first error
// in eps's order: a step waits for the slowest endpoint (one round trip to
// a region), not for their sum.
func onEach(eps []Endpoint, fn func(Endpoint) error) error {
	errs := make([]error, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Go(func() { errs[i] = fn(ep) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// endpoints are the Directory's endpoints of region for resources of kind,
// each request to them timed when the worker has a timer (WithOpTimer).
func (w *Worker) endpoints(ctx context.Context, region, kind string) ([]Endpoint, error) {
	eps, err := w.cfg.Directory.Endpoints(ctx, region, kind)
	if err != nil || w.timer == nil {
		return eps, err
	}
	out := make([]Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = timedEndpoint{Endpoint: ep, w: w}
	}
	return out, nil
}

// timedEndpoint reports how long each contract request took (Op*).
type timedEndpoint struct {
	Endpoint
	w *Worker
}

func (e timedEndpoint) Authorize(ctx context.Context, res string, a contract.Authority) (contract.Authority, error) {
	defer e.w.timed(OpAuthority)()
	return e.Endpoint.Authorize(ctx, res, a)
}

func (e timedEndpoint) Export(ctx context.Context, id string, req contract.ExportRequest) (PageInfo, error) {
	defer e.w.timed(OpExport)()
	return e.Endpoint.Export(ctx, id, req)
}

func (e timedEndpoint) Import(ctx context.Context, id string, page PageInfo) (contract.ImportResult, error) {
	defer e.w.timed(OpImport)()
	return e.Endpoint.Import(ctx, id, page)
}

func (e timedEndpoint) Digests(ctx context.Context, res string, a contract.Authority) ([]contract.SliceDigest, error) {
	defer e.w.timed(OpDigests)()
	return e.Endpoint.Digests(ctx, res, a)
}

func (e timedEndpoint) Cleanup(ctx context.Context, res string, a contract.Authority) (int, error) {
	defer e.w.timed(OpCleanup)()
	return e.Endpoint.Cleanup(ctx, res, a)
}

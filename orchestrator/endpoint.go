package orchestrator

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/cutover/cutover/services"
)

// PageInfo describes one exported page: enough to import it and to
// checkpoint the export. Over NATS the records travel in a stream message
// (Seq); in process they travel in Page.
type PageInfo struct {
	Service    string
	Mode       services.ExportMode
	SyncToken  uint64
	Cursor     uint64
	Next       uint64
	More       bool
	Count      int
	Dependents []string
	// Seq is the stream sequence of the published page (NATS transports).
	Seq uint64
	// Page is the page itself (in-process transports).
	Page *services.Page
}

// Endpoint reaches the migration contract (paper 001 §5.1) of one service
// at one region. Implementations must be safe for concurrent use.
type Endpoint interface {
	// Service names the service.
	Service() string
	// Region names the region.
	Region() string
	// Export copies one page toward the target and returns what is needed
	// to import it.
	Export(ctx context.Context, migrationID string, req services.ExportRequest) (PageInfo, error)
	// Import applies an exported page idempotently.
	Import(ctx context.Context, migrationID string, page PageInfo) (services.ImportResult, error)
	// Digests returns the per-slice digests of a resource, read through the
	// user read path.
	Digests(ctx context.Context, resource string) ([]services.SliceDigest, error)
	// SetFence sets or raises the resource's fence in the service's store.
	SetFence(ctx context.Context, resource string, f services.Fence) error
	// ClearFence clears the fence set under token.
	ClearFence(ctx context.Context, resource, token string) error
	// Cleanup deletes the resource's records at this region.
	Cleanup(ctx context.Context, resource string) (int, error)
}

// Directory finds the endpoints that own resources of a kind at a region.
type Directory interface {
	// Endpoints returns every service endpoint at region holding resources
	// of resourceKind, sorted by service name.
	Endpoints(ctx context.Context, region, resourceKind string) ([]Endpoint, error)
}

// LocalDirectory is an in-process Directory over services.Participant
// values: every participant of a region serves every resource kind. Safe
// for concurrent use.
type LocalDirectory struct {
	mu      sync.Mutex
	regions map[string][]services.Participant
}

var _ Directory = (*LocalDirectory)(nil)

// NewLocalDirectory returns an empty LocalDirectory.
func NewLocalDirectory() *LocalDirectory {
	return &LocalDirectory{regions: map[string][]services.Participant{}}
}

// Add registers p at region, replacing a participant of the same service.
func (d *LocalDirectory) Add(region string, p services.Participant) {
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
	ps := append([]services.Participant(nil), d.regions[region]...)
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
	p      services.Participant
	region string
}

func (e localEndpoint) Service() string { return e.p.Service() }
func (e localEndpoint) Region() string  { return e.region }

func (e localEndpoint) Export(ctx context.Context, _ string, req services.ExportRequest) (PageInfo, error) {
	pg, err := e.p.Export(ctx, req)
	if err != nil {
		return PageInfo{}, err
	}
	return PageInfo{Service: pg.Service, Mode: pg.Mode, SyncToken: pg.SyncToken, Cursor: pg.Cursor, Next: pg.Next,
		More: pg.More, Count: len(pg.Records), Dependents: pg.Dependents, Page: &pg}, nil
}

func (e localEndpoint) Import(ctx context.Context, _ string, page PageInfo) (services.ImportResult, error) {
	if page.Page == nil {
		return services.ImportResult{}, fmt.Errorf("%w: in-process import needs the page itself", ErrInvalid)
	}
	return e.p.Import(ctx, *page.Page)
}

func (e localEndpoint) Digests(ctx context.Context, res string) ([]services.SliceDigest, error) {
	return e.p.Digests(ctx, res)
}

func (e localEndpoint) SetFence(ctx context.Context, res string, f services.Fence) error {
	return e.p.SetFence(ctx, res, f)
}

func (e localEndpoint) ClearFence(ctx context.Context, res, tok string) error {
	return e.p.ClearFence(ctx, res, tok)
}

func (e localEndpoint) Cleanup(ctx context.Context, res string) (int, error) {
	return e.p.Cleanup(ctx, res)
}

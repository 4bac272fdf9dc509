package contract

import "context"

// PageInfo describes one exported page: enough to import it and to
// checkpoint the export. Over NATS the records travel in a stream message
// (Seq) or inline (Page); in process they travel in Page. As an import
// request it also carries what ImportRequest does.
type PageInfo struct {
	Service    string
	Mode       ExportMode
	SyncToken  uint64
	Cursor     uint64
	Next       uint64
	More       bool
	Count      int
	Dependents []string
	// Seq is the stream sequence of the published page (NATS transports).
	Seq uint64
	// Page is the page itself: in-process transports, and an inline page
	// over NATS (ExportRequest.Inline), which the import request carries.
	Page *Page
	// Resource, Authority, Reset and Digests are the import request's
	// (ImportRequest); a request with neither Seq nor Page applies no page
	// (a reset or a digests read alone).
	Resource  string
	Authority Authority
	Reset     bool
	Digests   bool
}

// Endpoint reaches the migration contract (paper 001 §5.1) of one service
// at one region, as the orchestrator uses it. Implementations must be safe
// for concurrent use by any goroutine; their errors are *Error values, as
// Participant's are.
type Endpoint interface {
	// Service names the service.
	Service() string
	// Region names the region.
	Region() string
	// Authorize installs an authority (Participant.Authorize).
	Authorize(ctx context.Context, resource string, a Authority) (Authority, error)
	// Export copies one page toward the target and returns what is needed
	// to import it.
	Export(ctx context.Context, migrationID string, req ExportRequest) (PageInfo, error)
	// Import applies an exported page idempotently (Participant.Import).
	Import(ctx context.Context, migrationID string, page PageInfo) (ImportResult, error)
	// Digests returns the per-slice digests of a resource, read through the
	// user read path (Participant.Digests).
	Digests(ctx context.Context, resource string, a Authority) ([]SliceDigest, error)
	// Cleanup deletes the resource's records at this region under a
	// (Participant.Cleanup).
	Cleanup(ctx context.Context, resource string, a Authority) (int, error)
}

// Directory finds the endpoints that own resources of a kind at a region.
// Implementations must be safe for concurrent use by any goroutine.
type Directory interface {
	// Endpoints returns every service endpoint at region holding resources
	// of resourceKind, sorted by service name.
	Endpoints(ctx context.Context, region, resourceKind string) ([]Endpoint, error)
}

// RegionProber is implemented by a Directory that can tell whether a
// region is served at all: the orchestrator asks before a migration
// starts, and refuses a target that no deployment serves rather than lock
// the resource and fail its copy. Implementations must be safe for
// concurrent use by any goroutine.
type RegionProber interface {
	// ProbeRegion returns nil when every service owning resources of
	// resourceKind answers at region, a *Error with CodeNotFound when one
	// of them (or the kind itself) has no server there, and any other
	// error when it cannot tell.
	ProbeRegion(ctx context.Context, region, resourceKind string) error
}

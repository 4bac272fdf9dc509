package contract

import (
	"context"
	"time"
)

// PageInfo describes one exported page: enough to import it and to
// checkpoint the export. Over NATS the records travel in a stream message
// (Seq); in process they travel in Page.
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
	// Grant is the import grant's token the page is imported under
	// (ImportGate); "" imports ungated.
	Grant string
	// GrantUntil, with Grant, grants (or renews) Grant's import grant until
	// then before the page is applied: GrantImport and Import in one
	// request. A retired token is refused as GrantImport refuses it.
	GrantUntil time.Time
	// Seal ends the copy at the target in the same request (issue 16): after
	// the page (if any) is applied, Grant's import grant is revoked and its
	// token retired, and the reply carries the target's slice digests read
	// after that (ImportResult.Sealed). A seal needs no page: PageInfo with
	// Resource, Grant and Seal and neither Seq nor Page seals alone.
	Seal bool
	// Resource names the resource; required for a seal without a page.
	Resource string
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
	// Export copies one page toward the target and returns what is needed
	// to import it.
	Export(ctx context.Context, migrationID string, req ExportRequest) (PageInfo, error)
	// Import applies an exported page idempotently.
	Import(ctx context.Context, migrationID string, page PageInfo) (ImportResult, error)
	// Digests returns the per-slice digests of a resource, read through the
	// user read path.
	Digests(ctx context.Context, resource string) ([]SliceDigest, error)
	// SetFence sets or raises the resource's fence in the service's store.
	SetFence(ctx context.Context, resource string, f Fence) error
	// ClearFence clears the fence set under token.
	ClearFence(ctx context.Context, resource, token string) error
	// Cleanup deletes the resource's records at this region, never while
	// the region is the resource's primary or a migration's target
	// (Participant.Cleanup).
	Cleanup(ctx context.Context, resource string) (int, error)
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

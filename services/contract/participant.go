package contract

import "context"

// Participant is the migration contract of one service at one region
// (paper 001 §5.1). Implementations must be safe for concurrent use by any
// goroutine.
//
// Every error crossing the contract is an *Error with a Code (see
// errors.go); every operation is idempotent, so a caller may retry any of
// them.
type Participant interface {
	// Service names the service ("messages").
	Service() string
	// Export returns one page of the resource's records (paper 001 (A2)).
	Export(ctx context.Context, req ExportRequest) (Page, error)
	// Import applies a page idempotently (paper 001 (A3)): replays converge,
	// a tombstone beats any older live copy.
	Import(ctx context.Context, page Page) (ImportResult, error)
	// Digests returns the per-slice digests of the resource's live records,
	// read through the same path as user reads.
	Digests(ctx context.Context, resource string) ([]SliceDigest, error)
	// ReadSlice returns the live records with CreatedAt in [from, to), via
	// the user read path (for a content comparison that pinpoints a diff).
	ReadSlice(ctx context.Context, resource string, from, to int64) ([]Record, error)
	// SetFence sets (or raises) the per-resource fence in the service's own
	// store; every later mutation checks it atomically.
	SetFence(ctx context.Context, resource string, f Fence) error
	// ClearFence removes the fence set under token (rollback).
	ClearFence(ctx context.Context, resource string, token string) error
	// Cleanup deletes the resource's records at this region (target cleanup
	// after a rollback, source cleanup after the window) and returns how
	// many. It must delete nothing, and return 0, while the resource's
	// routing document names this region as its primary or as the target
	// of a migration in flight: the participant decides that under the
	// same per-resource lock as the deletion, from a leader read of the
	// routing document (services.RoutingCleanupGuard), so that no late,
	// replayed or mistaken request can delete live data. A participant that
	// cannot tell (routing unreadable, no guard configured) fails and
	// deletes nothing. The conformance kit checks this rule
	// (contracttest, CleanupSparesPrimaryAndTarget).
	Cleanup(ctx context.Context, resource string) (int, error)
}

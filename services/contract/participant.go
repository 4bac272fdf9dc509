package contract

import "context"

// Participant is the migration contract of one service at one region
// (paper 001 §5.1), version 2 (docs/participant.md). Implementations must
// be safe for concurrent use by any goroutine.
//
// Every request that acts on a resource carries an Authority: the
// participant joins it into the resource's authority record and decides
// the request by the result (Join, Admit), atomically with what the request
// does. Every error crossing the contract is an *Error with a Code (see
// errors.go); every operation is idempotent, so a caller may retry any of
// them.
type Participant interface {
	// Service names the service ("messages").
	Service() string
	// Authorize installs a at resource (Join) and returns the authority
	// held afterwards; a zero a only reads it. A stale or conflicting a
	// changes nothing: CodeConflict.
	Authorize(ctx context.Context, resource string, a Authority) (Authority, error)
	// Export returns one page of the resource's records (paper 001 (A2))
	// under req.Authority, installed first (Admit: a historical export
	// needs tombstone deletes or the write fence in force, a delta export
	// the write fence). A first historical page (SyncToken 0) issues the
	// sync token after the authority is in force.
	Export(ctx context.Context, req ExportRequest) (Page, error)
	// Import applies req under req.Authority (an importing store):
	// optionally resets the resource first, applies the page idempotently
	// (paper 001 (A3): replays converge, a tombstone beats any older live
	// copy), and optionally answers with the digests.
	Import(ctx context.Context, req ImportRequest) (ImportResult, error)
	// Digests returns the per-slice digests of the resource's live
	// records, read through the same path as user reads; a non-zero a is
	// installed first (a stale one: CodeConflict).
	Digests(ctx context.Context, resource string, a Authority) ([]SliceDigest, error)
	// ReadSlice returns the live records with CreatedAt in [from, to), via
	// the user read path (for a content comparison that pinpoints a diff).
	ReadSlice(ctx context.Context, resource string, from, to int64) ([]Record, error)
	// Cleanup deletes the resource's records here (the target after a
	// rollback, the source after the cleanup window) under a, which must
	// make this store a secondary (Admit): a primary's or an importing
	// target's records are never removed, however late the request.
	// Refused: CodeConflict, nothing deleted.
	Cleanup(ctx context.Context, resource string, a Authority) (int, error)
}

// Repairer is the operator's side of the authority record (`cutover fence
// clear`): Repair replaces resource's record with a whatever it holds, even
// a higher revision (a routing stream recreated, a record corrupted), and
// returns the record it replaced. The caller — the orchestrator, the only
// identity allowed to send it — checks the operators' approvals and
// records the audit event. Implementations must be safe for concurrent
// use.
type Repairer interface {
	Repair(ctx context.Context, resource string, a Authority) (Authority, error)
}

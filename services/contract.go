// Package services holds the migration contract (paper 001 §5.1) that every
// resource-owning service implements, the reference chat services, the
// user-facing HTTP API and the client SDK.
//
// A service takes part in migration through Participant: export pages of one
// resource's records from a sync token, import pages idempotently, expose
// per-time-slice digests and slice reads for validation through its user read
// path, clean a resource up at a region, and set / clear the per-resource
// fence in its own store (DESIGN.md "Two layers of enforcement").
package services

import (
	"context"
	"fmt"
	"time"

	"github.com/cutover/cutover/services/store"
)

// Record is one service-owned record of a resource (paper 001 §3.2).
type Record = store.Record

// SliceDigest is a count and an order-independent content hash of the live
// records of one time slice, maintained at write time.
type SliceDigest = store.SliceDigest

// Fence is the per-resource fence a service keeps in its own store.
type Fence = store.Fence

// ExportMode selects historical or delta export (paper 001 (A2)).
type ExportMode uint8

// Export modes.
const (
	// Historical returns the records committed up to the sync token; the
	// first historical request (SyncToken 0) issues the token.
	Historical ExportMode = iota + 1
	// Delta returns every record created, changed or tombstoned after the
	// sync token.
	Delta
)

// String returns "historical" or "delta".
func (m ExportMode) String() string {
	switch m {
	case Historical:
		return "historical"
	case Delta:
		return "delta"
	}
	return fmt.Sprintf("ExportMode(%d)", uint8(m))
}

// ExportRequest asks for one page of one resource's records.
type ExportRequest struct {
	Resource string     `msgpack:"res"`
	Mode     ExportMode `msgpack:"mode"`
	// SyncToken: for Historical, 0 to issue a new token (the first page), or
	// the token the first page issued; for Delta, the token to export from.
	SyncToken uint64 `msgpack:"tok"`
	// Cursor is the Next of the previous page (0 for the first page).
	Cursor uint64 `msgpack:"cur"`
	// Limit caps the records in the page (0 = DefaultPageLimit).
	Limit int `msgpack:"lim"`
}

// DefaultPageLimit is the page size when a request sets none.
const DefaultPageLimit = 500

// Page is one export page.
type Page struct {
	Service  string     `msgpack:"svc"`
	Resource string     `msgpack:"res"`
	Mode     ExportMode `msgpack:"mode"`
	// SyncToken is the token this export runs under (issued by the first
	// historical page).
	SyncToken uint64 `msgpack:"tok"`
	// Cursor is the request's cursor; Next is the cursor for the next page.
	Cursor uint64 `msgpack:"cur"`
	Next   uint64 `msgpack:"next"`
	// More reports whether another page follows.
	More    bool     `msgpack:"more"`
	Records []Record `msgpack:"recs"`
	// Dependents are resources referenced by records of this page that
	// migrate on their own (child migrations), e.g. "media/m1".
	Dependents []string `msgpack:"deps,omitempty"`
}

// ImportResult reports what an import applied.
type ImportResult struct {
	// Applied is how many records changed the target; a replayed page
	// applies 0.
	Applied int `msgpack:"applied"`
	Total   int `msgpack:"total"`
}

// Participant is the migration contract of one service at one region.
// Implementations must be safe for concurrent use.
//
// Errors crossing the contract are *Error values with a Code (see errors.go).
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
	// after a rollback, source cleanup after the window).
	Cleanup(ctx context.Context, resource string) (int, error)
}

// FenceFor builds the fence for a lock: level, token and the lock's expiry
// plus the enforcers' skew (the fence holds as long as any enforcer honours
// the lock; kvrouting.Lock.InForce).
func FenceFor(level store.FenceLevel, token string, expiry time.Time, skew time.Duration) Fence {
	return Fence{Level: level, Token: token, Expiry: expiry.Add(skew)}
}

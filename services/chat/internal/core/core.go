// Package core is the plumbing the chat reference services share: one
// service's store in one region, the migration contract over it, and the user
// path that applies a kvrouting.Decision before any storage mutation (paper
// 001 §5.2, Table 4).
package core

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// Resource kinds of the chat services.
const (
	// KindConversation is the kind of a conversation resource ("conv/<id>").
	KindConversation = "conv"
	// KindMedia is the kind of a media resource ("media/<id>"), a dependent
	// resource with its own routing document.
	KindMedia = "media"
)

// ConvResource returns the store resource of conversation id.
func ConvResource(id string) string { return KindConversation + "/" + id }

// MediaResource returns the store resource of media id.
func MediaResource(id string) string { return KindMedia + "/" + id }

// stripes is the number of per-resource mutexes that order the tombstone path
// against fence changes (see Core.tombstone).
const stripes = 64

// maxTombstoneAttempts bounds the tombstone path's retries when concurrent
// updates keep moving the record's version.
const maxTombstoneAttempts = 8

// Core is one service's records at one region. Safe for concurrent use.
type Core struct {
	name  string
	st    *store.Store
	sp    *services.StoreParticipant
	clock func() time.Time
	mu    [stripes]sync.Mutex
}

// New returns the core of service over st. clock must be the store's clock
// (nil: time.Now); it stamps tombstones written by the decision path.
func New(service string, st *store.Store, clock func() time.Time, opts services.StoreParticipantOptions) *Core {
	if clock == nil {
		clock = time.Now
	}
	return &Core{name: service, st: st, sp: services.NewStoreParticipant(service, st, opts), clock: clock}
}

// Name returns the service name.
func (c *Core) Name() string { return c.name }

// Store returns the service's store.
func (c *Core) Store() *store.Store { return c.st }

// Now returns the service clock's time.
func (c *Core) Now() time.Time { return c.clock() }

func (c *Core) lock(res string) func() {
	h := fnv.New32a()
	_, _ = h.Write([]byte(res))
	m := &c.mu[h.Sum32()%stripes]
	m.Lock()
	return m.Unlock
}

// LockedError is the 423 for a rejecting decision: Retry-After is the
// decision's hint (paper 001 §4.4) — under a write lock the expected rest of
// Phase 3, never the lease; at a region that is not the primary, 0: the
// resource has moved, resolve its routing again (issue 15 #6).
func LockedError(d kvrouting.Decision) *contract.Error {
	reason := d.Reason
	if reason == "" {
		reason = "locked"
	}
	msg := fmt.Sprintf("resource locked (%s) while a migration switches regions; retry in a moment", reason)
	switch {
	case d.Primary != "" && (d.Reason == kvrouting.ReasonNotAuthoritative || d.Reason == kvrouting.ReasonLockedSecondary):
		msg = fmt.Sprintf("resource has moved: it is served by region %s; resolve it again", d.Primary)
	case d.Reason == kvrouting.ReasonNotAuthoritative || d.Reason == kvrouting.ReasonLockedSecondary:
		msg = "resource has moved to another region; resolve it again"
	}
	return &contract.Error{Code: contract.CodeLocked, Message: msg, RetryAfter: d.RetryHint, Lock: reason}
}

// Check applies the outcome of d to an operation of class op before
// anything is read or written: nil to go ahead, the 423 for Reject, and an
// internal error for a Tombstone outcome on anything but a delete
// (kvrouting.Decide never produces one).
func Check(d kvrouting.Decision, op kvrouting.OpClass) error {
	switch d.Outcome {
	case kvrouting.Allow:
		return nil
	case kvrouting.Reject:
		return LockedError(d)
	case kvrouting.Tombstone:
		if op == kvrouting.OpDelete {
			return nil
		}
		return contract.Errorf(contract.CodeInternal, "decision %s for a %s operation", d.Outcome, op)
	}
	return contract.Errorf(contract.CodeInternal, "unknown decision outcome %s", d.Outcome)
}

// Get returns the live record id of resource. A read routed by a revision
// (services.SetRouted) is refused as moved where the store's fence says
// that routing is too old. Errors: *contract.Error (not_found for a missing
// or deleted record, locked "moved", invalid, internal).
func (c *Core) Get(ctx context.Context, resource, id string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, services.ToError(err)
	}
	r, err := c.st.GetRouted(resource, id, services.RoutedRevision(ctx, resource))
	if err != nil {
		return store.Record{}, services.ToError(err)
	}
	return r, nil
}

// List returns up to limit live records of kind after the position
// (afterCreated, afterID), in (CreatedAt, ID) order. Errors: *contract.Error.
func (c *Core) List(ctx context.Context, resource, kind string, afterCreated int64, afterID string, limit int) ([]store.Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, services.ToError(err)
	}
	recs, err := c.st.ListRouted(resource, kind, afterCreated, afterID, limit, services.RoutedRevision(ctx, resource))
	if err != nil {
		return nil, services.ToError(err)
	}
	return recs, nil
}

// ListAll returns every live record of kind (paged internally).
func (c *Core) ListAll(ctx context.Context, resource, kind string) ([]store.Record, error) {
	const page = 1000
	var out []store.Record
	var afterC int64
	var afterID string
	for {
		recs, err := c.List(ctx, resource, kind, afterC, afterID, page)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
		if len(recs) < page {
			return out, nil
		}
		last := recs[len(recs)-1]
		afterC, afterID = last.CreatedAt, last.ID
	}
}

// Create writes a new record under decision d (a new write). A record that
// already exists is returned with store.ErrExists wrapped, so that a retried
// post can compare content; a deleted id gives store.ErrDeleted wrapped.
// Other errors are *contract.Error (locked for a rejecting decision or an
// active write fence, invalid, internal). Use services.ToError on the result.
func (c *Core) Create(ctx context.Context, d kvrouting.Decision, resource string, rec store.Record) (store.Record, error) {
	if err := Check(d, kvrouting.OpNewWrite); err != nil {
		return store.Record{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.Record{}, services.ToError(err)
	}
	r, err := c.st.PutRouted(resource, rec, true, d.Revision)
	if errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrDeleted) {
		return r, err
	}
	if err != nil {
		return store.Record{}, services.ToError(err)
	}
	return r, nil
}

// Update replaces the content of a live record under decision d (an update
// when op is kvrouting.OpUpdate; mark-read style upserts pass
// kvrouting.OpNewWrite). Errors: *contract.Error (locked, not_found,
// invalid, internal).
func (c *Core) Update(ctx context.Context, d kvrouting.Decision, op kvrouting.OpClass, resource string, rec store.Record) (store.Record, error) {
	if err := Check(d, op); err != nil {
		return store.Record{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.Record{}, services.ToError(err)
	}
	r, err := c.st.PutRouted(resource, rec, false, d.Revision)
	if err != nil {
		return store.Record{}, services.ToError(err)
	}
	return r, nil
}

// Upsert creates the record, or updates it if it is live, under decision d.
// A tombstoned id stays deleted: store.ErrDeleted wrapped. Errors otherwise
// as Update.
func (c *Core) Upsert(ctx context.Context, d kvrouting.Decision, resource string, rec store.Record) (store.Record, error) {
	for range 4 {
		r, err := c.Create(ctx, d, resource, rec)
		if !errors.Is(err, store.ErrExists) {
			return r, err
		}
		r, err = c.Update(ctx, d, kvrouting.OpNewWrite, resource, rec)
		if err == nil || services.ToError(err).Code != contract.CodeNotFound {
			return r, err
		}
		// Deleted between the two calls: try creating again.
	}
	return store.Record{}, contract.Errorf(contract.CodeConflict, "record %q changed concurrently; retry", rec.ID)
}

// Delete deletes a record under decision d (paper 001 Table 4):
//
//   - Allow: the store decides by its fence, atomically: a hard-delete fence
//     turns the delete into a tombstone, a write fence refuses it (423),
//     otherwise the record is removed physically;
//   - Tombstone: a tombstone is written even when the store has no fence
//     (the routing lock alone requires it, paper 001 §4.3); an active write
//     fence still refuses it;
//   - Reject: 423, nothing touched.
//
// Errors: *contract.Error (locked, not_found, invalid, internal).
func (c *Core) Delete(ctx context.Context, d kvrouting.Decision, resource, id string) (store.DeleteResult, error) {
	if err := Check(d, kvrouting.OpDelete); err != nil {
		return store.DeleteResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.DeleteResult{}, services.ToError(err)
	}
	if d.Outcome == kvrouting.Tombstone {
		res, err := c.tombstone(resource, id, d.Revision)
		res.Tombstoned = err == nil
		return res, err
	}
	res, err := c.st.DeleteRouted(resource, id, false, d.Revision)
	if err != nil {
		return store.DeleteResult{}, services.ToError(err)
	}
	return res, nil
}

// DeleteKeepID deletes a record under decision d like Delete, except that
// the record always leaves a tombstone, so its id stays reserved for the
// tombstone TTL (a client idempotency key must not be reused by a late
// retry). The content is stripped at once either way (paper 001 §3.2: the
// delete is user-visible immediately, storage reclamation comes later).
// DeleteResult.Tombstoned reports whether the migration protocol demanded
// the tombstone (a Tombstone decision or an active hard-delete fence), not
// merely this service's policy. Errors as Delete.
func (c *Core) DeleteKeepID(ctx context.Context, d kvrouting.Decision, resource, id string) (store.DeleteResult, error) {
	if err := Check(d, kvrouting.OpDelete); err != nil {
		return store.DeleteResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.DeleteResult{}, services.ToError(err)
	}
	res, err := c.tombstone(resource, id, d.Revision)
	if err != nil {
		return store.DeleteResult{}, err
	}
	res.Tombstoned = res.Tombstoned || d.Outcome == kvrouting.Tombstone
	return res, nil
}

// tombstone writes a tombstone for the live record id unless a write fence
// is active (then 423), in one atomic store step (store.DeleteTombstone:
// fence check, content stripped, a new change sequence so the delta export
// carries it, TTL index). Tombstoned in the result is true when the store's
// hard-delete fence was active, i.e. the migration protocol itself demanded
// the tombstone; that flag is informational only.
func (c *Core) tombstone(resource, id string, routedRev uint64) (store.DeleteResult, error) {
	f, err := c.st.GetFence(resource)
	if err != nil {
		return store.DeleteResult{}, services.ToError(err)
	}
	fenced := f.Active(c.clock()) && f.Level == store.FenceHardDelete
	res, err := c.st.DeleteRouted(resource, id, true, routedRev)
	if err != nil {
		return store.DeleteResult{}, services.ToError(err)
	}
	res.Tombstoned = fenced
	return res, nil
}

// Participant returns the migration contract of this service.
func (c *Core) Participant() *Participant { return &Participant{c: c} }

// Store returns the service's store (contractnats keeps its import
// checkpoints there, durably).
func (p *Participant) Store() *store.Store { return p.c.st }

// Participant is a service's migration contract: the shared
// services.StoreParticipant, with fence changes ordered against the
// decision-driven tombstone path.
type Participant struct{ c *Core }

var _ contract.Participant = (*Participant)(nil)

// Service implements contract.Participant.
func (p *Participant) Service() string { return p.c.name }

// Export implements contract.Participant.
func (p *Participant) Export(ctx context.Context, req contract.ExportRequest) (contract.Page, error) {
	return p.c.sp.Export(ctx, req)
}

// Import implements contract.Participant.
func (p *Participant) Import(ctx context.Context, page contract.Page) (contract.ImportResult, error) {
	return p.c.sp.Import(ctx, page)
}

// Digests implements contract.Participant.
func (p *Participant) Digests(ctx context.Context, resource string) ([]contract.SliceDigest, error) {
	return p.c.sp.Digests(ctx, resource)
}

// ReadSlice implements contract.Participant.
func (p *Participant) ReadSlice(ctx context.Context, resource string, from, to int64) ([]contract.Record, error) {
	return p.c.sp.ReadSlice(ctx, resource, from, to)
}

// SetFence implements contract.Participant. It waits for a tombstone in
// flight on the resource, so that once it returns every later delete sees
// the fence.
func (p *Participant) SetFence(ctx context.Context, resource string, f contract.Fence) error {
	unlock := p.c.lock(resource)
	defer unlock()
	return p.c.sp.SetFence(ctx, resource, f)
}

// ClearFence implements contract.Participant.
func (p *Participant) ClearFence(ctx context.Context, resource, token string) error {
	unlock := p.c.lock(resource)
	defer unlock()
	return p.c.sp.ClearFence(ctx, resource, token)
}

// GrantImport implements contract.ImportGate.
func (p *Participant) GrantImport(ctx context.Context, resource, token string, expiry time.Time) error {
	return p.c.sp.GrantImport(ctx, resource, token, expiry)
}

// ResetForCopy implements contract.ImportGate.
func (p *Participant) ResetForCopy(ctx context.Context, resource, token string) (int, error) {
	unlock := p.c.lock(resource)
	defer unlock()
	return p.c.sp.ResetForCopy(ctx, resource, token)
}

// RevokeImport implements contract.ImportGate.
func (p *Participant) RevokeImport(ctx context.Context, resource, token string) error {
	return p.c.sp.RevokeImport(ctx, resource, token)
}

// ForceClearFence implements contract.FenceAdmin (`cutover fence clear`).
func (p *Participant) ForceClearFence(ctx context.Context, resource string) (contract.Fence, error) {
	unlock := p.c.lock(resource)
	defer unlock()
	return p.c.sp.ForceClearFence(ctx, resource)
}

// Cleanup implements contract.Participant.
func (p *Participant) Cleanup(ctx context.Context, resource string) (int, error) {
	unlock := p.c.lock(resource)
	defer unlock()
	return p.c.sp.Cleanup(ctx, resource)
}

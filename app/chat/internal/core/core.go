// Package core is the plumbing the chat reference services share: one
// service's store in one region, the migration contract over it, and the user
// path that applies a kvrouting.Decision before any storage mutation (paper
// 001 §5.2, Table 4).
package core

import (
	"context"
	"errors"
	"time"

	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/httproute"
	"github.com/cutover/cutover/services/participant"
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

// Core is one service's records at one region. Safe for concurrent use.
type Core struct {
	name  string
	st    *store.Store // nil on the participant kit
	recs  records
	part  contractParticipant
	clock func() time.Time
}

// contractParticipant is the contract with the operator's repair.
type contractParticipant interface {
	contract.Participant
	contract.Repairer
}

// New returns the core of service over the Pebble store st. clock must be
// the store's clock (nil: time.Now); it stamps tombstones written by the
// decision path.
func New(service string, st *store.Store, clock func() time.Time, opts services.StoreParticipantOptions) *Core {
	if clock == nil {
		clock = time.Now
	}
	return &Core{name: service, st: st, recs: pebbleRecords{st}, part: services.NewStoreParticipant(service, st, opts), clock: clock}
}

// NewKit returns the core of service over the participant kit p (a team's
// own database: services/pgstore). clock must be the kit's clock (nil:
// time.Now).
func NewKit(service string, p *participant.Participant, clock func() time.Time) *Core {
	if clock == nil {
		clock = time.Now
	}
	return &Core{name: service, recs: kitRecords{p}, part: p, clock: clock}
}

// Name returns the service name.
func (c *Core) Name() string { return c.name }

// Store returns the service's Pebble store; nil on the participant kit.
func (c *Core) Store() *store.Store { return c.st }

// Now returns the service clock's time.
func (c *Core) Now() time.Time { return c.clock() }

// LockedError is the 423 for a rejecting decision (httproute.Refusal).
func LockedError(d kvrouting.Decision) *contract.Error {
	d.Outcome = kvrouting.Reject
	return httproute.Refusal(d)
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

// Get returns the live record id of resource. A read routed by an
// authority (services.SetRouted) is admitted by the store against its own
// record (contract.Admit): refused as moved where that routing is too old
// or the store no longer the resource's location. Errors: *contract.Error
// (not_found for a missing or deleted record, locked "moved", invalid,
// internal).
func (c *Core) Get(ctx context.Context, resource, id string) (store.Record, error) {
	if err := ctx.Err(); err != nil {
		return store.Record{}, services.ToError(err)
	}
	r, err := c.recs.GetAt(ctx, resource, id, services.RoutedAuthority(ctx, resource))
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
	recs, err := c.recs.ListAt(ctx, resource, kind, afterCreated, afterID, limit, services.RoutedAuthority(ctx, resource))
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
	r, err := c.recs.PutAt(ctx, resource, rec, true, d.Authority)
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
	r, err := c.recs.PutAt(ctx, resource, rec, false, d.Authority)
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

// Delete deletes a record under decision d (paper 001 Table 4): a
// rejecting decision is the 423 and touches nothing; otherwise the store
// admits the delete against its own authority record joined with d's
// (contract.Admit), in the batch that deletes: a tombstone where tombstone
// deletes are in force (the hard-delete lock), a refusal under the write
// fence, a physical removal otherwise. Errors: *contract.Error (locked,
// not_found, invalid, internal).
func (c *Core) Delete(ctx context.Context, d kvrouting.Decision, resource, id string) (store.DeleteResult, error) {
	return c.delete(ctx, d, resource, id, false)
}

// DeleteKeepID deletes a record under decision d like Delete, except that
// the record always leaves a tombstone, so its id stays reserved for the
// tombstone TTL (a client idempotency key must not be reused by a late
// retry). The content is stripped at once either way (paper 001 §3.2: the
// delete is user-visible immediately, storage reclamation comes later).
// DeleteResult.Tombstoned reports whether the migration protocol demanded
// the tombstone, not merely this service's policy. Errors as Delete.
func (c *Core) DeleteKeepID(ctx context.Context, d kvrouting.Decision, resource, id string) (store.DeleteResult, error) {
	return c.delete(ctx, d, resource, id, true)
}

func (c *Core) delete(ctx context.Context, d kvrouting.Decision, resource, id string, keepID bool) (store.DeleteResult, error) {
	if err := Check(d, kvrouting.OpDelete); err != nil {
		return store.DeleteResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.DeleteResult{}, services.ToError(err)
	}
	// A Tombstone decision writes a tombstone whatever the store's record
	// says (the routing document's hard-delete lock may not have reached it
	// yet; d.Authority, joined into it, normally brings it along).
	res, err := c.recs.DeleteAt(ctx, resource, id, keepID || d.Outcome == kvrouting.Tombstone, d.Authority)
	if err != nil {
		return store.DeleteResult{}, services.ToError(err)
	}
	res.Tombstoned = res.Tombstoned || d.Outcome == kvrouting.Tombstone
	return res, nil
}

// Participant returns the migration contract of this service.
func (c *Core) Participant() *Participant { return &Participant{c: c} }

// Store returns the service's Pebble store (contractnats keeps its import
// checkpoints there, durably); nil on the participant kit.
func (p *Participant) Store() *store.Store { return p.c.st }

// Held returns the authority record resource holds here (checkers).
func (p *Participant) Held(ctx context.Context, resource string) (contract.Authority, error) {
	return p.c.recs.Held(ctx, resource)
}

// Records returns every record of resource here, with the tombstones
// (checkers).
func (p *Participant) Records(ctx context.Context, resource string) ([]store.Record, error) {
	return p.c.recs.Records(ctx, resource)
}

// Participant is a service's migration contract: the shared
// services.StoreParticipant, or the participant kit.
type Participant struct{ c *Core }

var (
	_ contract.Participant = (*Participant)(nil)
	_ contract.Repairer    = (*Participant)(nil)
)

// Service implements contract.Participant.
func (p *Participant) Service() string { return p.c.name }

// Authorize implements contract.Participant.
func (p *Participant) Authorize(ctx context.Context, resource string, a contract.Authority) (contract.Authority, error) {
	return p.c.part.Authorize(ctx, resource, a)
}

// Repair implements contract.Repairer (`cutover fence clear`).
func (p *Participant) Repair(ctx context.Context, resource string, a contract.Authority) (contract.Authority, error) {
	return p.c.part.Repair(ctx, resource, a)
}

// Export implements contract.Participant.
func (p *Participant) Export(ctx context.Context, req contract.ExportRequest) (contract.Page, error) {
	return p.c.part.Export(ctx, req)
}

// Import implements contract.Participant.
func (p *Participant) Import(ctx context.Context, req contract.ImportRequest) (contract.ImportResult, error) {
	return p.c.part.Import(ctx, req)
}

// Digests implements contract.Participant.
func (p *Participant) Digests(ctx context.Context, resource string, a contract.Authority) ([]contract.SliceDigest, error) {
	return p.c.part.Digests(ctx, resource, a)
}

// ReadSlice implements contract.Participant.
func (p *Participant) ReadSlice(ctx context.Context, resource string, from, to int64) ([]contract.Record, error) {
	return p.c.part.ReadSlice(ctx, resource, from, to)
}

// Cleanup implements contract.Participant.
func (p *Participant) Cleanup(ctx context.Context, resource string, a contract.Authority) (int, error) {
	return p.c.part.Cleanup(ctx, resource, a)
}

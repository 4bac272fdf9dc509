package services

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// StoreParticipantOptions configures NewStoreParticipant.
type StoreParticipantOptions struct {
	// Discover returns the dependent resources a record references (e.g. a
	// message's media). nil means the record's Refs.
	Discover func(contract.Record) []string
	// MaxPageBytes caps the encoded size of a page's record data (default
	// 512 KiB) so a page always fits a NATS message.
	MaxPageBytes int
	// KeepOnCleanup is asked under the store's resource lock before
	// Cleanup deletes anything: true keeps the records (Cleanup returns 0).
	// It answers from routing: "this region is the resource's primary, or
	// a migration's target" (RoutingCleanupGuard), the contract's rule for
	// Cleanup (contract.Participant.Cleanup). Required for Cleanup: without
	// it Cleanup deletes nothing and fails with CodeInternal.
	KeepOnCleanup func(ctx context.Context, resource string) (bool, error)
}

// StoreParticipant implements contract.Participant over a store.Store: the
// shared implementation the reference services embed. A service whose
// storage is not a store.Store implements contract.Participant itself and
// proves it with contracttest.Run.
type StoreParticipant struct {
	service string
	st      *store.Store
	opts    StoreParticipantOptions
}

var _ contract.Participant = (*StoreParticipant)(nil)

// NewStoreParticipant returns the contract of service over st.
func NewStoreParticipant(service string, st *store.Store, opts StoreParticipantOptions) *StoreParticipant {
	if opts.MaxPageBytes <= 0 {
		opts.MaxPageBytes = 512 << 10
	}
	return &StoreParticipant{service: service, st: st, opts: opts}
}

// Service implements contract.Participant.
func (p *StoreParticipant) Service() string { return p.service }

// Store returns the underlying store.
func (p *StoreParticipant) Store() *store.Store { return p.st }

// Export implements contract.Participant. A historical export with
// SyncToken 0 issues the token: the store's current change sequence (paper
// 001 (A2): everything committed before it is historical, everything after
// is delta).
func (p *StoreParticipant) Export(ctx context.Context, req contract.ExportRequest) (contract.Page, error) {
	if err := ctx.Err(); err != nil {
		return contract.Page{}, ToError(err)
	}
	if req.Resource == "" {
		return contract.Page{}, contract.Errorf(contract.CodeInvalid, "export: empty resource")
	}
	if req.Limit <= 0 {
		req.Limit = contract.DefaultPageLimit
	}
	if req.Limit > 10_000 {
		return contract.Page{}, contract.Errorf(contract.CodeInvalid, "page limit %d above 10000", req.Limit)
	}
	page := contract.Page{Service: p.service, Resource: req.Resource, Mode: req.Mode, SyncToken: req.SyncToken, Cursor: req.Cursor}
	var upto uint64
	switch req.Mode {
	case contract.Historical:
		if req.SyncToken == 0 {
			if req.Cursor != 0 {
				return contract.Page{}, contract.Errorf(contract.CodeInvalid, "historical export with a cursor but no sync token")
			}
			tok, err := p.st.SyncToken(req.Resource)
			if err != nil {
				return contract.Page{}, ToError(err)
			}
			page.SyncToken = tok
		}
		upto = page.SyncToken
		if upto == 0 { // nothing was ever written: an empty, final page
			return page, nil
		}
		if req.Cursor >= upto {
			page.Next = req.Cursor
			return page, nil
		}
	case contract.Delta:
		if req.Cursor < req.SyncToken {
			req.Cursor = req.SyncToken
			page.Cursor = req.SyncToken
		}
	default:
		return contract.Page{}, contract.Errorf(contract.CodeInvalid, "export mode %d", req.Mode)
	}
	recs, last, more, err := p.st.Changes(req.Resource, req.Cursor, upto, req.Limit)
	if err != nil {
		return contract.Page{}, ToError(err)
	}
	// Keep the page under the byte cap; the rest follows in the next page.
	size := 0
	for i, r := range recs {
		size += len(r.Data) + len(r.ID) + len(r.Kind) + 64
		for _, ref := range r.Refs {
			size += len(ref) + 2
		}
		if size > p.opts.MaxPageBytes && i > 0 {
			recs, more = recs[:i], true
			last = recs[i-1].Seq
			break
		}
	}
	page.Records, page.Next, page.More = recs, last, more
	if len(recs) == 0 {
		page.Next = req.Cursor
	}
	page.Dependents = p.discover(recs)
	return page, nil
}

func (p *StoreParticipant) discover(recs []contract.Record) []string {
	var deps []string
	for _, r := range recs {
		if r.Deleted {
			continue
		}
		refs := r.Refs
		if p.opts.Discover != nil {
			refs = p.opts.Discover(r)
		}
		deps = append(deps, refs...)
	}
	slices.Sort(deps)
	return slices.Compact(deps)
}

// Import implements contract.Participant.
func (p *StoreParticipant) Import(ctx context.Context, page contract.Page) (contract.ImportResult, error) {
	if err := ctx.Err(); err != nil {
		return contract.ImportResult{}, ToError(err)
	}
	if page.Service != "" && page.Service != p.service {
		return contract.ImportResult{}, contract.Errorf(contract.CodeInvalid, "page of service %q imported into %q", page.Service, p.service)
	}
	var n int
	var err error
	if page.Grant != "" {
		n, err = p.st.ImportGranted(page.Resource, page.Grant, page.Records)
	} else {
		n, err = p.st.Import(page.Resource, page.Records)
	}
	if err != nil {
		return contract.ImportResult{}, ToError(err)
	}
	return contract.ImportResult{Applied: n, Total: len(page.Records)}, nil
}

// Digests implements contract.Participant.
func (p *StoreParticipant) Digests(ctx context.Context, resource string) ([]contract.SliceDigest, error) {
	d, err := p.st.Digests(resource)
	return d, toErr(err)
}

// ReadSlice implements contract.Participant.
func (p *StoreParticipant) ReadSlice(ctx context.Context, resource string, from, to int64) ([]contract.Record, error) {
	var out []contract.Record
	var afterC int64
	var afterID string
	for {
		recs, err := p.st.ListSlice(resource, from, to, afterC, afterID, 1000)
		if err != nil {
			return nil, ToError(err)
		}
		out = append(out, recs...)
		if len(recs) < 1000 {
			return out, nil
		}
		last := recs[len(recs)-1]
		afterC, afterID = last.CreatedAt, last.ID
	}
}

// SetFence implements contract.Participant.
func (p *StoreParticipant) SetFence(ctx context.Context, resource string, f contract.Fence) error {
	return toErr(p.st.SetFence(resource, f))
}

// ClearFence implements contract.Participant.
func (p *StoreParticipant) ClearFence(ctx context.Context, resource, token string) error {
	return toErr(p.st.ClearFence(resource, token))
}

var _ contract.ImportGate = (*StoreParticipant)(nil)

// GrantImport implements contract.ImportGate (store.Store.GrantImport).
func (p *StoreParticipant) GrantImport(ctx context.Context, resource, token string, expiry time.Time) error {
	return toErr(p.st.GrantImport(resource, token, expiry))
}

// ResetForCopy implements contract.ImportGate (store.Store.ResetGranted).
func (p *StoreParticipant) ResetForCopy(ctx context.Context, resource, token string) (int, error) {
	n, err := p.st.ResetGranted(resource, token)
	return n, toErr(err)
}

// RevokeImport implements contract.ImportGate (store.Store.RevokeImport).
func (p *StoreParticipant) RevokeImport(ctx context.Context, resource, token string) error {
	return toErr(p.st.RevokeImport(resource, token))
}

var _ contract.FenceAdmin = (*StoreParticipant)(nil)

// ForceClearFence implements contract.FenceAdmin: the store's admin clear
// (store.Store.ForceClearFence) of an active fence; CodeNotFound when none
// is active.
func (p *StoreParticipant) ForceClearFence(ctx context.Context, resource string) (contract.Fence, error) {
	f, err := p.st.GetFence(resource)
	switch {
	case errors.Is(err, store.ErrCorrupt): // the admin path clears a corrupt fence too
	case err != nil:
		return contract.Fence{}, toErr(err)
	case !f.Active(time.Now()):
		return contract.Fence{}, contract.Errorf(contract.CodeNotFound, "%s: no active fence at %s", resource, p.service)
	}
	if err := p.st.ForceClearFence(resource); err != nil {
		return contract.Fence{}, toErr(err)
	}
	return f, nil
}

// Cleanup implements contract.Participant: it deletes nothing while
// KeepOnCleanup says the region is the resource's primary or a migration's
// target, and nothing at all without KeepOnCleanup (CodeInternal).
func (p *StoreParticipant) Cleanup(ctx context.Context, resource string) (int, error) {
	g := p.opts.KeepOnCleanup
	keep := func() (bool, uint64, error) {
		if g == nil {
			return false, 0, contract.Errorf(contract.CodeInternal,
				"cleanup of %s by %s: no cleanup guard (StoreParticipantOptions.KeepOnCleanup) to tell whether this region is its primary", resource, p.service)
		}
		// A guard that reads routing (RoutingCleanupGuard) reports the
		// revision it read; the store's watermark rises to it.
		gctx, rev := withGuardRevision(ctx)
		kept, err := g(gctx, resource)
		return kept, *rev, err
	}
	n, _, err := p.st.DeleteAllUnlessRouted(resource, keep)
	return n, toErr(err)
}

func toErr(err error) error {
	if err == nil {
		return nil
	}
	return ToError(err)
}

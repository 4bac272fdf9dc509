package services

import (
	"context"

	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
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
}

// StoreParticipant implements contract.Participant over a store.Store: the
// shared implementation the reference services embed. Admission is the
// store's (store.Store keeps the authority record and decides every
// operation with contract.Admit in the batch that carries it out). A
// service whose storage is not a store.Store implements contract.Participant
// itself and proves it with contracttest.Run.
type StoreParticipant struct {
	service string
	st      *store.Store
	opts    StoreParticipantOptions
}

var (
	_ contract.Participant = (*StoreParticipant)(nil)
	_ contract.Repairer    = (*StoreParticipant)(nil)
)

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

// Authorize implements contract.Participant.
func (p *StoreParticipant) Authorize(ctx context.Context, resource string, a contract.Authority) (contract.Authority, error) {
	if err := ctx.Err(); err != nil {
		return contract.Authority{}, ToError(err)
	}
	got, err := p.st.Admit(resource, contract.OpAuthorize, a)
	return got, toErr(err)
}

// Repair implements contract.Repairer (store.Store.Repair).
func (p *StoreParticipant) Repair(ctx context.Context, resource string, a contract.Authority) (contract.Authority, error) {
	if err := ctx.Err(); err != nil {
		return contract.Authority{}, ToError(err)
	}
	prev, err := p.st.Repair(resource, a)
	return prev, toErr(err)
}

// Export implements contract.Participant: the request's authority is
// installed first (store.Store.Admit), then a historical export with
// SyncToken 0 issues the token: the store's current change sequence
// (paper 001 (A2): everything committed before it is historical,
// everything after is delta, and every delete after it is a tombstone).
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
	op := contract.OpExportHistorical
	switch req.Mode {
	case contract.Historical:
		if req.SyncToken == 0 && req.Cursor != 0 {
			return contract.Page{}, contract.Errorf(contract.CodeInvalid, "historical export with a cursor but no sync token")
		}
	case contract.Delta:
		op = contract.OpExportDelta
	default:
		return contract.Page{}, contract.Errorf(contract.CodeInvalid, "export mode %d", req.Mode)
	}
	if _, err := p.st.Admit(req.Resource, op, req.Authority); err != nil {
		return contract.Page{}, ToError(err)
	}
	page := contract.Page{Service: p.service, Resource: req.Resource, Mode: req.Mode, SyncToken: req.SyncToken, Cursor: req.Cursor}
	var upto uint64
	if req.Mode == contract.Historical {
		if req.SyncToken == 0 {
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
	} else if req.Cursor < req.SyncToken {
		req.Cursor = req.SyncToken
		page.Cursor = req.SyncToken
	}
	recs, last, more, err := p.st.Changes(req.Resource, req.Cursor, upto, req.Limit)
	if err != nil {
		return contract.Page{}, ToError(err)
	}
	// Keep the page under the byte cap; the rest follows in the next page.
	if fit, cut := participant.FitPage(recs, p.opts.MaxPageBytes); cut {
		recs, more, last = fit, true, fit[len(fit)-1].Seq
	}
	page.Records, page.Next, page.More = recs, last, more
	if len(recs) == 0 {
		page.Next = req.Cursor
	}
	page.Dependents = participant.Dependents(recs, p.opts.Discover)
	return page, nil
}

// Import implements contract.Participant (store.Store.Import, then the
// digests when asked).
func (p *StoreParticipant) Import(ctx context.Context, req contract.ImportRequest) (contract.ImportResult, error) {
	if err := ctx.Err(); err != nil {
		return contract.ImportResult{}, ToError(err)
	}
	if req.Resource == "" {
		return contract.ImportResult{}, contract.Errorf(contract.CodeInvalid, "import: empty resource")
	}
	recs, err := participant.PageRecords(p.service, req)
	if err != nil {
		return contract.ImportResult{}, err
	}
	applied, removed, err := p.st.Import(req.Resource, req.Authority, req.Reset, recs)
	if err != nil {
		return contract.ImportResult{}, ToError(err)
	}
	res := contract.ImportResult{Applied: applied, Total: len(recs), Removed: removed}
	if req.Digests {
		if res.Digests, err = p.st.Digests(req.Resource); err != nil {
			return contract.ImportResult{}, ToError(err)
		}
	}
	return res, nil
}

// Digests implements contract.Participant.
func (p *StoreParticipant) Digests(ctx context.Context, resource string, a contract.Authority) ([]contract.SliceDigest, error) {
	if err := ctx.Err(); err != nil {
		return nil, ToError(err)
	}
	if _, err := p.st.Admit(resource, contract.OpDigests, a); err != nil {
		return nil, ToError(err)
	}
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

// Cleanup implements contract.Participant (store.Store.Cleanup).
func (p *StoreParticipant) Cleanup(ctx context.Context, resource string, a contract.Authority) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, ToError(err)
	}
	n, err := p.st.Cleanup(resource, a)
	return n, toErr(err)
}

func toErr(err error) error {
	if err == nil {
		return nil
	}
	return ToError(err)
}

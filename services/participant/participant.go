package participant

import (
	"context"
	"errors"
	"time"

	"github.com/cutover/cutover/services/contract"
)

// Options configures New.
type Options struct {
	// Discover returns the dependent resources a record references (a
	// message's media); nil means the record's Refs.
	Discover func(contract.Record) []string
	// Kinds, when not empty, are the record kinds the service has: a write
	// or an imported record of another kind is refused (CodeInvalid).
	Kinds []string
	// MaxPageBytes caps the encoded size of an export page's records
	// (default 512 KiB), so a page always fits a NATS message.
	MaxPageBytes int
	// SliceWidth is the width of the digests' time slices (default
	// contract.SliceWidth). Every region of a service must use one width.
	SliceWidth time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// MaxPageRecords caps the records of one export or import page.
const MaxPageRecords = 10_000

// Participant is the contract of one service at one region over a
// Storage, and the service's user path. Safe for concurrent use.
type Participant struct {
	service string
	st      Storage
	o       Options
}

var (
	_ contract.Participant = (*Participant)(nil)
	_ contract.Repairer    = (*Participant)(nil)
)

// New returns the participant of service over st.
func New(service string, st Storage, o Options) *Participant {
	if o.MaxPageBytes <= 0 {
		o.MaxPageBytes = 512 << 10
	}
	if o.SliceWidth <= 0 {
		o.SliceWidth = contract.SliceWidth
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Participant{service: service, st: st, o: o}
}

// Service implements contract.Participant.
func (p *Participant) Service() string { return p.service }

// ErrCorrupt is what an adapter wraps when stored data cannot be decoded:
// the kit answers it as contract.CodeInternal. Every other error of a
// Storage (the database unreachable, a failed commit) is answered as
// contract.CodeUnavailable: retriable, and nothing was changed.
var ErrCorrupt = errors.New("participant: corrupt data")

// fail turns a storage error into the *contract.Error crossing the
// contract; the user path's sentinels pass as they are.
func fail(err error) error {
	if err == nil {
		return nil
	}
	var ce *contract.Error
	switch {
	case errors.As(err, &ce):
		return ce
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrExists), errors.Is(err, ErrDeleted):
		return err // the user path's own outcomes
	case errors.Is(err, ErrCorrupt):
		return &contract.Error{Code: contract.CodeInternal, Message: err.Error()}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return contract.AsError(err)
	}
	return &contract.Error{Code: contract.CodeUnavailable, Message: "storage: " + err.Error()}
}

// admit decides op for a request stamped a from the record r holds; in an
// Update (tx not nil) the joined record is written when the decision says
// so, in the transaction that carries the operation out.
func (p *Participant) admit(r Reader, tx Tx, resource string, op contract.Op, a contract.Authority) (contract.Decision, error) {
	rec, err := r.Authority()
	if err != nil {
		return contract.Decision{}, err
	}
	d := contract.Admit(rec, op, a, p.o.Now())
	if e := d.Err(resource); e != nil {
		return d, e
	}
	if tx != nil && d.Persist {
		if err := tx.SetAuthority(d.Next); err != nil {
			return d, err
		}
	}
	return d, nil
}

// run runs fn in an Update after checking the resource; the storage's
// errors come back as they are (the user path's).
func (p *Participant) run(ctx context.Context, resource string, fn func(Tx) error) error {
	if err := validResource(resource); err != nil {
		return err
	}
	return p.st.Update(ctx, resource, fn)
}

// update is run with the error crossing the contract (fail).
func (p *Participant) update(ctx context.Context, resource string, fn func(Tx) error) error {
	return fail(p.run(ctx, resource, fn))
}

// Authorize implements contract.Participant.
func (p *Participant) Authorize(ctx context.Context, resource string, a contract.Authority) (contract.Authority, error) {
	var held contract.Authority
	err := p.update(ctx, resource, func(tx Tx) error {
		d, err := p.admit(tx, tx, resource, contract.OpAuthorize, a)
		held = d.Next
		return err
	})
	return held, err
}

// Repair implements contract.Repairer: the record is replaced whatever it
// holds; the caller (the orchestrator) checks approvals.
func (p *Participant) Repair(ctx context.Context, resource string, a contract.Authority) (contract.Authority, error) {
	if err := a.Validate(); err != nil {
		return contract.Authority{}, contract.AsError(err)
	}
	var prev contract.Authority
	err := p.update(ctx, resource, func(tx Tx) error {
		var err error
		if prev, err = tx.Authority(); err != nil && !errors.Is(err, ErrCorrupt) {
			return err
		}
		return tx.SetAuthority(a)
	})
	return prev, err
}

// Export implements contract.Participant: the request's authority is
// installed, and a first historical page issues the sync token, in one
// transaction (paper 001 (A2): every change committed before the token is
// historical, every later one delta, and every delete after it a
// tombstone, because the token and the tombstone rule are decided under
// the same resource lock). The page itself is read from a snapshot.
func (p *Participant) Export(ctx context.Context, req contract.ExportRequest) (contract.Page, error) {
	if req.Limit <= 0 {
		req.Limit = contract.DefaultPageLimit
	}
	if req.Limit > MaxPageRecords {
		return contract.Page{}, contract.Errorf(contract.CodeInvalid, "page limit %d above %d", req.Limit, MaxPageRecords)
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
	page := contract.Page{Service: p.service, Resource: req.Resource, Mode: req.Mode, SyncToken: req.SyncToken, Cursor: req.Cursor}
	// read decides the request on r and reads the page from it: the token
	// (a first historical page) and the records come from the snapshot in
	// which the authority is in force.
	var recs []contract.Record
	read := func(r Reader, tx Tx) (persist bool, err error) {
		d, err := p.admit(r, tx, req.Resource, op, req.Authority)
		if err != nil || (tx == nil && d.Persist) {
			return d.Persist, err
		}
		if req.Mode == contract.Historical && req.SyncToken == 0 {
			if page.SyncToken, err = r.LastSeq(); err != nil {
				return false, err
			}
		}
		after, upto := req.Cursor, page.SyncToken
		if req.Mode == contract.Delta {
			upto = ^uint64(0)
			if after < req.SyncToken {
				after, page.Cursor = req.SyncToken, req.SyncToken
			}
		} else if upto == 0 || after >= upto { // nothing before the token: an empty, final page
			page.Next = after
			return false, nil
		}
		page.Next = after
		recs, err = r.Changes(after, upto, req.Limit+1)
		return false, err
	}
	// Most pages find the authority already installed (the first page or
	// the lock's Authorize installed it): one read-only snapshot decides
	// and reads. A request that installs one is decided and carried out
	// under the resource's lock, in the transaction that writes it, and the
	// token read there.
	var persist bool
	if err := validResource(req.Resource); err != nil {
		return contract.Page{}, err
	}
	err := fail(p.st.View(ctx, req.Resource, func(r Reader) error {
		var err error
		persist, err = read(r, nil)
		return err
	}))
	if err == nil && persist {
		err = p.update(ctx, req.Resource, func(tx Tx) error {
			_, err := read(tx, tx)
			return err
		})
	}
	if err != nil {
		return contract.Page{}, err
	}
	more := len(recs) > req.Limit
	if more {
		recs = recs[:req.Limit]
	}
	// Keep the page under the byte cap; the rest follows in the next page.
	if fit, cut := FitPage(recs, p.o.MaxPageBytes); cut {
		recs, more = fit, true
	}
	page.Records, page.More = recs, more
	if len(recs) > 0 {
		page.Next = recs[len(recs)-1].Seq
	}
	page.Dependents = Dependents(recs, p.o.Discover)
	return page, nil
}

// prefetch tells tx the ids of an imported page before the kit Gets them
// one by one: presumed absent on a historical page (Presumer), read in one
// go otherwise (Prefetcher).
func (p *Participant) prefetch(tx Tx, req contract.ImportRequest, recs []contract.Record) error {
	pr, presumes := tx.(Presumer)
	pf, prefetches := tx.(Prefetcher)
	presumes = presumes && req.Page != nil && req.Page.Mode == contract.Historical
	if !presumes && (!prefetches || len(recs) < 2) {
		return nil
	}
	ids := make([]string, len(recs))
	for i := range recs {
		ids[i] = recs[i].ID
	}
	if presumes {
		return pr.Presume(ids)
	}
	return pf.Prefetch(ids)
}

// Import implements contract.Participant: in one transaction, the request's
// authority is joined and decided (OpReset with Reset, else OpImport), a
// reset that installs its stamp clears the resource (one at the stamp
// already held removes nothing: it repeats a reset of that revision, whose
// pages may have landed since — a second driver's step, a retried
// request), and the page is applied idempotently (paper
// 001 (A3)): an incoming record replaces the stored one when its Version
// is higher, or equal and it is a tombstone while the stored one is live,
// or when the id is absent; so replays in any order converge and a
// tombstone beats any older live copy (§4.3). Applied records keep their
// Version and times and get a local Seq. An invalid record refuses the
// whole page.
func (p *Participant) Import(ctx context.Context, req contract.ImportRequest) (contract.ImportResult, error) {
	recs, err := PageRecords(p.service, req)
	if err != nil {
		return contract.ImportResult{}, err
	}
	for i := range recs {
		if err := p.validRecord(&recs[i]); err != nil {
			return contract.ImportResult{}, err
		}
		if recs[i].Version == 0 {
			return contract.ImportResult{}, contract.Errorf(contract.CodeInvalid, "record %q: version 0", recs[i].ID)
		}
	}
	op := contract.OpImport
	if req.Reset {
		op = contract.OpReset
	}
	res := contract.ImportResult{Total: len(recs)}
	err = p.update(ctx, req.Resource, func(tx Tx) error {
		res.Applied, res.Removed = 0, 0 // a retried transaction starts again
		d, err := p.admit(tx, tx, req.Resource, op, req.Authority)
		if err != nil {
			return err
		}
		if req.Reset && d.Persist {
			n, err := tx.Clear()
			if err != nil {
				return err
			}
			res.Removed = n
		}
		if err := p.prefetch(tx, req, recs); err != nil {
			return err
		}
		now := p.o.Now().UnixNano()
		for _, in := range recs {
			old, found, err := tx.Get(in.ID)
			if err != nil {
				return err
			}
			if found && !supersedes(&in, &old) {
				continue
			}
			if in.Deleted {
				in.Data, in.Refs = nil, nil // content never travels with a tombstone (§4.3)
				if in.DeletedAt == 0 {
					in.DeletedAt = now
				}
			}
			if err := p.replace(tx, found, &old, &in); err != nil {
				return err
			}
			res.Applied++
		}
		if res.Seq, err = tx.LastSeq(); err != nil {
			return err
		}
		if req.Digests {
			var err error
			res.Digests, err = tx.Digests()
			return err
		}
		return nil
	})
	if err != nil {
		return contract.ImportResult{}, err
	}
	return res, nil
}

// supersedes reports whether incoming replaces stored under the import rule.
func supersedes(incoming, stored *contract.Record) bool {
	if incoming.Version != stored.Version {
		return incoming.Version > stored.Version
	}
	return incoming.Deleted && !stored.Deleted
}

// replace writes next in place of old (found: old is stored) with the next
// Seq, keeping the digests: the old record's hash leaves its slice, the new
// one's joins (contract.AddHash, SubHash). A nil next removes old.
func (p *Participant) replace(tx Tx, found bool, old, next *contract.Record) error {
	if found && !old.Deleted {
		if err := p.digest(tx, old, false); err != nil {
			return err
		}
	}
	if next == nil {
		return tx.Remove(old.ID)
	}
	if len(next.Data) == 0 {
		next.Data = nil
	}
	if len(next.Refs) == 0 {
		next.Refs = nil
	}
	last, err := tx.LastSeq()
	if err != nil {
		return err
	}
	next.Seq = last + 1
	if !next.Deleted {
		if err := p.digest(tx, next, true); err != nil {
			return err
		}
	}
	return tx.Put(*next)
}

// digest adds r's hash to its slice's digest, or subtracts it.
func (p *Participant) digest(tx Tx, r *contract.Record, add bool) error {
	slice := contract.SliceOf(r.CreatedAt, p.o.SliceWidth)
	d, err := tx.Digest(slice)
	if err != nil {
		return err
	}
	d.Slice = slice
	h := contract.RecordHash(r)
	if add {
		d.Count++
		d.Hash = contract.AddHash(d.Hash, h)
	} else {
		if d.Count == 0 {
			return ErrCorrupt
		}
		d.Count--
		d.Hash = contract.SubHash(d.Hash, h)
	}
	return tx.SetDigest(d)
}

// Digests implements contract.Participant: a non-zero a is installed
// first, in the transaction that reads the digests.
func (p *Participant) Digests(ctx context.Context, resource string, a contract.Authority) ([]contract.SliceDigest, error) {
	var out []contract.SliceDigest
	err := p.update(ctx, resource, func(tx Tx) error {
		if _, err := p.admit(tx, tx, resource, contract.OpDigests, a); err != nil {
			return err
		}
		var err error
		out, err = tx.Digests()
		return err
	})
	return out, err
}

// ReadSlice implements contract.Participant: the live records with
// CreatedAt in [from, to), read from the records as user reads are but
// without admission (the migration compares an importing target's too).
func (p *Participant) ReadSlice(ctx context.Context, resource string, from, to int64) ([]contract.Record, error) {
	var out []contract.Record
	afterC, afterID := from-1, ""
	for {
		recs, err := p.list(ctx, resource, from, to, afterC, afterID, MaxPageRecords, nil)
		if err != nil {
			return nil, fail(err)
		}
		out = append(out, recs...)
		if len(recs) < MaxPageRecords {
			return out, nil
		}
		last := recs[len(recs)-1]
		afterC, afterID = last.CreatedAt, last.ID
	}
}

// Cleanup implements contract.Participant: every record of the resource
// removed under a, which must make this store a secondary (contract.Admit,
// OpCleanup), in the transaction that decides it; the authority record
// stays, and refuses whatever a stale route still sends here.
func (p *Participant) Cleanup(ctx context.Context, resource string, a contract.Authority) (int, error) {
	var n int
	err := p.update(ctx, resource, func(tx Tx) error {
		if _, err := p.admit(tx, tx, resource, contract.OpCleanup, a); err != nil {
			return err
		}
		var err error
		n, err = tx.Clear()
		return err
	})
	return n, err
}

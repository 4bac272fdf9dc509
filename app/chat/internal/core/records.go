package core

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
	"github.com/cutover/cutover/services/store"
)

// records is a service's storage on the user path, each operation admitted
// by the storage against its authority record in the transaction that
// carries it out: the Pebble store.Store, or the participant kit over a
// team's database (participant.Participant, e.g. over PostgreSQL). Errors
// follow store's: store.ErrExists (with the stored record),
// store.ErrDeleted, store.ErrNotFound, or a *contract.Error.
type records interface {
	GetAt(ctx context.Context, resource, id string, a contract.Authority) (store.Record, error)
	ListAt(ctx context.Context, resource, kind string, afterCreated int64, afterID string, limit int, a contract.Authority) ([]store.Record, error)
	PutAt(ctx context.Context, resource string, rec store.Record, create bool, a contract.Authority) (store.Record, error)
	DeleteAt(ctx context.Context, resource, id string, keepID bool, a contract.Authority) (store.DeleteResult, error)
	// Held and Records are the checkers' view: the authority record, and
	// every record with the tombstones.
	Held(ctx context.Context, resource string) (contract.Authority, error)
	Records(ctx context.Context, resource string) ([]store.Record, error)
}

// pebbleRecords is a store.Store as records.
type pebbleRecords struct{ st *store.Store }

func (r pebbleRecords) GetAt(_ context.Context, resource, id string, a contract.Authority) (store.Record, error) {
	return r.st.GetAt(resource, id, a)
}

func (r pebbleRecords) ListAt(_ context.Context, resource, kind string, afterCreated int64, afterID string, limit int, a contract.Authority) ([]store.Record, error) {
	return r.st.ListAt(resource, kind, afterCreated, afterID, limit, a)
}

func (r pebbleRecords) PutAt(_ context.Context, resource string, rec store.Record, create bool, a contract.Authority) (store.Record, error) {
	return r.st.PutAt(resource, rec, create, a)
}

func (r pebbleRecords) DeleteAt(_ context.Context, resource, id string, keepID bool, a contract.Authority) (store.DeleteResult, error) {
	return r.st.DeleteAt(resource, id, keepID, a)
}

func (r pebbleRecords) Held(_ context.Context, resource string) (contract.Authority, error) {
	return r.st.Authority(resource)
}

func (r pebbleRecords) Records(_ context.Context, resource string) ([]store.Record, error) {
	var out []store.Record
	for after, more := uint64(0), true; more; {
		var recs []store.Record
		var err error
		if recs, after, more, err = r.st.Changes(resource, after, 0, store.MaxPageLimit); err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

// kitRecords is the participant kit as records.
type kitRecords struct{ p *participant.Participant }

// storeErr gives the kit's user-path outcomes store's sentinels.
func storeErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, participant.ErrExists):
		return fmt.Errorf("%w: %v", store.ErrExists, err)
	case errors.Is(err, participant.ErrDeleted):
		return fmt.Errorf("%w: %v", store.ErrDeleted, err)
	case errors.Is(err, participant.ErrNotFound):
		return fmt.Errorf("%w: %v", store.ErrNotFound, err)
	}
	return participant.ToError(err) // a storage failure: unavailable
}

func (r kitRecords) GetAt(ctx context.Context, resource, id string, a contract.Authority) (store.Record, error) {
	rec, err := r.p.Get(ctx, resource, id, a)
	return rec, storeErr(err)
}

// ListAt filters the kit's list by creation time on kind, reading on until
// limit records of kind are found or the records end.
func (r kitRecords) ListAt(ctx context.Context, resource, kind string, afterCreated int64, afterID string, limit int, a contract.Authority) ([]store.Record, error) {
	if limit <= 0 {
		limit = store.DefaultPageLimit
	}
	limit = min(limit, store.MaxPageLimit)
	var out []store.Record
	for {
		recs, err := r.p.List(ctx, resource, 0, math.MaxInt64, afterCreated, afterID, limit, a)
		if err != nil {
			return nil, storeErr(err)
		}
		for _, rec := range recs {
			if rec.Kind == kind {
				out = append(out, rec)
				if len(out) == limit {
					return out, nil
				}
			}
		}
		if len(recs) < limit {
			return out, nil
		}
		last := recs[len(recs)-1]
		afterCreated, afterID = last.CreatedAt, last.ID
	}
}

func (r kitRecords) PutAt(ctx context.Context, resource string, rec store.Record, create bool, a contract.Authority) (store.Record, error) {
	got, err := r.p.Put(ctx, resource, rec, create, a)
	return got, storeErr(err)
}

func (r kitRecords) DeleteAt(ctx context.Context, resource, id string, keepID bool, a contract.Authority) (store.DeleteResult, error) {
	ts, err := r.p.Delete(ctx, resource, id, keepID, a)
	return store.DeleteResult{Tombstoned: ts}, storeErr(err)
}

func (r kitRecords) Held(ctx context.Context, resource string) (contract.Authority, error) {
	return r.p.Held(ctx, resource)
}

func (r kitRecords) Records(ctx context.Context, resource string) ([]store.Record, error) {
	return r.p.Records(ctx, resource)
}

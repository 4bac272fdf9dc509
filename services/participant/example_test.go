package participant_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contracttest"
	"github.com/cutover/cutover/services/participant"
)

// memStorage is a complete participant.Storage: each resource's state
// under a mutex, an Update working on a copy that replaces the state only
// when fn succeeds (the transaction). A real adapter does the same inside
// its database's transactions (services/pgstore: a row lock on the
// resource's authority row).
type memStorage struct {
	mu  sync.Mutex
	res map[string]*memResource
}

type memResource struct {
	lock    sync.Mutex // held by an Update for its whole run
	auth    contract.Authority
	lastSeq uint64
	recs    map[string]contract.Record
	digests map[int64]contract.SliceDigest
}

func (m *memStorage) resource(name string) *memResource {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.res == nil {
		m.res = map[string]*memResource{}
	}
	r, ok := m.res[name]
	if !ok {
		r = &memResource{recs: map[string]contract.Record{}, digests: map[int64]contract.SliceDigest{}}
		m.res[name] = r
	}
	return r
}

// clone is the copy a transaction works on.
func (r *memResource) clone() *memResource {
	return &memResource{auth: r.auth, lastSeq: r.lastSeq, recs: maps.Clone(r.recs), digests: maps.Clone(r.digests)}
}

func (m *memStorage) Update(ctx context.Context, resource string, fn func(participant.Tx) error) error {
	r := m.resource(resource)
	r.lock.Lock()
	defer r.lock.Unlock()
	work := r.clone()
	if err := fn(work); err != nil {
		return err // nothing changed
	}
	r.auth, r.lastSeq, r.recs, r.digests = work.auth, work.lastSeq, work.recs, work.digests // commit
	return nil
}

func (m *memStorage) View(ctx context.Context, resource string, fn func(participant.Reader) error) error {
	r := m.resource(resource)
	r.lock.Lock()
	snap := r.clone()
	r.lock.Unlock()
	return fn(snap)
}

func (r *memResource) Authority() (contract.Authority, error) { return r.auth, nil }
func (r *memResource) LastSeq() (uint64, error)               { return r.lastSeq, nil }

func (r *memResource) Get(id string) (contract.Record, bool, error) {
	rec, ok := r.recs[id]
	return rec, ok, nil
}

func (r *memResource) Changes(after, upto uint64, limit int) ([]contract.Record, error) {
	var out []contract.Record
	for _, rec := range r.recs {
		if rec.Seq > after && rec.Seq <= upto {
			out = append(out, rec)
		}
	}
	slices.SortFunc(out, func(a, b contract.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	return out[:min(limit, len(out))], nil
}

func (r *memResource) Live(from, to, afterCreated int64, afterID string, limit int) ([]contract.Record, error) {
	var out []contract.Record
	for _, rec := range r.recs {
		after := rec.CreatedAt > afterCreated || (rec.CreatedAt == afterCreated && rec.ID > afterID)
		if !rec.Deleted && rec.CreatedAt >= from && rec.CreatedAt < to && after {
			out = append(out, rec)
		}
	}
	slices.SortFunc(out, func(a, b contract.Record) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out[:min(limit, len(out))], nil
}

func (r *memResource) Digests() ([]contract.SliceDigest, error) {
	out := slices.Collect(maps.Values(r.digests))
	slices.SortFunc(out, func(a, b contract.SliceDigest) int { return cmp.Compare(a.Slice, b.Slice) })
	return out, nil
}

func (r *memResource) SetAuthority(a contract.Authority) error { r.auth = a; return nil }

func (r *memResource) Put(rec contract.Record) error {
	r.recs[rec.ID] = rec
	r.lastSeq = max(r.lastSeq, rec.Seq)
	return nil
}

func (r *memResource) Remove(id string) error { delete(r.recs, id); return nil }

func (r *memResource) Digest(slice int64) (contract.SliceDigest, error) {
	return r.digests[slice], nil
}

func (r *memResource) SetDigest(d contract.SliceDigest) error {
	if d.Count == 0 {
		delete(r.digests, d.Slice)
	} else {
		r.digests[d.Slice] = d
	}
	return nil
}

func (r *memResource) Clear() (int, error) {
	n := len(r.recs)
	r.recs, r.digests, r.lastSeq = map[string]contract.Record{}, map[int64]contract.SliceDigest{}, 0
	return n, nil
}

// The participant kit over a team's own storage: the adapter (memStorage
// above) only stores; the kit decides. Here a write lands at the primary,
// the migration's write fence refuses the next one with a Retry-After, and
// a request routed by an older revision is told the resource moved.
func Example() {
	ctx := context.Background()
	p := participant.New("notes", &memStorage{}, participant.Options{})

	// A user write, stamped with the routing revision its router read.
	rec, err := p.Put(ctx, "conv/c1", contract.Record{ID: "n1", Kind: "note", Data: []byte("hello")}, true,
		contract.Authority{Rev: 3, Role: contract.RolePrimary})
	fmt.Println(rec.ID, rec.Version, err)

	// The orchestrator's write lock (revision 4): the store is exporting
	// until the lock's expiry.
	fence := contract.Authority{Rev: 4, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Minute))}
	_, err = p.Authorize(ctx, "conv/c1", fence)
	fmt.Println(err)
	_, err = p.Put(ctx, "conv/c1", contract.Record{ID: "n2", Kind: "note"}, true, fence)
	e := contract.AsError(err)
	fmt.Println(e.Code, e.Lock, e.RetryAfter > 0)

	// A read routed by revision 3 after the swap (revision 5) made this
	// region a secondary.
	_, err = p.Authorize(ctx, "conv/c1", contract.Authority{Rev: 5, Role: contract.RoleSecondary})
	fmt.Println(err)
	_, err = p.Get(ctx, "conv/c1", "n1", contract.Authority{Rev: 3, Role: contract.RolePrimary})
	e = contract.AsError(err)
	fmt.Println(e.Code, e.Lock)
	// Output:
	// n1 1 <nil>
	// <nil>
	// locked fence write true
	// <nil>
	// locked moved
}

// The example adapter keeps the contract: the conformance kit proves it.
func TestExampleAdapterConforms(t *testing.T) {
	contracttest.Run(t, func(t *testing.T) contracttest.Harness {
		src := participant.New("kit", &memStorage{}, participant.Options{})
		dst := participant.New("kit", &memStorage{}, participant.Options{})
		return contracttest.Harness{Source: src, SourceUser: contracttest.KitUser(src), Target: dst, TargetUser: contracttest.KitUser(dst)}
	})
}

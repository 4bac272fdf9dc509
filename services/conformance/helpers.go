package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
)

// maxPages stops an export that never ends.
const maxPages = 100_000

// kit is one subtest's harness, resource, model of the source, and the
// authorities it stamps its requests with: rev grows with every change of
// authority, as a routing document's revision does.
type kit struct {
	t   T
	h   Harness
	ctx context.Context
	res string

	rev      uint64
	src, tgt contract.Authority // the stamps of the source's and the target's requests

	mu struct {
		sync.Mutex
		n    int                        // writes so far, makes every Data distinct
		live map[string]contract.Record // last stored live record per id
		gone map[string]bool            // ids deleted at the source
	}
}

// newKit builds the harness for t and names its resource after name.
func newKit(t T, factory Factory, name string) *kit {
	t.Helper()
	h := factory(t)
	for _, u := range []UserPath{h.SourceUser, h.TargetUser} {
		if u.Write == nil || u.Delete == nil || u.Read == nil {
			t.Fatalf("conformance: the Factory returned an incomplete UserPath")
		}
	}
	if h.Source == nil || h.Target == nil {
		t.Fatalf("conformance: the Factory returned a Harness without participants")
	}
	if h.Source.Service() != h.Target.Service() {
		t.Fatalf("conformance: source service %q and target service %q differ", h.Source.Service(), h.Target.Service())
	}
	k := &kit{t: t, h: h, ctx: t.Context(), res: h.resource(name), rev: 10}
	k.mu.live = map[string]contract.Record{}
	k.mu.gone = map[string]bool{}
	k.teardown()
	return k
}

// resource is the name of a case's resource. Under a ResourcePrefix (one
// participant shared by every case) each kit gets a resource of its own:
// sub-cases of one name must not meet each other's authority.
func (h Harness) resource(name string) string {
	if h.ResourcePrefix == "" {
		return "conv/kit-" + name
	}
	return fmt.Sprintf("%s%s-%d", h.ResourcePrefix, name, kits.Add(1))
}

// kits numbers the kits of a process.
var kits atomic.Int64

// teardown registers, when the Harness asks for it, the removal of what
// the case wrote: at each participant, the resource made a secondary one
// revision above what it holds, and cleaned up. The authority record stays
// (a participant keeps it to refuse stale requests).
func (k *kit) teardown() {
	if !k.h.Teardown {
		return
	}
	ctx := context.WithoutCancel(k.ctx)
	k.t.Cleanup(func() {
		for _, p := range []contract.Participant{k.h.Source, k.h.Target} {
			held, err := p.Authorize(ctx, k.res, contract.Authority{})
			if err != nil {
				k.t.Logf("teardown: %s at %s: %v", k.res, p.Service(), err)
				continue
			}
			if _, err := p.Cleanup(ctx, k.res, contract.Authority{Rev: held.Rev + 1, Role: contract.RoleSecondary}); err != nil {
				k.t.Logf("teardown: clean %s: %v", k.res, err)
			}
		}
	})
}

// hour is an Until an hour ahead.
func hour() int64 { return contract.UntilOf(time.Now().Add(time.Hour)) }

// hardDelete moves the kit's migration to the hard-delete lock: the source
// tombstones deletes, the target imports. The source is told at once (as
// the first historical export would tell it).
func (k *kit) hardDelete() {
	k.t.Helper()
	k.rev++
	k.src = contract.Authority{Rev: k.rev, Role: contract.RolePrimary, Deletes: contract.DeletesTombstone, Until: hour()}
	k.tgt = contract.Authority{Rev: k.rev, Role: contract.RoleImporting}
	k.authorize(k.h.Source, k.src)
}

// writeLock moves the kit's migration to the write lock: the source is
// exporting (the write fence), the target imports.
func (k *kit) writeLock() {
	k.t.Helper()
	k.rev++
	k.src = contract.Authority{Rev: k.rev, Role: contract.RoleExporting, Until: hour()}
	k.tgt = contract.Authority{Rev: k.rev, Role: contract.RoleImporting}
	k.authorize(k.h.Source, k.src)
}

// next returns a fresh authority of role (a routing revision no request
// has carried yet).
func (k *kit) next(role contract.Role) contract.Authority {
	k.rev++
	return contract.Authority{Rev: k.rev, Role: role}
}

// authorize installs a at p or fails the test.
func (k *kit) authorize(p contract.Participant, a contract.Authority) contract.Authority {
	k.t.Helper()
	got, err := p.Authorize(k.ctx, k.res, a)
	if err != nil {
		k.t.Fatalf("Authorize(%s, %s): %v", k.res, a, err)
	}
	return got
}

// held returns the authority p holds for the kit's resource.
func (k *kit) held(p contract.Participant, res string) contract.Authority {
	k.t.Helper()
	got, err := p.Authorize(k.ctx, res, contract.Authority{})
	if err != nil {
		k.t.Fatalf("Authorize(%s) to read the authority held: %v", res, err)
	}
	return got
}

// refFor is the dependent resource written into id's refs.
func refFor(id string) string { return "media/kit-" + id }

// tryWrite writes id at the source, unstamped, with fresh data; refs when
// withRef.
func (k *kit) tryWrite(id string, withRef bool) (contract.Record, error) {
	k.mu.Lock()
	k.mu.n++
	data := []byte(fmt.Sprintf("%s %s write %d", k.res, id, k.mu.n))
	k.mu.Unlock()
	var refs []string
	if withRef {
		refs = []string{refFor(id)}
	}
	rec, err := k.h.SourceUser.Write(k.res, id, data, refs, contract.Authority{})
	if err != nil {
		return contract.Record{}, err
	}
	if rec.ID != id || rec.Deleted {
		return contract.Record{}, fmt.Errorf("Write(%q) returned record %q (deleted %v)", id, rec.ID, rec.Deleted)
	}
	k.mu.Lock()
	k.mu.live[id] = rec
	delete(k.mu.gone, id)
	k.mu.Unlock()
	return rec, nil
}

// write writes id at the source or fails the test.
func (k *kit) write(id string, withRef bool) contract.Record {
	k.t.Helper()
	rec, err := k.tryWrite(id, withRef)
	if err != nil {
		k.t.Fatalf("Write(%q, %q): %v", k.res, id, err)
	}
	return rec
}

// writeN writes ids prefix0..prefix(n-1), every third one with a ref.
func (k *kit) writeN(prefix string, n int) []string {
	k.t.Helper()
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("%s%03d", prefix, i)
		k.write(ids[i], i%3 == 0)
	}
	return ids
}

// tryDelete deletes id at the source, unstamped.
func (k *kit) tryDelete(id string) error {
	if _, err := k.h.SourceUser.Delete(k.res, id, contract.Authority{}); err != nil {
		return err
	}
	k.mu.Lock()
	delete(k.mu.live, id)
	k.mu.gone[id] = true
	k.mu.Unlock()
	return nil
}

// del deletes id at the source or fails the test.
func (k *kit) del(id string) {
	k.t.Helper()
	if err := k.tryDelete(id); err != nil {
		k.t.Fatalf("Delete(%q, %q): %v", k.res, id, err)
	}
}

// export runs an export from req until a page says no more, checking the
// page invariants every implementation must keep.
func (k *kit) export(p contract.Participant, req contract.ExportRequest) []contract.Page {
	k.t.Helper()
	pages, err := k.tryExport(p, req, nil)
	if err != nil {
		k.t.Fatal(err)
	}
	return pages
}

// tryExport is export; between is called after every page but the last.
func (k *kit) tryExport(p contract.Participant, req contract.ExportRequest, between func(i int)) ([]contract.Page, error) {
	limit := req.Limit
	if limit <= 0 {
		limit = contract.DefaultPageLimit
	}
	var pages []contract.Page
	for i := 0; ; i++ {
		if i >= maxPages {
			return nil, fmt.Errorf("export of %s did not end after %d pages", req.Resource, maxPages)
		}
		if req.Authority == (contract.Authority{}) {
			req.Authority = k.src
		}
		page, err := p.Export(k.ctx, req)
		if err != nil {
			return nil, fmt.Errorf("Export(%+v): %w", req, err)
		}
		if err := checkPage(req, page, limit); err != nil {
			return nil, err
		}
		pages = append(pages, page)
		if !page.More {
			return pages, nil
		}
		if page.Next == req.Cursor {
			return nil, fmt.Errorf("Export(%+v): More set but the cursor did not advance", req)
		}
		req.SyncToken, req.Cursor = page.SyncToken, page.Next
		if between != nil {
			between(i)
		}
	}
}

// checkPage checks one page against its request.
func checkPage(req contract.ExportRequest, page contract.Page, limit int) error {
	switch {
	case len(page.Records) > limit:
		return fmt.Errorf("Export(%+v): %d records, above the limit %d", req, len(page.Records), limit)
	case page.Resource != req.Resource:
		return fmt.Errorf("Export(%+v): page of resource %q", req, page.Resource)
	case page.Mode != req.Mode:
		return fmt.Errorf("Export(%+v): page of mode %s", req, page.Mode)
	case req.SyncToken != 0 && page.SyncToken != req.SyncToken:
		return fmt.Errorf("Export(%+v): page under sync token %d", req, page.SyncToken)
	}
	seen := map[string]bool{}
	for _, r := range page.Records {
		if seen[r.ID] {
			return fmt.Errorf("Export(%+v): record %q twice in one page", req, r.ID)
		}
		seen[r.ID] = true
		if r.Deleted && (len(r.Data) != 0 || len(r.Refs) != 0) {
			// paper 001 §4.3: content and PII are stripped at once.
			return fmt.Errorf("Export(%+v): tombstone %q carries data %q refs %q", req, r.ID, r.Data, r.Refs)
		}
	}
	return nil
}

// historical runs a full historical export with limit and returns the
// pages and the sync token they ran under.
func (k *kit) historical(limit int) ([]contract.Page, uint64) {
	k.t.Helper()
	pages := k.export(k.h.Source, contract.ExportRequest{Resource: k.res, Mode: contract.Historical, Limit: limit})
	return pages, pages[0].SyncToken
}

// delta runs a full delta export from token with limit.
func (k *kit) delta(token uint64, limit int) []contract.Page {
	k.t.Helper()
	return k.export(k.h.Source, contract.ExportRequest{Resource: k.res, Mode: contract.Delta, SyncToken: token, Limit: limit})
}

// importAll imports pages into the target in order, under the kit's
// target authority, and returns the results.
func (k *kit) importAll(pages []contract.Page) []contract.ImportResult {
	k.t.Helper()
	out := make([]contract.ImportResult, 0, len(pages))
	for i, p := range pages {
		res, err := k.h.Target.Import(k.ctx, contract.ImportRequest{Resource: k.res, Authority: k.tgt, Page: &p})
		if err != nil {
			k.t.Fatalf("Import(page %d of %d records): %v", i, len(p.Records), err)
		}
		if res.Total != len(p.Records) || res.Applied < 0 || res.Applied > res.Total {
			k.t.Fatalf("Import(page %d of %d records) = %+v", i, len(p.Records), res)
		}
		out = append(out, res)
	}
	return out
}

// digests returns p's digests of the kit's resource.
func (k *kit) digests(p contract.Participant) []contract.SliceDigest {
	k.t.Helper()
	d, err := p.Digests(k.ctx, k.res, contract.Authority{})
	if err != nil {
		k.t.Fatalf("Digests(%s): %v", k.res, err)
	}
	return d
}

// converged checks that the target holds what the source holds: equal
// digests, every live record readable at the target with the source's
// content, every deleted one not found.
func (k *kit) converged() {
	k.t.Helper()
	src, dst := k.digests(k.h.Source), k.digests(k.h.Target)
	if !slices.Equal(src, dst) {
		k.t.Fatalf("digests differ:\nsource %v\ntarget %v", src, dst)
	}
	k.mu.Lock()
	live := maps.Clone(k.mu.live)
	gone := maps.Clone(k.mu.gone)
	k.mu.Unlock()
	var n uint64
	for _, d := range src {
		n += d.Count
	}
	if n != uint64(len(live)) {
		k.t.Fatalf("source digests count %d live records, the kit wrote %d", n, len(live))
	}
	for _, id := range sortedKeys(live) {
		want := live[id]
		got, found := k.read(id)
		if !found {
			k.t.Fatalf("Read(%q) at the target: not found, want %q", id, want.Data)
		}
		if err := sameContent(got, want); err != nil {
			k.t.Fatalf("Read(%q) at the target: %v", id, err)
		}
	}
	// Validation reads both regions through the user read path (paper 001
	// §5.3): the same records in the same order.
	sr, err := k.h.Source.ReadSlice(k.ctx, k.res, 0, math.MaxInt64)
	if err != nil {
		k.t.Fatalf("ReadSlice at the source: %v", err)
	}
	tr, err := k.h.Target.ReadSlice(k.ctx, k.res, 0, math.MaxInt64)
	if err != nil {
		k.t.Fatalf("ReadSlice at the target: %v", err)
	}
	if len(sr) != len(live) || len(tr) != len(sr) {
		k.t.Fatalf("ReadSlice: %d records at the source, %d at the target, the kit wrote %d", len(sr), len(tr), len(live))
	}
	for i := range sr {
		if err := sameContent(tr[i], sr[i]); err != nil {
			k.t.Fatalf("ReadSlice record %d: target %v", i, err)
		}
	}
	// The digests are the contract's bytes (contract.DigestsOf, pinned by
	// services/contract/testdata/digests.json), not merely equal between
	// two participants of one implementation.
	if want := contract.DigestsOf(sr, contract.SliceWidth); !slices.Equal(src, want) {
		k.t.Fatalf("the source's digests are not the contract's (docs/participant.md \"Digests\"):\ngot  %v\nwant %v", src, want)
	}
	if want := contract.DigestsOf(tr, contract.SliceWidth); !slices.Equal(dst, want) {
		k.t.Fatalf("the target's digests are not the contract's (docs/participant.md \"Digests\"):\ngot  %v\nwant %v", dst, want)
	}
	for _, id := range sortedKeys(gone) {
		if got, found := k.read(id); found {
			k.t.Fatalf("Read(%q) at the target found %q; it was deleted at the source", id, got.Data)
		}
	}
}

// read reads id at the target through the user path, routed as after a
// swap (the target the primary, by a revision newer than any the kit
// installed, which a read does not install), or fails the test.
func (k *kit) read(id string) (contract.Record, bool) {
	k.t.Helper()
	rec, found, err := k.h.TargetUser.Read(k.res, id, contract.Authority{Rev: k.rev + 1, Role: contract.RolePrimary})
	if err != nil {
		k.t.Fatalf("Read(%q, %q): %v", k.res, id, err)
	}
	return rec, found
}

// sameContent compares what a migration must carry unchanged.
func sameContent(got, want contract.Record) error {
	switch {
	case got.ID != want.ID:
		return fmt.Errorf("id %q, want %q", got.ID, want.ID)
	case got.Kind != want.Kind:
		return fmt.Errorf("kind %q, want %q", got.Kind, want.Kind)
	case got.CreatedAt != want.CreatedAt:
		return fmt.Errorf("created at %d, want %d", got.CreatedAt, want.CreatedAt)
	case !bytes.Equal(got.Data, want.Data):
		return fmt.Errorf("data %q, want %q", got.Data, want.Data)
	case !slices.Equal(got.Refs, want.Refs):
		return fmt.Errorf("refs %q, want %q", got.Refs, want.Refs)
	}
	return nil
}

// targetRecords returns every record the target holds for the resource,
// tombstones included, through a historical export of the target: the
// target is told it exports (as a move back would) and, afterwards, that
// it imports again, each at a new revision.
func (k *kit) targetRecords() map[string]contract.Record {
	k.t.Helper()
	out := map[string]contract.Record{}
	k.rev++
	as := contract.Authority{Rev: k.rev, Role: contract.RoleExporting, Until: hour()}
	defer func() { k.tgt = k.next(contract.RoleImporting) }()
	for _, p := range k.export(k.h.Target, contract.ExportRequest{Resource: k.res, Mode: contract.Historical, Authority: as}) {
		for _, r := range p.Records {
			out[r.ID] = r
		}
	}
	return out
}

// idsOf returns the record ids of pages in order.
func idsOf(pages []contract.Page) []string {
	var ids []string
	for _, p := range pages {
		for _, r := range p.Records {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// recordsOf returns the records of pages by id (the last one wins).
func recordsOf(pages []contract.Page) map[string]contract.Record {
	out := map[string]contract.Record{}
	for _, p := range pages {
		for _, r := range p.Records {
			out[r.ID] = r
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// codeOf returns the contract error code of err ("" for nil). Errors of
// the user path go through services.ToError, which is how the service
// boundary maps them; Participant errors must already be *contract.Error
// (see mustCode).
func codeOf(err error) contract.Code {
	if err == nil {
		return ""
	}
	return services.ToError(err).Code
}

// mustCode checks that a Participant call failed with a *contract.Error of
// code want.
func (k *kit) mustCode(what string, err error, want contract.Code) {
	k.t.Helper()
	var se *contract.Error
	switch {
	case err == nil:
		k.t.Fatalf("%s: no error, want %s", what, want)
	case !errors.As(err, &se):
		k.t.Fatalf("%s: %T %v, want a *contract.Error with code %s", what, err, err, want)
	case se.Code != want:
		k.t.Fatalf("%s: code %s (%v), want %s", what, se.Code, err, want)
	}
}

package contractnats_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/internal/testutil"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/cutover/cutover/services/contracttest"
	"github.com/cutover/cutover/services/store"
)

const res = "conv/c1"

// The authorities of the tests' migrations: the source under the
// hard-delete lock, then the write lock; the target importing; a read
// routed to the target once it is the primary.
var (
	hardDeleted = contract.Authority{Rev: 10, Role: contract.RolePrimary, Deletes: contract.DeletesTombstone, Until: contract.UntilOf(time.Now().Add(24 * time.Hour))}
	writeLocked = contract.Authority{Rev: 11, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(24 * time.Hour))}
	importing   = contract.Authority{Rev: 11, Role: contract.RoleImporting}
	swappedIn   = contract.Authority{Rev: 12, Role: contract.RolePrimary}
	swappedOut  = contract.Authority{Rev: 12, Role: contract.RoleSecondary}
)

// copyPass exports every page from req through the stream and imports
// each at the target, as importing; it returns the page refs.
func copyPass(t *testing.T, src, dst *contractnats.Client, mig string, req contract.ExportRequest) []contractnats.PageRef {
	t.Helper()
	var refs []contractnats.PageRef
	for {
		ref, err := src.ExportToStream(t.Context(), mig, req)
		if err != nil {
			t.Fatalf("ExportToStream(%+v): %v", req, err)
		}
		if ref.Duplicate {
			t.Fatalf("first export of %+v reported a duplicate", req)
		}
		if ref.Seq != 0 {
			if _, err := dst.ImportFromStream(t.Context(), mig, res, importing, ref.Seq); err != nil {
				t.Fatalf("ImportFromStream(%d): %v", ref.Seq, err)
			}
		}
		refs = append(refs, ref)
		if !ref.More {
			return refs
		}
		req.SyncToken, req.Cursor = ref.SyncToken, ref.Next
	}
}

// sameDigests checks that both regions hold the same live records.
func sameDigests(t *testing.T, src, dst *contractnats.Client) {
	t.Helper()
	a, err := src.Digests(t.Context(), res, contract.Authority{})
	if err != nil {
		t.Fatalf("source Digests: %v", err)
	}
	b, err := dst.Digests(t.Context(), res, contract.Authority{})
	if err != nil {
		t.Fatalf("target Digests: %v", err)
	}
	if len(a) == 0 || !slices.Equal(a, b) {
		t.Fatalf("digests differ:\nsource %v\ntarget %v", a, b)
	}
	sa, err := src.ReadSlice(t.Context(), res, 0, math.MaxInt64)
	if err != nil {
		t.Fatalf("source ReadSlice: %v", err)
	}
	sb, err := dst.ReadSlice(t.Context(), res, 0, math.MaxInt64)
	if err != nil {
		t.Fatalf("target ReadSlice: %v", err)
	}
	if len(sa) != len(sb) {
		t.Fatalf("ReadSlice: %d records at the source, %d at the target", len(sa), len(sb))
	}
	for i := range sa {
		if sa[i].ID != sb[i].ID || string(sa[i].Data) != string(sb[i].Data) || sa[i].Version != sb[i].Version {
			t.Fatalf("ReadSlice record %d: source %+v, target %+v", i, sa[i], sb[i])
		}
	}
}

// TestCopyThroughStream migrates a resource from one region to another the
// way the orchestrator does (paper 001 §4.1, §5.1): historical pages under
// the hard-delete lock's authority through PAGES, writes and deletes
// meanwhile, delta pages under the write lock's; then replays every export
// and every import and checks that nothing changes and the checkpoint only
// moves up.
func TestCopyThroughStream(t *testing.T) {
	e := newEnv(t)
	srcStore, dstFS := openStore(t), vfs.NewMem()
	dstStore := openStoreOn(t, dstFS)
	src := services.NewStoreParticipant("messages", srcStore, services.StoreParticipantOptions{})
	dst := services.NewStoreParticipant("messages", dstStore, services.StoreParticipantOptions{})
	// Signed replies and pages throughout (signing.go): replayed exports
	// find their own signed pages stored.
	secret := []byte("a contract secret of thirty-two bytes or more")
	e.serve(t, "eu", src, contractnats.ServeOptions{Key: contractnats.RegionKey(secret, "eu")})
	dstSrv := e.serve(t, "us", dst, contractnats.ServeOptions{Key: contractnats.RegionKey(secret, "us")})
	keys := contractnats.WithKeys(contractnats.SecretKeys(secret))
	sc := contractnats.Dial(e.nc, e.js, "eu", "messages", keys)
	dc := contractnats.Dial(e.nc, e.js, "us", "messages", keys)
	const mig = "mig-1"

	for i := range 20 {
		var refs []string
		if i%5 == 0 {
			refs = []string{fmt.Sprintf("media/m%d", i)}
		}
		put(t, srcStore, res, fmt.Sprintf("m%02d", i), fmt.Sprintf("hello %d", i), refs...)
	}
	hist := copyPass(t, sc, dc, mig, contract.ExportRequest{Resource: res, Mode: contract.Historical, Limit: 3, Authority: hardDeleted})
	if len(hist) != 7 {
		t.Fatalf("20 records in pages of 3: %d pages", len(hist))
	}
	var deps []string
	for _, r := range hist {
		deps = append(deps, r.Dependents...)
	}
	slices.Sort(deps)
	if want := []string{"media/m0", "media/m10", "media/m15", "media/m5"}; !slices.Equal(deps, want) {
		t.Fatalf("dependents %q, want %q", deps, want)
	}
	tok := hist[0].SyncToken

	// Users keep writing during the historical copy; deletes become
	// tombstones under the hard-delete lock (paper 001 §4.3).
	put(t, srcStore, res, "m01", "edited")
	put(t, srcStore, res, "m20", "late")
	for _, id := range []string{"m02", "m03"} {
		if r, err := srcStore.Delete(res, id); err != nil || !r.Tombstoned {
			t.Fatalf("Delete(%s) = %+v, %v; want a tombstone", id, r, err)
		}
	}
	delta := copyPass(t, sc, dc, mig, contract.ExportRequest{Resource: res, Mode: contract.Delta, SyncToken: tok, Limit: 3, Authority: writeLocked})
	all := append(slices.Clone(hist), delta...)
	last := all[len(all)-1].Seq
	sameDigests(t, sc, dc)
	if _, err := dstStore.GetAt(res, "m02", swappedIn); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("tombstoned m02 at the target: %v, want not found", err)
	}
	if cp, err := dc.Checkpoint(t.Context(), mig); err != nil || cp != last {
		t.Fatalf("Checkpoint = %d, %v; want %d", cp, err, last)
	}
	digests, err := dc.Digests(t.Context(), res, contract.Authority{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("replayed exports land on the stored pages", func(t *testing.T) {
		before := e.pagesCount(t)
		req := contract.ExportRequest{Resource: res, Mode: contract.Historical, SyncToken: tok, Limit: 3, Authority: writeLocked}
		for i, want := range hist {
			ref, err := sc.ExportToStream(t.Context(), mig, req)
			if err != nil {
				t.Fatalf("replayed export %d: %v", i, err)
			}
			if !ref.Duplicate || ref.Seq != want.Seq || ref.Next != want.Next || ref.Count != want.Count {
				t.Fatalf("replayed export %d = %+v, want the stored %+v", i, ref, want)
			}
			req.Cursor = ref.Next
		}
		if after := e.pagesCount(t); after != before {
			t.Fatalf("replayed exports stored %d more pages", after-before)
		}
	})

	t.Run("replayed imports are harmless and the checkpoint is monotone", func(t *testing.T) {
		for i := len(all) - 1; i >= 0; i-- {
			if all[i].Seq == 0 {
				continue
			}
			r, err := dc.ImportFromStream(t.Context(), mig, res, importing, all[i].Seq)
			if err != nil {
				t.Fatalf("re-import of %d: %v", all[i].Seq, err)
			}
			if r.Applied != 0 || r.Total != all[i].Count {
				t.Fatalf("re-import of %d = %+v, want 0 of %d applied", all[i].Seq, r, all[i].Count)
			}
			if cp, err := dc.Checkpoint(t.Context(), mig); err != nil || cp != last {
				t.Fatalf("Checkpoint after re-importing %d = %d, %v; want %d", all[i].Seq, cp, err, last)
			}
		}
		if got, err := dc.Digests(t.Context(), res, contract.Authority{}); err != nil || !slices.Equal(got, digests) {
			t.Fatalf("replays changed the target: %v, %v", got, err)
		}
	})

	t.Run("import checks the page belongs to the migration and service", func(t *testing.T) {
		if _, err := dc.ImportFromStream(t.Context(), "mig-other", res, importing, last); code(t, err) != contract.CodeInvalid {
			t.Fatalf("import of another migration's page: %v, want invalid", err)
		}
		if _, err := dc.ImportFromStream(t.Context(), mig, res, importing, last+1000); code(t, err) != contract.CodeNotFound {
			t.Fatalf("import of a missing page: %v, want not found", err)
		}
		if _, err := dc.ImportFromStream(t.Context(), mig, res, importing, 0); code(t, err) != contract.CodeInvalid {
			t.Fatalf("import of page 0: %v, want invalid", err)
		}
		if _, err := dc.ImportFromStream(t.Context(), "bad.id", res, importing, 1); code(t, err) != contract.CodeInvalid {
			t.Fatalf("import under a bad migration id: %v, want invalid", err)
		}
	})
	t.Run("the checkpoint survives a restart of the importer", func(t *testing.T) {
		if err := dstSrv.Stop(); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if _, err := dc.Checkpoint(t.Context(), mig); code(t, err) != contract.CodeUnavailable {
			t.Fatalf("Checkpoint with the importer stopped: %v, want unavailable", err)
		}
		e.serve(t, "us", dst, contractnats.ServeOptions{Key: contractnats.RegionKey(secret, "us")})
		if cp, err := dc.Checkpoint(t.Context(), mig); err != nil || cp != last {
			t.Fatalf("Checkpoint after a restart = %d, %v; want %d (kept in the store's cursors)", cp, err, last)
		}
		if cp, err := dc.Checkpoint(t.Context(), "mig-other"); err != nil || cp != 0 {
			t.Fatalf("Checkpoint of an unknown migration = %d, %v; want 0", cp, err)
		}
	})
}

// TestExportRetryReturnsStoredPage: an export retried after more writes
// (its first reply was lost, and the write fence it ran under was lifted
// and set again by a later revision) gets the page the stream already
// holds, not the recomputed one, so the cursor it returns matches what the
// importer will read.
func TestExportRetryReturnsStoredPage(t *testing.T) {
	e := newEnv(t)
	st := openStore(t)
	e.serve(t, "eu", services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	c := contractnats.Dial(e.nc, e.js, "eu", "messages")
	put(t, st, res, "a", "1")
	req := contract.ExportRequest{Resource: res, Mode: contract.Delta, Limit: 10, Authority: writeLocked}
	first, err := c.ExportToStream(t.Context(), "mig-r", req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Authorize(t.Context(), res, contract.Authority{Rev: writeLocked.Rev + 1, Role: contract.RolePrimary}); err != nil {
		t.Fatal(err)
	}
	put(t, st, res, "b", "2")
	put(t, st, res, "c", "3")
	req.Authority.Rev += 2
	again, err := c.ExportToStream(t.Context(), "mig-r", req)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Duplicate || again.Seq != first.Seq || again.Count != 1 || again.Next != first.Next {
		t.Fatalf("retried export = %+v, want the stored page %+v", again, first)
	}
	page, err := c.FetchPage(t.Context(), "mig-r", again.Seq)
	if err != nil || len(page.Records) != 1 || page.Records[0].ID != "a" {
		t.Fatalf("FetchPage = %+v, %v", page, err)
	}
	// Continuing from the stored page's cursor finds the later writes.
	req.Cursor = again.Next
	next, err := c.ExportToStream(t.Context(), "mig-r", req)
	if err != nil || next.Duplicate || next.Count != 2 {
		t.Fatalf("next export = %+v, %v; want b and c", next, err)
	}
}

// TestPublishSameMsgIDOnce: a page published twice with the same
// Nats-Msg-Id (a retry after an unknown outcome) is stored once
// (DESIGN.md "Durability and hazards").
func TestPublishSameMsgIDOnce(t *testing.T) {
	e := newEnv(t)
	page := contract.Page{
		Service: "messages", Resource: res, Mode: contract.Historical, SyncToken: 7, Cursor: 0, Next: 1,
		Records: []contract.Record{{ID: "a", Version: 1, Seq: 1, Data: []byte("x")}},
	}
	first, err := contractnats.PublishPage(t.Context(), e.js, "mig-d", page)
	if err != nil || first.Duplicate {
		t.Fatalf("PublishPage = %+v, %v", first, err)
	}
	second, err := contractnats.PublishPage(t.Context(), e.js, "mig-d", page)
	if err != nil || !second.Duplicate || second.Seq != first.Seq {
		t.Fatalf("PublishPage again = %+v, %v; want a duplicate of seq %d", second, err, first.Seq)
	}
	if n := e.pagesCount(t); n != 1 {
		t.Fatalf("PAGES holds %d messages, want 1", n)
	}
	// The same with a raw publish carrying the id the page got.
	id := contractnats.MsgID("mig-d", "messages", contract.Historical, 0, 7, 0)
	data, _ := msgpack.Marshal(&page)
	for range 2 {
		m := nats.NewMsg(contractnats.PageSubject("mig-d", "messages"))
		m.Data = data
		m.Header.Set(nats.MsgIdHdr, id)
		if _, err := e.js.PublishMsg(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.pagesCount(t); n != 1 {
		t.Fatalf("PAGES holds %d messages after raw publishes, want 1", n)
	}
	got, err := contractnats.FetchPage(t.Context(), e.js, "mig-d", "messages", first.Seq)
	if err != nil || !reflect.DeepEqual(got.Records[0].Data, page.Records[0].Data) {
		t.Fatalf("FetchPage = %+v, %v", got, err)
	}
	if _, err := contractnats.ProvisionPages(t.Context(), e.js, 1); err != nil {
		t.Fatalf("ProvisionPages again: %v", err)
	}
	if n := e.pagesCount(t); n != 1 {
		t.Fatalf("provisioning again changed PAGES: %d messages", n)
	}
}

// fake is a Participant with function fields (STYLE.md: hand-written
// fakes); unset methods fail with CodeInternal.
type fake struct {
	service string
	digests func(string) ([]contract.SliceDigest, error)
	cleanup func(string) (int, error)
}

func (f fake) Service() string { return f.service }
func (f fake) Export(context.Context, contract.ExportRequest) (contract.Page, error) {
	return contract.Page{}, contract.Errorf(contract.CodeInternal, "fake")
}
func (f fake) Import(context.Context, contract.ImportRequest) (contract.ImportResult, error) {
	return contract.ImportResult{}, contract.Errorf(contract.CodeInternal, "fake")
}
func (f fake) Authorize(context.Context, string, contract.Authority) (contract.Authority, error) {
	return contract.Authority{}, contract.Errorf(contract.CodeInternal, "fake")
}
func (f fake) Digests(_ context.Context, r string, _ contract.Authority) ([]contract.SliceDigest, error) {
	return f.digests(r)
}
func (f fake) ReadSlice(context.Context, string, int64, int64) ([]contract.Record, error) {
	return nil, contract.Errorf(contract.CodeInternal, "fake")
}
func (f fake) Cleanup(_ context.Context, r string, _ contract.Authority) (int, error) {
	return f.cleanup(r)
}

// TestErrorsCrossTheWire: a remote *contract.Error comes back equal, so
// errors.As, the code, Retry-After and the lock survive NATS.
func TestErrorsCrossTheWire(t *testing.T) {
	e := newEnv(t)
	st := openStore(t)
	e.serve(t, "eu", services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	c := contractnats.Dial(e.nc, e.js, "eu", "messages")

	t.Run("invalid request", func(t *testing.T) {
		_, err := c.ExportToStream(t.Context(), "mig", contract.ExportRequest{Resource: res, Mode: 9})
		if code(t, err) != contract.CodeInvalid {
			t.Fatalf("export with mode 9: %v", err)
		}
		_, err = c.Digests(t.Context(), "", contract.Authority{})
		if code(t, err) != contract.CodeInvalid {
			t.Fatalf("digests of an empty resource: %v", err)
		}
	})

	t.Run("a stale authority is a conflict", func(t *testing.T) {
		if _, err := c.Authorize(t.Context(), res, writeLocked); err != nil {
			t.Fatal(err)
		}
		_, err := c.Authorize(t.Context(), res, hardDeleted)
		if code(t, err) != contract.CodeConflict {
			t.Fatalf("Authorize of an older revision: %v", err)
		}
		if got, err := c.Authorize(t.Context(), res, contract.Authority{}); err != nil || got != writeLocked {
			t.Fatalf("the authority held: %s, %v; want %s", got, err, writeLocked)
		}
	})

	t.Run("fenced write is locked with retry-after", func(t *testing.T) {
		// The fenced store's own refusal, as a service's user path would
		// report it, sent back by a participant over the wire.
		_, werr := st.Put(res, store.Record{ID: "x", Data: []byte("y")}, true)
		want := services.ToError(werr)
		if want.Code != contract.CodeLocked || want.RetryAfter <= 0 {
			t.Fatalf("store refusal %+v", want)
		}
		e.serve(t, "eu", fake{service: "locked", digests: func(string) ([]contract.SliceDigest, error) { return nil, want }}, contractnats.ServeOptions{})
		_, err := contractnats.Dial(e.nc, e.js, "eu", "locked").Digests(t.Context(), res, contract.Authority{})
		var got *contract.Error
		if !errors.As(err, &got) || !reflect.DeepEqual(got, want) {
			t.Fatalf("remote error %#v, want %#v", err, want)
		}
	})

	t.Run("plain errors become internal, panics too", func(t *testing.T) {
		e.serve(t, "eu", fake{
			service: "broken",
			digests: func(string) ([]contract.SliceDigest, error) { return nil, errors.New("disk on fire\nsecond line") },
			cleanup: func(string) (int, error) { panic("boom") },
		}, contractnats.ServeOptions{})
		bc := contractnats.Dial(e.nc, e.js, "eu", "broken")
		if _, err := bc.Digests(t.Context(), res, contract.Authority{}); code(t, err) != contract.CodeInternal {
			t.Fatalf("plain error: %v", err)
		}
		if _, err := bc.Cleanup(t.Context(), res, contract.Authority{Rev: 1, Role: contract.RoleSecondary}); code(t, err) != contract.CodeInternal {
			t.Fatalf("panic: %v", err)
		}
		if _, err := bc.Digests(t.Context(), res, contract.Authority{}); code(t, err) != contract.CodeInternal {
			t.Fatalf("after a panic the server must keep serving: %v", err)
		}
	})
}

// TestNoResponders: calling a service that nobody serves in the region
// fails fast with CodeUnavailable.
func TestNoResponders(t *testing.T) {
	e := newEnv(t)
	c := contractnats.Dial(e.nc, e.js, "nowhere", "messages", contractnats.WithTimeout(5*time.Second))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := c.Digests(ctx, res, contract.Authority{})
	if code(t, err) != contract.CodeUnavailable {
		t.Fatalf("Digests with no server: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("no responders took the whole timeout")
	}
	if _, err := contractnats.Dial(e.nc, e.js, "bad.region", "messages").Authorize(t.Context(), res, contract.Authority{}); code(t, err) != contract.CodeInvalid {
		t.Fatalf("bad region: %v", err)
	}
}

// TestGarbledRequest: payloads that are not the expected msgpack get a
// CodeInvalid reply and change nothing.
func TestGarbledRequest(t *testing.T) {
	e := newEnv(t)
	st := openStore(t)
	e.serve(t, "eu", services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	c := contractnats.Dial(e.nc, e.js, "eu", "messages")
	put(t, st, res, "a", "1")
	before, err := c.Digests(t.Context(), res, contract.Authority{})
	if err != nil {
		t.Fatal(err)
	}
	payloads := [][]byte{
		nil,
		[]byte("not msgpack at all"),
		{0xdd, 0xff, 0xff, 0xff, 0xff},       // array of 4G items
		{0xc6, 0x7f, 0xff, 0xff, 0xff, 0x00}, // bin of 2 GiB
		{0x81, 0xa3, 'r', 'e', 's', 0x2a},    // {"res": 42}
		{0xc1},                               // never-used code
		{0x80, 0x80},                         // trailing bytes
	}
	for _, op := range contractnats.Ops {
		for i, p := range payloads {
			reply, err := e.nc.RequestWithContext(t.Context(), contractnats.EndpointSubject("eu", "messages", op), p)
			if err != nil {
				t.Fatalf("%s payload %d: %v", op, i, err)
			}
			if got := reply.Header.Get(micro.ErrorCodeHeader); got != string(contract.CodeInvalid) {
				t.Fatalf("%s payload %d % x: error code %q (%s), want invalid", op, i, p, got, reply.Header.Get(micro.ErrorHeader))
			}
		}
	}
	after, err := c.Digests(t.Context(), res, contract.Authority{})
	if err != nil || !slices.Equal(after, before) {
		t.Fatalf("garbled requests changed the digests: %v, %v", after, err)
	}
	if a, err := st.Authority(res); err != nil || a != (contract.Authority{}) {
		t.Fatalf("garbled requests installed an authority: %s, %v", a, err)
	}
	if n := e.pagesCount(t); n != 0 {
		t.Fatalf("garbled requests published %d pages", n)
	}
	put(t, st, res, "a", "still writable")
}

// TestDiscover: Discover finds every contract service with its region,
// and counts the instances that share one.
func TestDiscover(t *testing.T) {
	e := newEnv(t)
	msgs := services.NewStoreParticipant("messages", openStore(t), services.StoreParticipantOptions{})
	e.serve(t, "eu", msgs, contractnats.ServeOptions{})
	e.serve(t, "eu", msgs, contractnats.ServeOptions{})
	e.serve(t, "us", services.NewStoreParticipant("reactions", openStore(t), services.StoreParticipantOptions{}), contractnats.ServeOptions{})

	got, err := contractnats.Discover(t.Context(), e.nc, contractnats.DiscoverWait(300*time.Millisecond))
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	want := []contractnats.Endpoint{
		{Region: "eu", Service: "messages", Subject: "cutover.contract.eu.messages", Versions: []string{contractnats.Version}, Instances: 2},
		{Region: "us", Service: "reactions", Subject: "cutover.contract.us.reactions", Versions: []string{contractnats.Version}, Instances: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Discover = %+v\nwant %+v", got, want)
	}
	if _, err := contractnats.Discover(t.Context(), e.nc, contractnats.DiscoverWait(0)); !errors.Is(err, contractnats.ErrInvalidOptions) {
		t.Fatalf("Discover with a zero wait: %v", err)
	}
}

// TestReadSliceSplits: a slice too large for one reply is read in halves.
func TestReadSliceSplits(t *testing.T) {
	e := newEnv(t)
	st := openStore(t)
	p := services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{})
	e.serve(t, "eu", p, contractnats.ServeOptions{MaxReplyBytes: 2000})
	for i := range 40 {
		put(t, st, res, fmt.Sprintf("m%02d", i), fmt.Sprintf("%0200d", i))
	}
	want, err := p.ReadSlice(t.Context(), res, 0, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	got, err := contractnats.Dial(e.nc, e.js, "eu", "messages").ReadSlice(t.Context(), res, 0, math.MaxInt64)
	if err != nil {
		t.Fatalf("ReadSlice: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("ReadSlice: %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || string(got[i].Data) != string(want[i].Data) {
			t.Fatalf("record %d: %s, want %s", i, got[i].ID, want[i].ID)
		}
	}
}

// TestContractKitOverNATS runs the conformance kit with every contract
// call going through a Client, a Server and PAGES.
func TestContractKitOverNATS(t *testing.T) {
	e := newEnv(t)
	var n, ids atomic.Int64
	contracttest.Run(t, func(t *testing.T) contracttest.Harness {
		h := n.Add(1)
		srcStore, dstStore := openStore(t), openStore(t)
		srcRegion, dstRegion := fmt.Sprintf("src%d", h), fmt.Sprintf("dst%d", h)
		e.serve(t, srcRegion, services.NewStoreParticipant("kit", srcStore, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
		e.serve(t, dstRegion, services.NewStoreParticipant("kit", dstStore, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
		return contracttest.Harness{
			Source: remote{c: contractnats.Dial(e.nc, e.js, srcRegion, "kit"), js: e.js, ids: &ids}, SourceUser: contracttest.StoreUser(srcStore),
			Target: remote{c: contractnats.Dial(e.nc, e.js, dstRegion, "kit"), js: e.js, ids: &ids}, TargetUser: contracttest.StoreUser(dstStore),
		}
	})
}

// TestServerHonoursCallerDeadline: the server gives up no later than its
// caller, so a slow participant cannot hold an endpoint past the request.
func TestServerHonoursCallerDeadline(t *testing.T) {
	e := newEnv(t)
	deadlines := make(chan bool, 1)
	srv := e.serve(t, "eu", ctxFake{deadlines: deadlines}, contractnats.ServeOptions{HandlerTimeout: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err := contractnats.Dial(e.nc, e.js, "eu", srv.Service()).Digests(ctx, res, contract.Authority{})
	if code(t, err) != contract.CodeUnavailable {
		t.Fatalf("slow Digests: %v, want unavailable", err)
	}
	if !<-deadlines {
		t.Fatalf("the handler's context had no deadline from the caller")
	}
}

// ctxFake blocks Digests until its context ends.
type ctxFake struct {
	fake
	deadlines chan bool
}

func (f ctxFake) Service() string { return "blocking" }

func (f ctxFake) Digests(ctx context.Context, _ string, _ contract.Authority) ([]contract.SliceDigest, error) {
	dl, ok := ctx.Deadline()
	f.deadlines <- ok && time.Until(dl) < time.Second
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestServeStopsWithContext: the server unregisters when Serve's context
// ends.
func TestServeStopsWithContext(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	p := services.NewStoreParticipant("messages", openStore(t), services.StoreParticipantOptions{})
	srv, err := contractnats.Serve(ctx, e.nc, e.js, "eu", p, contractnats.ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := contractnats.Dial(e.nc, e.js, "eu", "messages")
	if _, err := c.Digests(t.Context(), res, contract.Authority{}); err != nil {
		t.Fatalf("Digests while serving: %v", err)
	}
	cancel()
	testutil.WaitFor(t, "the server to stop", func() bool {
		_, err := c.Digests(t.Context(), res, contract.Authority{})
		var se *contract.Error
		return errors.As(err, &se) && se.Code == contract.CodeUnavailable
	})
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop after the context ended: %v", err)
	}
	if _, err := contractnats.Serve(t.Context(), e.nc, e.js, "bad.region", p, contractnats.ServeOptions{}); !errors.Is(err, contractnats.ErrInvalidName) {
		t.Fatalf("Serve in a bad region: %v", err)
	}
	if _, err := contractnats.Serve(t.Context(), e.nc, e.js, "eu", p, contractnats.ServeOptions{HandlerTimeout: -1}); !errors.Is(err, contractnats.ErrInvalidOptions) {
		t.Fatalf("Serve with a negative timeout: %v", err)
	}
}

// TestRescheduledAttemptPublishesItsOwnPage: a rescheduled
// attempt exports the same position (same sync token and cursor: a physical
// delete does not advance the change sequence) with different records; its
// page must be stored, not deduplicated against the previous attempt's.
func TestRescheduledAttemptPublishesItsOwnPage(t *testing.T) {
	e := newEnv(t)
	page := contract.Page{
		Service: "reactions", Resource: res, Mode: contract.Delta, SyncToken: 7, Cursor: 3, Next: 4, Attempt: 1,
		Records: []contract.Record{{ID: "r1", Version: 1, Seq: 3, Data: []byte("+1")}},
	}
	first, err := contractnats.PublishPage(t.Context(), e.js, "mig-r", page)
	if err != nil || first.Duplicate {
		t.Fatalf("attempt 1: %+v, %v", first, err)
	}
	page.Attempt = 2
	page.Records = []contract.Record{{ID: "r1", Version: 2, Seq: 3, Deleted: true}}
	second, err := contractnats.PublishPage(t.Context(), e.js, "mig-r", page)
	if err != nil || second.Duplicate || second.Seq == first.Seq {
		t.Fatalf("attempt 2 = %+v, %v; want a new page, not attempt 1's (seq %d)", second, err, first.Seq)
	}
	got, err := contractnats.FetchPage(t.Context(), e.js, "mig-r", "reactions", second.Seq)
	if err != nil || len(got.Records) != 1 || !got.Records[0].Deleted || got.Attempt != 2 {
		t.Fatalf("FetchPage = %+v, %v", got, err)
	}
	// Within one attempt a retried publish is still deduplicated.
	again, err := contractnats.PublishPage(t.Context(), e.js, "mig-r", page)
	if err != nil || !again.Duplicate || again.Seq != second.Seq {
		t.Fatalf("attempt 2 again = %+v, %v", again, err)
	}
}

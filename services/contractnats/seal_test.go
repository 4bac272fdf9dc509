package contractnats_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/cutover/cutover/services/store"
)

// Issue 16 #5 over the wire: an inline delta page (nothing published), an
// import that grants in the same request, a seal in the request that
// imports the last page (digests in the reply, the token retired: a late
// import of the attempt is refused), a seal repeated after that (Refused,
// the same digests), and the requests that make no sense refused with
// CodeInvalid before anything changes.
func TestInlinePagesAndSeals(t *testing.T) {
	e := newEnv(t)
	srcStore, dstStore := openStore(t), openStore(t)
	e.serve(t, "eu", services.NewStoreParticipant("messages", srcStore, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	e.serve(t, "us", services.NewStoreParticipant("messages", dstStore, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	sc := contractnats.Dial(e.nc, e.js, "eu", "messages")
	dc := contractnats.Dial(e.nc, e.js, "us", "messages")
	const mig, token = "mig-seal", "tok-seal"
	for i := range 4 {
		put(t, srcStore, res, fmt.Sprintf("m%d", i), fmt.Sprintf("hello %d", i))
	}
	until := time.Now().Add(time.Hour)

	// The historical copy through the stream, granted in the import
	// request itself (no GrantImport call).
	ref, err := sc.ExportToStream(t.Context(), mig, contract.ExportRequest{Resource: res, Mode: contract.Historical})
	if err != nil || ref.Seq == 0 || ref.Page != nil {
		t.Fatalf("historical export: %+v %v; want a page in the stream", ref, err)
	}
	if _, err := dc.Import(t.Context(), mig, contract.PageInfo{Seq: ref.Seq, Grant: token, GrantUntil: until, Resource: res}); err != nil {
		t.Fatalf("import granting in the same request: %v", err)
	}

	// A write after the snapshot: the delta, asked for inline.
	put(t, srcStore, res, "m9", "late")
	before := e.pagesCount(t)
	dref, err := sc.ExportToStream(t.Context(), mig, contract.ExportRequest{Resource: res, Mode: contract.Delta, SyncToken: ref.SyncToken, Inline: true})
	if err != nil {
		t.Fatalf("inline delta export: %v", err)
	}
	if dref.Seq != 0 || dref.Page == nil || len(dref.Page.Records) != 1 || dref.Count != 1 || dref.More {
		t.Fatalf("inline delta export: %+v; want one record inline, nothing published", dref)
	}
	if n := e.pagesCount(t); n != before {
		t.Fatalf("an inline export published: %d pages, was %d", n, before)
	}

	// Both a sequence and an inline page, or neither without a seal:
	// refused, nothing applied.
	for name, pi := range map[string]contract.PageInfo{
		"both":    {Seq: ref.Seq, Page: dref.Page, Grant: token},
		"neither": {Grant: token, Resource: res},
	} {
		if _, err := dc.Import(t.Context(), mig, pi); code(t, err) != contract.CodeInvalid {
			t.Fatalf("%s: %v, want invalid", name, err)
		}
	}
	if n := len(readAll(t, dstStore)); n != 4 {
		t.Fatalf("target holds %d records after refused imports, want 4", n)
	}

	// The last page and the seal in one request.
	r, err := dc.Import(t.Context(), mig, contract.PageInfo{Page: dref.Page, Grant: token, GrantUntil: until, Seal: true, Resource: res})
	if err != nil {
		t.Fatalf("sealing import: %v", err)
	}
	src, err := sc.Digests(t.Context(), res)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Sealed || r.Refused || r.Applied != 1 || !slices.Equal(r.Digests, src) {
		t.Fatalf("sealing import: %+v; want sealed, 1 applied, the source's digests %v", r, src)
	}

	// The token is retired: a late import of the attempt changes nothing,
	// granting in the request or not.
	put(t, srcStore, res, "m10", "too late")
	late, err := sc.ExportToStream(t.Context(), mig, contract.ExportRequest{Resource: res, Mode: contract.Delta, SyncToken: ref.SyncToken, Cursor: dref.Next, Inline: true})
	if err != nil || late.Page == nil {
		t.Fatalf("late export: %+v %v", late, err)
	}
	for _, gu := range []time.Time{{}, until} {
		if _, err := dc.Import(t.Context(), mig, contract.PageInfo{Page: late.Page, Grant: token, GrantUntil: gu, Resource: res}); code(t, err) != contract.CodeConflict {
			t.Fatalf("import after the seal (grant until %v): %v, want conflict", gu, err)
		}
	}

	// Sealing again (a redelivered step): nothing applied, Refused, the
	// digests of what the first seal left.
	r2, err := dc.Import(t.Context(), mig, contract.PageInfo{Page: late.Page, Grant: token, GrantUntil: until, Seal: true, Resource: res})
	if err != nil {
		t.Fatalf("second seal: %v", err)
	}
	if !r2.Sealed || !r2.Refused || r2.Applied != 0 || !slices.Equal(r2.Digests, src) {
		t.Fatalf("second seal: %+v; want sealed, refused, nothing applied, digests %v", r2, src)
	}
	alone, err := dc.Import(t.Context(), mig, contract.PageInfo{Grant: token, Seal: true, Resource: res})
	if err != nil || !alone.Sealed || !slices.Equal(alone.Digests, src) {
		t.Fatalf("seal without a page: %+v %v", alone, err)
	}
	if n := len(readAll(t, dstStore)); n != 5 {
		t.Fatalf("target holds %d records, want the 5 sealed", n)
	}
}

// An inline export too large for one message is published as usual.
func TestInlineExportFallsBackToTheStream(t *testing.T) {
	e := newEnv(t)
	srcStore := openStore(t)
	e.serve(t, "eu", services.NewStoreParticipant("messages", srcStore, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	sc := contractnats.Dial(e.nc, e.js, "eu", "messages")
	big := strings.Repeat("x", 64<<10)
	for i := range 6 { // 6 × 64 KiB > InlinePageMax
		put(t, srcStore, res, fmt.Sprintf("b%d", i), big)
	}
	ref, err := sc.ExportToStream(t.Context(), "mig-big", contract.ExportRequest{Resource: res, Mode: contract.Historical, Inline: true})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Page != nil || ref.Seq == 0 || ref.Count != 6 {
		t.Fatalf("large inline export: seq %d, count %d, inline %v; want it in the stream", ref.Seq, ref.Count, ref.Page != nil)
	}
}

func readAll(t *testing.T, st *store.Store) []store.Record {
	t.Helper()
	recs, err := st.ListSlice(res, 0, 1<<62, 0, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A fence request that also exports (Client.FenceAndExport): the fence is
// set first, then the page is exported inline; a write after it is
// refused, so the page stays final. A request for another resource is
// refused before anything changes; a fence refused (another token's) sets
// nothing and exports nothing.
func TestFenceAndExport(t *testing.T) {
	e := newEnv(t)
	src := openStore(t)
	e.serve(t, "eu", services.NewStoreParticipant("messages", src, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	sc := contractnats.Dial(e.nc, e.js, "eu", "messages")
	for i := range 3 {
		put(t, src, res, fmt.Sprintf("m%d", i), "hello")
	}
	hist, err := sc.ExportToStream(t.Context(), "mig-fx", contract.ExportRequest{Resource: res, Mode: contract.Historical})
	if err != nil {
		t.Fatal(err)
	}
	put(t, src, res, "m9", "late")
	f := contract.FenceFor(store.FenceWrite, "tok-fx", time.Now().Add(time.Hour), 0)
	delta := contract.ExportRequest{Resource: res, Mode: contract.Delta, SyncToken: hist.SyncToken, Inline: true}

	if _, _, err := sc.FenceAndExport(t.Context(), "mig-fx", "conv/other", f, delta); code(t, err) != contract.CodeInvalid {
		t.Fatalf("fence of one resource exporting another: %v, want invalid", err)
	}
	if fe, err := src.GetFence(res); err != nil || fe.Level != store.FenceNone {
		t.Fatalf("fence after a refused request: %+v %v", fe, err)
	}
	ref, ok, err := sc.FenceAndExport(t.Context(), "mig-fx", res, f, delta)
	if err != nil || !ok || ref.Page == nil || ref.Count != 1 || ref.Page.Records[0].ID != "m9" {
		t.Fatalf("FenceAndExport: %+v exported=%v %v; want the late record inline", ref, ok, err)
	}
	if fe, err := src.GetFence(res); err != nil || fe.Level != store.FenceWrite {
		t.Fatalf("fence after FenceAndExport: %+v %v", fe, err)
	}
	if _, err := src.Put(res, store.Record{ID: "m10", Kind: "message", Data: []byte("refused")}, true); err == nil {
		t.Fatal("a write under the write fence was applied")
	}
	other := contract.FenceFor(store.FenceWrite, "tok-other", time.Now().Add(time.Hour), 0)
	if _, ok, err := sc.FenceAndExport(t.Context(), "mig-fx", res, other, delta); code(t, err) != contract.CodeConflict || ok {
		t.Fatalf("another token's fence: exported=%v %v, want conflict", ok, err)
	}
}

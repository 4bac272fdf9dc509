package contractnats_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/cutover/cutover/services/store"
)

// Phase 3 over the wire: a delta export stamped with the write lock
// installs the write fence before it reads and returns its page inline
// (nothing published); the import of the last page carries it back and
// answers with the target's digests; an import of the attempt after the
// target was told the swap changes nothing; the requests that make no
// sense are refused with CodeInvalid before anything changes.
func TestInlinePagesAndDigests(t *testing.T) {
	e := newEnv(t)
	srcStore, dstStore := openStore(t), openStore(t)
	e.serve(t, "eu", services.NewStoreParticipant("messages", srcStore, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	e.serve(t, "us", services.NewStoreParticipant("messages", dstStore, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	sc := contractnats.Dial(e.nc, e.js, "eu", "messages")
	dc := contractnats.Dial(e.nc, e.js, "us", "messages")
	const mig = "mig-inline"
	for i := range 4 {
		put(t, srcStore, res, fmt.Sprintf("m%d", i), fmt.Sprintf("hello %d", i))
	}
	ref, err := sc.ExportToStream(t.Context(), mig, contract.ExportRequest{Resource: res, Mode: contract.Historical, Authority: hardDeleted})
	if err != nil || ref.Seq == 0 || ref.Page != nil {
		t.Fatalf("historical export: %+v %v; want a page in the stream", ref, err)
	}
	if r, err := dc.Import(t.Context(), mig, contract.PageInfo{Seq: ref.Seq, Resource: res, Authority: importing, Reset: true}); err != nil || r.Applied != 4 {
		t.Fatalf("the first import, resetting: %+v %v", r, err)
	}

	// A write after the snapshot: the delta, asked for inline under the
	// write lock, which the source installs before it reads.
	put(t, srcStore, res, "m9", "late")
	before := e.pagesCount(t)
	dref, err := sc.ExportToStream(t.Context(), mig, contract.ExportRequest{Resource: res, Mode: contract.Delta, SyncToken: ref.SyncToken, Inline: true, Authority: writeLocked})
	if err != nil {
		t.Fatalf("inline delta export: %v", err)
	}
	if dref.Seq != 0 || dref.Page == nil || len(dref.Page.Records) != 1 || dref.Count != 1 || dref.More {
		t.Fatalf("inline delta export: %+v; want one record inline, nothing published", dref)
	}
	if n := e.pagesCount(t); n != before {
		t.Fatalf("an inline export published: %d pages, was %d", n, before)
	}
	if _, err := srcStore.Put(res, store.Record{ID: "m10", Kind: "message", Data: []byte("refused")}, true); contract.AsError(err).Lock != contract.LockWriteFence {
		t.Fatalf("a write after the write lock's export: %v, want the write fence", err)
	}

	// Both a sequence and an inline page: refused, nothing applied.
	if _, err := dc.Import(t.Context(), mig, contract.PageInfo{Seq: ref.Seq, Page: dref.Page, Resource: res, Authority: importing}); code(t, err) != contract.CodeInvalid {
		t.Fatalf("both: %v, want invalid", err)
	}
	if n := len(readAll(t, dstStore)); n != 4 {
		t.Fatalf("target holds %d records after a refused import, want 4", n)
	}

	// The last page and the digests in one request.
	r, err := dc.Import(t.Context(), mig, contract.PageInfo{Page: dref.Page, Resource: res, Authority: importing, Digests: true})
	if err != nil {
		t.Fatalf("the last import: %v", err)
	}
	src, err := sc.Digests(t.Context(), res, writeLocked)
	if err != nil {
		t.Fatal(err)
	}
	if r.Applied != 1 || !slices.Equal(r.Digests, src) {
		t.Fatalf("the last import: %+v; want 1 applied, the source's digests %v", r, src)
	}
	// The digests alone, without a page.
	alone, err := dc.Import(t.Context(), mig, contract.PageInfo{Resource: res, Authority: importing, Digests: true})
	if err != nil || !slices.Equal(alone.Digests, src) {
		t.Fatalf("digests without a page: %+v %v", alone, err)
	}

	// The swap: the target is the primary now; a late import of the
	// attempt is refused.
	if _, err := dc.Authorize(t.Context(), res, swappedIn); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.Import(t.Context(), mig, contract.PageInfo{Seq: ref.Seq, Resource: res, Authority: importing}); code(t, err) != contract.CodeConflict {
		t.Fatalf("an import after the swap: %v, want conflict", err)
	}
	if n := len(readAll(t, dstStore)); n != 5 {
		t.Fatalf("target holds %d records, want the 5 copied", n)
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
	ref, err := sc.ExportToStream(t.Context(), "mig-big", contract.ExportRequest{Resource: res, Mode: contract.Historical, Inline: true, Authority: hardDeleted})
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

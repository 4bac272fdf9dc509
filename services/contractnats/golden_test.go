package contractnats

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/services/contract"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/wire.golden")

// goldenValues are the contract's wire values with fixed contents: their
// encodings must never change, or servers and clients of different builds
// stop understanding each other (and pages already in PagesStream become
// unreadable).
func goldenValues() []struct {
	name string
	v    any
} {
	t0 := time.Unix(1_800_000_000, 123_456_789).UTC()
	return []struct {
		name string
		v    any
	}{
		{"export-request", &exportRequest{Migration: "m1", Request: contract.ExportRequest{Resource: "conv/c1", Mode: contract.Delta, SyncToken: 5, Cursor: 9, Limit: 3}}},
		{"export-request-stamped", &exportRequest{Migration: "m1", Request: contract.ExportRequest{Resource: "conv/c1", Mode: contract.Historical, Limit: 500, Attempt: 2,
			Authority: contract.Authority{Rev: 7, Role: contract.RolePrimary, Deletes: contract.DeletesTombstone, Until: t0.UnixMilli()}}}},
		{"authority-request", &authorityRequest{Resource: "conv/c1", Authority: contract.Authority{Rev: 9, Role: contract.RoleExporting, Until: t0.UnixMilli()}}},
		{"authority-secondary", &authorityRequest{Resource: "conv/c1", Authority: contract.Authority{Rev: 12, Role: contract.RoleSecondary}}},
		{"authority-reply", &authorityReply{Authority: contract.Authority{Rev: 12, Role: contract.RolePrimary}}},
		{"import-request", &importRequest{Migration: "m1", Resource: "conv/c1", Authority: contract.Authority{Rev: 9, Role: contract.RoleImporting}, Seq: 4, Reset: true}},
		{"import-request-inline", &importRequest{Migration: "m1", Resource: "conv/c1", Authority: contract.Authority{Rev: 9, Role: contract.RoleImporting}, Digests: true,
			Page: &contract.Page{Service: "messages", Resource: "conv/c1", Mode: contract.Delta, SyncToken: 1, Cursor: 1, Next: 2,
				Records: []contract.Record{{ID: "a", Kind: "message", Version: 1, Seq: 2, CreatedAt: 3, UpdatedAt: 4, Data: []byte("hi")}}}}},
		{"cleanup-reply", &cleanupReply{Removed: 3}},
		{"page", &contract.Page{Service: "messages", Resource: "conv/c1", Mode: contract.Historical, SyncToken: 1, Cursor: 0, Next: 2, More: true,
			Records: []contract.Record{
				{ID: "a", Kind: "message", Version: 1, Seq: 2, CreatedAt: 3, UpdatedAt: 4, Data: []byte("hi"), Refs: []string{"media/x"}},
				{ID: "b", Kind: "message", Version: 2, Seq: 3, CreatedAt: 5, UpdatedAt: 6, Deleted: true, DeletedAt: 7},
			},
			Dependents: []string{"media/x"}}},
		{"import-result", &contract.ImportResult{Applied: 1, Total: 2}},
		{"import-result-digests", &contract.ImportResult{Applied: 1, Total: 1, Removed: 4, Digests: []contract.SliceDigest{{Slice: 3_600_000_000_000, Count: 1, Hash: [16]byte{0xde, 0xad}}}}},
		{"error", &contract.Error{Code: contract.CodeLocked, Message: "m", RetryAfter: time.Minute, Lock: "fence write"}},
		{"error-moved", &contract.Error{Code: contract.CodeLocked, Message: "m", Lock: "moved"}},
		{"digests", []contract.SliceDigest{{Slice: 1, Count: 2, Hash: [16]byte{1, 2, 3}}}},
		{"page-ref", &PageRef{Seq: 3, Count: 2, Next: 4, More: true, SyncToken: 2, Dependents: []string{"media/a"}, Duplicate: true}},
		{"page-ref-inline", &PageRef{Count: 1, Next: 9, SyncToken: 2, Page: &contract.Page{Service: "messages", Resource: "conv/c1", Mode: contract.Delta, SyncToken: 2, Cursor: 8, Next: 9,
			Records: []contract.Record{{ID: "c", Kind: "message", Version: 1, Seq: 9, CreatedAt: 10, UpdatedAt: 10, Data: []byte("yo")}}, Attempt: 1}}},
		{"digests-none", []contract.SliceDigest(nil)},
		{"slice-request", &sliceRequest{Resource: "conv/c1", From: 0, To: 3_600_000_000_000}},
		{"slice-reply", []contract.Record{{ID: "a", Kind: "message", Version: 1, Seq: 2, CreatedAt: 3, UpdatedAt: 4, Data: []byte("hi")}}},
		{"checkpoint-request", &checkpointRequest{Migration: "m1"}},
		{"checkpoint-reply", &checkpointReply{Seq: 4}},
	}
}

// TestWireGolden compares the encoding of every golden value with
// testdata/wire.golden ("name hex" lines).
func TestWireGolden(t *testing.T) {
	var b strings.Builder
	for _, g := range goldenValues() {
		raw, err := msgpack.Marshal(g.v)
		if err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		fmt.Fprintf(&b, "%s %s\n", g.name, hex.EncodeToString(raw))
	}
	const path = "testdata/wire.golden"
	if *updateGolden {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, h, _ := strings.Cut(sc.Text(), " ")
		want[name] = h
	}
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		name, got, _ := strings.Cut(line, " ")
		if want[name] != got {
			t.Errorf("%s: wire bytes changed\n got %s\nwant %s", name, got, want[name])
		}
	}
}

// TestWireAcceptsCompactInts: other languages' msgpack libraries write
// integers in their smallest form (Go's writes uint64 and int64 at full
// width); every wire value encoded that way decodes to the same value
// (docs/participant.md "Encoding").
func TestWireAcceptsCompactInts(t *testing.T) {
	for _, g := range goldenValues() {
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		enc.UseCompactInts(true)
		if err := enc.Encode(g.v); err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		out := reflect.New(reflect.TypeOf(g.v)).Interface()
		if err := decode(buf.Bytes(), out); err != nil {
			t.Fatalf("%s: decode compact form: %v", g.name, err)
		}
		if got := reflect.ValueOf(out).Elem().Interface(); !reflect.DeepEqual(got, g.v) {
			t.Errorf("%s: compact form decodes to %#v, want %#v", g.name, got, g.v)
		}
	}
}

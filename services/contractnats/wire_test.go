package contractnats

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/services/contract"
)

// wireValues are one of every message the contract sends.
func wireValues() []any {
	now := time.Now()
	return []any{
		&exportRequest{Migration: "m", Request: contract.ExportRequest{Resource: "conv/c1", Mode: contract.Delta, SyncToken: 5, Cursor: 9, Limit: 3}},
		&importRequest{Migration: "m", Resource: "conv/c1", Authority: contract.Authority{Rev: 1 << 40, Role: contract.RoleImporting}, Seq: 1 << 40, Reset: true, Digests: true},
		&authorityRequest{Resource: "conv/c1"},
		&sliceRequest{Resource: "conv/c1", From: -1, To: 1 << 62},
		&authorityRequest{Resource: "conv/c1", Authority: contract.Authority{Rev: 7, Role: contract.RoleExporting, Until: now.UnixMilli()}},
		&authorityReply{Authority: contract.Authority{Rev: 7, Deletes: contract.DeletesTombstone, Until: now.UnixMilli()}},
		&checkpointRequest{Migration: "m"},
		&PageRef{Seq: 3, Count: 2, Next: 4, More: true, SyncToken: 2, Dependents: []string{"media/a"}, Duplicate: true},
		&contract.Page{Service: "s", Resource: "r", Mode: contract.Historical, SyncToken: 1, Next: 2, More: true,
			Records:    []contract.Record{{ID: "a", Version: 1, Data: make([]byte, 300), Refs: []string{"media/x"}}, {ID: "b", Deleted: true}},
			Dependents: []string{"media/x"}},
		&contract.Error{Code: contract.CodeLocked, Message: "m", RetryAfter: time.Minute, Lock: "fence write"},
		[]contract.SliceDigest{{Slice: 1, Count: 2, Hash: [16]byte{1, 2}}},
		&cleanupReply{Removed: -1},
		&checkpointReply{Seq: 1<<64 - 1},
		map[string]any{"f": 1.5, "g": float32(2), "i": int8(-3), "n": nil, "b": true, "s": string(make([]byte, 300))},
	}
}

func TestCheckMsgpackAcceptsWireValues(t *testing.T) {
	for _, v := range wireValues() {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkMsgpack(b); err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		for i := range len(b) {
			if err := checkMsgpack(b[:i]); !errors.Is(err, errGarbled) {
				t.Fatalf("%T truncated to %d of %d bytes: %v", v, i, len(b), err)
			}
		}
		if err := checkMsgpack(append(b, 0)); !errors.Is(err, errGarbled) {
			t.Fatalf("%T with a trailing byte: %v", v, err)
		}
	}
}

func TestCheckMsgpackRejectsHugeLengths(t *testing.T) {
	for _, b := range [][]byte{
		{0xdd, 0xff, 0xff, 0xff, 0xff},
		{0xdf, 0x7f, 0xff, 0xff, 0xff},
		{0xc6, 0xff, 0xff, 0xff, 0xff},
		{0xdb, 0x00, 0x10, 0x00, 0x00, 'a'},
		{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01},
		{0x9f, 0x01},
	} {
		if err := checkMsgpack(b); !errors.Is(err, errGarbled) {
			t.Fatalf("% x: %v", b, err)
		}
	}
}

// FuzzDecode: no input makes decode panic or accept a malformed payload.
func FuzzDecode(f *testing.F) {
	for _, v := range wireValues() {
		b, _ := msgpack.Marshal(v)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var p contract.Page
		_ = decode(b, &p)
		var r exportRequest
		_ = decode(b, &r)
	})
}

// TestDecodeRandom runs random mutations of the wire values through
// decode, as a cheap fuzz run in every test.
func TestDecodeRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, v := range wireValues() {
		b, _ := msgpack.Marshal(v)
		for range 300 {
			m := append([]byte(nil), b...)
			for range 1 + rng.IntN(4) {
				m[rng.IntN(len(m))] = byte(rng.UintN(256))
			}
			var p contract.Page
			_ = decode(m, &p)
			var f authorityRequest
			_ = decode(m, &f)
		}
	}
}

func TestNames(t *testing.T) {
	if got := MsgID("mig-1", "messages", contract.Delta, 0, 5, 9); got != "mig-1/messages/delta/5/9" {
		t.Fatalf("MsgID = %q", got)
	}
	if got := MsgID("mig-1", "messages", contract.Delta, 2, 5, 9); got != "mig-1/messages/delta@2/5/9" {
		t.Fatalf("MsgID with attempt = %q", got)
	}
	if got := EndpointSubject("eu", "messages", OpExport); got != "cutover.contract.eu.messages.export" {
		t.Fatalf("EndpointSubject = %q", got)
	}
	if got := PageSubject("mig-1", "messages"); got != "cutover.pages.mig-1.messages" {
		t.Fatalf("PageSubject = %q", got)
	}
	longest := checkpointName(strings.Repeat("m", maxMigrationLen), strings.Repeat("s", maxServiceLen))
	if len(longest) > 256 {
		t.Fatalf("checkpoint name of %d bytes does not fit a store cursor", len(longest))
	}
	for _, bad := range []string{"", "a.b", "a b", "a/b", "a*", ">", strings.Repeat("s", maxServiceLen+1)} {
		if err := ValidateService(bad); !errors.Is(err, ErrInvalidName) {
			t.Fatalf("ValidateService(%q) = %v", bad, err)
		}
	}
	if err := ValidateMigrationID("01J9ZQ-abc_DEF"); err != nil {
		t.Fatal(err)
	}
}

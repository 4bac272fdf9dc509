package wire

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

const wholeToken = "0123456789abcdef0123456789abcdef"

func sampleDoc() *kvrouting.Document {
	t0 := time.Date(2026, 12, 4, 3, 0, 0, 123, time.UTC)
	return &kvrouting.Document{Resource: "conv/lunch", MigrationID: "m1", Target: "eu-west",
		Primary:   kvrouting.Location{Region: "us-east", Lock: kvrouting.Lock{Type: kvrouting.LockWrite, Token: wholeToken, NotBefore: t0, Expiry: t0.Add(time.Second)}},
		Secondary: &kvrouting.Location{Region: "eu-west", Lock: kvrouting.Lock{Type: kvrouting.LockSecondary, Token: wholeToken, Expiry: t0.Add(time.Hour)}},
		LastSwap:  &kvrouting.SwapRecord{MigrationID: "m0", Token: wholeToken}, UpdatedAt: t0}
}

// A routing value from the Go encoder decodes to the documented JSON:
// lock types by name and number, times in RFC 3339, the KV key, tokens
// never whole.
func TestDecodeRouting(t *testing.T) {
	b, err := sampleDoc().Encode()
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(KindRouting, b)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), wholeToken) {
		t.Fatalf("a whole token in %s", out)
	}
	var r Routing
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.Key != "conv.lunch" || r.Primary.Lock.Type != "write" || r.Primary.Lock.TypeCode != 3 ||
		r.Secondary.Lock.Type != "secondary" || r.Primary.Lock.NotBefore != "2026-12-04T03:00:00.000000123Z" ||
		r.Primary.Lock.Token != "012345…" || r.LastSwap.MigrationID != "m0" || r.SchemaVersion != kvrouting.SchemaVersion {
		t.Fatalf("decoded %s", out)
	}
}

// An event envelope: the envelope's fields by name, `at` both as RFC 3339
// and as its wire int64 nanoseconds, the body and the state by the long
// names of the one JSON vocabulary (not their wire keys), every token
// redacted.
func TestDecodeEvent(t *testing.T) {
	at := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	st := &events.State{ID: "m1", Resource: "conv/lunch", Token: wholeToken, LockExpiry: at}
	b, err := events.Encode(&events.Envelope{ID: "e1", MigrationID: "m1", Resource: "conv/lunch", Time: at, State: st,
		Body: events.Requested{Resource: "conv/lunch", Target: "eu-west", Attempt: 1, MaxAttempts: 3, Token: wholeToken}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(KindEvent, b)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), wholeToken) {
		t.Fatalf("a whole token in %s", out)
	}
	var e struct {
		Event
		Body  map[string]any `json:"body"`
		State map[string]any `json:"state"`
	}
	if err := json.Unmarshal(out, &e); err != nil {
		t.Fatal(err)
	}
	if e.Type != events.TypeRequested || e.At != "2026-12-04T03:00:00Z" || e.AtUnixNano != at.UnixNano() ||
		e.Body["target"] != "eu-west" || e.Body["token"] != "012345…" || e.State["lock_expiry"] != "2026-12-04T03:00:00Z" ||
		e.Body["max_attempts"] != 3.0 || e.Body["tgt"] != nil {
		t.Fatalf("decoded %s", out)
	}
}

// A page: long names, the export mode by name, records with their bytes
// (base64 in JSON).
func TestDecodePage(t *testing.T) {
	b, err := msgpack.Marshal(&contract.Page{Service: "messages", Resource: "conv/lunch", SyncToken: 7, Mode: contract.Delta,
		Records: []contract.Record{{ID: "m1", Kind: "message", Version: 1, Data: []byte("hi")}}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(KindPage, b)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), wholeToken) || !strings.Contains(string(out), `"sync_token":7`) || !strings.Contains(string(out), `"data":"aGk="`) ||
		!strings.Contains(string(out), `"mode":"delta"`) {
		t.Fatalf("decoded %s", out)
	}
}

// Bad input: a clear error, never a panic or a huge allocation.
func TestDecodeBadInput(t *testing.T) {
	if _, err := Decode("lock", []byte{0x80}); !errors.Is(err, ErrKind) {
		t.Fatalf("unknown kind: %v", err)
	}
	for _, kind := range Kinds {
		for _, b := range [][]byte{{0xc1}, {0xdd, 0xff, 0xff, 0xff, 0xff}, []byte("not msgpack at all"), {0x80, 0x00}} {
			if _, err := Decode(kind, b); !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s %x: %v, want ErrMalformed", kind, b, err)
			}
		}
	}
}

// docs/wire-format.md's key escaping examples are what Key computes.
func TestWireFormatKeyExamples(t *testing.T) {
	b, err := os.ReadFile("../../docs/wire-format.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for res, key := range map[string]string{"conv/lunch": "conv.lunch", "conv/a.b c": "conv.a=2Eb=20c", "conv/lunch/1": "conv.lunch=2F1"} {
		r, err := kvrouting.ParseResource(res)
		if err != nil {
			t.Fatal(err)
		}
		if r.Key() != key {
			t.Errorf("%s: key %s, the doc says %s", res, r.Key(), key)
		}
		if !strings.Contains(doc, "`"+res+"` →\n`"+key+"`") && !strings.Contains(doc, "`"+res+"` → `"+key+"`") {
			t.Errorf("docs/wire-format.md does not show %s → %s", res, key)
		}
	}
}

package events

import (
	"bytes"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

func sampleBodies() []Body {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	return []Body{
		Start{Resource: "conv/c1", Target: "eu", Parent: "p", Attempt: 1},
		StartTenant{Tenant: "acme", Target: "eu", Resources: []string{"conv/a", "conv/b"}, Concurrency: 2},
		Cancel{MigrationID: "m1", Reason: "operator"},
		Pause{MigrationID: "m1", Reason: "peak hours"},
		Resume{MigrationID: "m1"},
		Throttle{MigrationID: "m1", Concurrency: 2, Rate: NoRate},
		ForceRelease{Resource: "conv/c1", Approvers: []string{"a", "b"}, Approvals: []string{"t1", "t2"}, Reason: "stuck"},
		FenceClear{Resource: "conv/c1", Region: "us", Approvers: []string{"a", "b"}, Approvals: []string{"t1", "t2"}, Reason: "stranded"},
		Requested{Resource: "conv/c1", Target: "eu", Attempt: 1, MaxAttempts: 3, Token: "0123456789abcdef0123456789abcdef"},
		PreLocked{Source: "us", NotBefore: t0, Expiry: t0.Add(time.Hour), WaitUntil: t0.Add(time.Second)},
		Converged{},
		Dropped{Reason: "already at target"},
		HardDeleteLocked{Expiry: t0},
		PageCopied{Service: "messages", Mode: 1, Cursor: 0, Next: 10, SyncToken: 12, Count: 10, More: true, Dependents: []string{"media/m1"}},
		Renewed{Expiry: t0},
		WriteLocked{Expiry: t0},
		DeltaCopied{Service: "messages", Cursor: 12, Next: 14, Count: 2},
		PagesCopied{Pages: []PageCopied{{Service: "messages", Mode: 1, Next: 10, SyncToken: 12, Count: 10, More: true}, {Service: "reactions", Mode: 1, Count: 3, Dependents: []string{"media/m2"}}}},
		DeltasCopied{Pages: []DeltaCopied{{Service: "messages", Cursor: 12, Next: 14, Count: 2}, {Service: "reactions", Next: 1, Count: 1}}},
		Validated{OK: true, Duration: time.Millisecond, Slices: 3},
		Swapped{},
		CleanupScheduled{At: t0},
		Completed{Figures: Figures{PreLockMs: 1, TotalMs: 9, Attempts: 1}},
		CleanedUp{Records: 3},
		StepFailed{Phase: PhaseHistorical, Error: "timeout"},
		RolledBack{Reason: "validation", Phase: PhaseDelta},
		Rescheduled{Attempt: 2, Token: "t", At: t0},
		Failed{Reason: "locked"},
		ChildStarted{Resource: "media/m1", MigrationID: "c1"},
		CancelRequested{Reason: "x"},
		Paused{Reason: "peak hours", ByParent: true},
		Resumed{ByParent: true},
		Throttled{Concurrency: 2, Rate: 500, Auto: true, Reason: "write-lock p99 1.2s over 500ms"},
		TenantStarted{Tenant: "acme", Target: "eu", Resources: []string{"conv/a"}, Concurrency: 1},
		TenantProgress{Started: "conv/a", StartedID: "x", Partition: 2},
		ForceReleased{Resource: "conv/c1", Approvers: []string{"a", "b"}, ApprovalIDs: []string{"i1", "i2"}, Reason: "stuck"},
		FenceForceCleared{Resource: "conv/c1", Region: "us", Services: []string{"messages"}, Previous: "exporting@7<1700000000000", Repaired: "primary@9",
			Repairs:   []RepairedRecord{{Service: "messages", Role: "exporting", Until: 1700000000000, Previous: "exporting@7<1700000000000"}},
			Approvers: []string{"a", "b"}, ApprovalIDs: []string{"i1", "i2"}, Reason: "stranded", Failed: "x", Note: "y"},
		AdminRefused{Command: TypeFenceClear, Resource: "conv/c1", Region: "us", Approvers: []string{"a"}, Reason: "r", Code: RefusedApprovals, Refusal: "too few"},
	}
}

func TestRoundTrip(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range sampleBodies() {
		t.Run(b.Type(), func(t *testing.T) {
			seen[b.Type()] = true
			st := &State{ID: "m1", Phase: PhaseHistorical, Status: StatusActive, Attempt: 1,
				LockExpiry: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
				Services:   []ServiceProgress{{Service: "messages", Cursor: 3}}}
			in := &Envelope{ID: "e1", MigrationID: "m1", Resource: "conv/c1", Time: time.Unix(0, 42).UTC(), CausationID: "c", State: st, Body: b}
			raw, err := Encode(in)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out.Body, b) {
				t.Fatalf("body: got %#v want %#v", out.Body, b)
			}
			if out.Type != b.Type() || out.ID != "e1" || out.MigrationID != "m1" || !out.Time.Equal(in.Time) || out.SchemaVersion != SchemaVersion {
				t.Fatalf("envelope: %+v", out)
			}
			if !reflect.DeepEqual(out.State, st) {
				t.Fatalf("state: got %+v want %+v", out.State, st)
			}
		})
	}
	if len(seen) != len(registry) {
		t.Fatalf("sample covers %d of %d registered types", len(seen), len(registry))
	}
}

func TestDecodeErrors(t *testing.T) {
	good, err := Encode(&Envelope{ID: "e", Body: Converged{}})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(w wireEnvelope) []byte {
		b, err := msgpack.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"garbled", []byte{0xc1, 0x00, 0xff}, ErrMalformed},
		{"truncated", good[:len(good)/2], ErrMalformed},
		{"not a map", []byte{0x01}, ErrMalformed},
		{"unknown type", mk(wireEnvelope{V: SchemaVersion, ID: "e", Type: "nope", Payload: []byte{0x80}}), ErrUnknownType},
		{"unknown version", mk(wireEnvelope{V: 99, ID: "e", Type: TypeConverged, Payload: []byte{0x80}}), ErrSchemaVersion},
		{"bad payload", mk(wireEnvelope{V: SchemaVersion, ID: "e", Type: TypeStart, Payload: []byte{0x01}}), ErrMalformed},
		{"no id", mk(wireEnvelope{V: SchemaVersion, Type: TypeConverged, Payload: []byte{0x80}}), ErrMalformed},
		{"huge", bytes.Repeat([]byte{0}, MaxEncodedSize+1), ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := Decode(c.in)
			if !errors.Is(err, c.want) || e != nil {
				t.Fatalf("Decode = %v, %v; want %v", e, err, c.want)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	if _, err := Encode(&Envelope{ID: "e"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("no body: %v", err)
	}
	if _, err := Encode(&Envelope{Body: Converged{}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("no id: %v", err)
	}
}

func TestSubjects(t *testing.T) {
	if id, ok := MigrationIDFromSubject(EventSubject("m-1")); !ok || id != "m-1" {
		t.Fatalf("got %q %v", id, ok)
	}
	if _, ok := MigrationIDFromSubject("cutover.evt.a.b"); ok {
		t.Fatal("accepted a nested subject")
	}
	if !ValidID("abc_D-9") || ValidID("a.b") || ValidID("") {
		t.Fatal("ValidID")
	}
}

func FuzzDecode(f *testing.F) {
	for _, b := range sampleBodies() {
		raw, err := Encode(&Envelope{ID: "e", MigrationID: "m", State: &State{ID: "m", Services: []ServiceProgress{{Service: "s"}}}, Body: b})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte{})
	f.Add([]byte{0xc1})
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			if e != nil {
				t.Fatal("envelope with error")
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownType) && !errors.Is(err, ErrSchemaVersion) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if _, err := Encode(e); err != nil {
			t.Fatalf("re-encode of a decoded envelope: %v", err)
		}
	})
}

func TestLogValueRedactsToken(t *testing.T) {
	tok := "0123456789abcdef0123456789abcdef"
	for _, v := range []interface{ LogValue() slog.Value }{&State{Token: tok}, Requested{Token: tok}, Rescheduled{Token: tok}} {
		if s := v.LogValue().String(); strings.Contains(s, tok) {
			t.Fatalf("token logged whole: %s", s)
		}
	}
}

// BodyAs reads a body whether the envelope holds it as a value or a
// pointer, and refuses another type.
func TestBodyAs(t *testing.T) {
	v := &Envelope{Body: StepFailed{Error: "x"}}
	p := &Envelope{Body: &StepFailed{Error: "y"}}
	if b, ok := BodyAs[StepFailed](v); !ok || b.Error != "x" {
		t.Fatalf("value: %v %v", b, ok)
	}
	if b, ok := BodyAs[StepFailed](p); !ok || b.Error != "y" {
		t.Fatalf("pointer: %v %v", b, ok)
	}
	if _, ok := BodyAs[Completed](v); ok {
		t.Fatal("another type matched")
	}
}

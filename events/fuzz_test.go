package events

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// The targets below complement FuzzDecode (events_test.go), which only
// checks that errors are classified: they also require that Decode's panic
// guard never fires and that whatever Decode accepts is a fixed point of
// Encode∘Decode. Their committed corpora (testdata/fuzz/FuzzDecodeCommand,
// testdata/fuzz/FuzzDecodeEvent) hold every registered type, truncations,
// wrong payload types, huge declared lengths and unknown schema versions;
// `go test` runs them as ordinary tests.

// FuzzDecodeCommand fuzzes Decode as the orchestrator's command consumer
// uses it (cutover.cmd.<type>: no State).
func FuzzDecodeCommand(f *testing.F) {
	for _, b := range sampleBodies() {
		if !isCommand(b.Type()) {
			continue
		}
		f.Add(mustEncodeFuzz(f, &Envelope{ID: "cmd-1", Body: b}))
	}
	f.Fuzz(checkDecode)
}

// FuzzDecodeEvent fuzzes Decode as the event log reads it (events carry the
// migration's State after the event).
func FuzzDecodeEvent(f *testing.F) {
	st := &State{ID: "m1", Phase: PhaseHistorical, Status: StatusActive, Attempt: 1,
		Services: []ServiceProgress{{Service: "messages", Cursor: 3}}}
	for _, b := range sampleBodies() {
		if isCommand(b.Type()) {
			continue
		}
		f.Add(mustEncodeFuzz(f, &Envelope{ID: "e1", MigrationID: "m1", Resource: "conv/c1", CausationID: "c", State: st, Body: b}))
	}
	f.Fuzz(checkDecode)
}

// checkDecode is the property both targets share: Decode returns either a
// classified error and no envelope, or an envelope that encodes and decodes
// to itself. A recovered panic counts as a crash even though Decode
// contains it: it is a decoder bug that the guard only hides.
func checkDecode(t *testing.T, b []byte) {
	e, err := Decode(b)
	if err != nil {
		if strings.Contains(err.Error(), "decoder panic") {
			t.Fatalf("PANIC inside Decode (recovered by its guard): %v", err)
		}
		if e != nil {
			t.Fatalf("Decode returned an envelope with error %v", err)
		}
		if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownType) && !errors.Is(err, ErrSchemaVersion) {
			t.Fatalf("unclassified error %v", err)
		}
		return
	}
	if e.ID == "" || e.Body == nil || e.Type != e.Body.Type() || e.SchemaVersion != SchemaVersion {
		t.Fatalf("accepted an incomplete envelope %+v", e)
	}
	raw, err := Encode(e)
	if err != nil {
		t.Fatalf("re-encode of an accepted envelope: %v", err)
	}
	again, err := Decode(raw)
	if err != nil {
		t.Fatalf("decode of a re-encoded envelope: %v", err)
	}
	// Compare encodings, not values: omitempty turns an empty slice into
	// an absent field, which decodes as nil, and that difference is benign.
	raw2, err := Encode(again)
	if err != nil {
		t.Fatalf("re-encode of a re-decoded envelope: %v", err)
	}
	if !bytes.Equal(raw2, raw) {
		t.Fatalf("Encode∘Decode is not stable:\n first %#v\nsecond %#v", e, again)
	}
}

func isCommand(typ string) bool {
	switch typ {
	case TypeStart, TypeStartTenant, TypeCancel, TypeForceRelease, TypeFenceClear:
		return true
	}
	return false
}

func mustEncodeFuzz(tb testing.TB, e *Envelope) []byte {
	tb.Helper()
	b, err := Encode(e)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

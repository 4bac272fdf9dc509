package contractnats

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cutover/cutover/services/contract"
)

// The targets below fuzz decode as the contract applies it to the export
// page path: the page a server reads back from PagesStream (fetchPage), the
// export request it receives, and the PageRef a client gets in reply. Unlike
// FuzzDecode (wire_test.go) they also check what decode accepts. Their
// committed corpora under testdata/fuzz/ hold valid encodings, truncations,
// wrong field types and huge declared lengths; `go test` runs them.

// FuzzDecodePage fuzzes the decoding of an export page (fetchPage).
func FuzzDecodePage(f *testing.F) {
	for _, v := range wireValues() {
		if p, ok := v.(*contract.Page); ok {
			f.Add(mustMarshal(f, p))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecode(t, b, func() any { return new(contract.Page) })
	})
}

// FuzzDecodeExportRequest fuzzes the decoding of an export request (the
// server's OpExport handler) and the check that follows it.
func FuzzDecodeExportRequest(f *testing.F) {
	for _, v := range wireValues() {
		if r, ok := v.(*exportRequest); ok {
			f.Add(mustMarshal(f, r))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v := checkDecode(t, b, func() any { return new(exportRequest) })
		if v == nil {
			return
		}
		// The handler's next step must classify, not crash, whatever the
		// decoder let through.
		if err := ValidateMigrationID(v.(*exportRequest).Migration); err != nil && !errors.Is(err, ErrInvalidName) {
			t.Fatalf("ValidateMigrationID: unclassified error %v", err)
		}
	})
}

// FuzzDecodePageRef fuzzes the decoding of the export reply (Client.call).
func FuzzDecodePageRef(f *testing.F) {
	for _, v := range wireValues() {
		if r, ok := v.(*PageRef); ok {
			f.Add(mustMarshal(f, r))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecode(t, b, func() any { return new(PageRef) })
	})
}

// checkDecode decodes b into a new value: a rejection must wrap errGarbled;
// an accepted value must be exactly one well-formed msgpack value and must
// encode and decode to itself. It returns the accepted value, or nil.
func checkDecode(t *testing.T, b []byte, newV func() any) any {
	t.Helper()
	v := newV()
	if err := decode(b, v); err != nil {
		if !errors.Is(err, errGarbled) {
			t.Fatalf("decode: unclassified error %v", err)
		}
		return nil
	}
	if err := checkMsgpack(b); err != nil {
		t.Fatalf("decode accepted what checkMsgpack rejects: %v", err)
	}
	raw, err := encode(v)
	if err != nil {
		t.Fatalf("encode of an accepted %T: %v", v, err)
	}
	again := newV()
	if err := decode(raw, again); err != nil {
		t.Fatalf("decode of a re-encoded %T: %v", v, err)
	}
	// Compare encodings, not values: omitempty turns an empty slice into
	// an absent field, which decodes as nil, and that difference is benign.
	raw2, err := encode(again)
	if err != nil {
		t.Fatalf("encode of a re-decoded %T: %v", v, err)
	}
	if !bytes.Equal(raw2, raw) {
		t.Fatalf("encode∘decode is not stable for %T:\n first %#v\nsecond %#v", v, v, again)
	}
	return v
}

func mustMarshal(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := encode(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

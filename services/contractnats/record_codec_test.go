package contractnats

import (
	"bytes"
	"math"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/services/contract"
)

// recordSamples are records at the edges of every field: empty and nil
// Data and Refs, the integers' extremes, a tombstone, long strings.
func recordSamples() []contract.Record {
	return []contract.Record{
		{},
		{ID: "m1", Kind: "message", Version: 1, Seq: 2, CreatedAt: 3, UpdatedAt: 4, Data: []byte("hello"), Refs: []string{"media/m1"}},
		{ID: "x", Data: []byte{}, Refs: []string{}},
		{ID: "t", Deleted: true, DeletedAt: -1, Version: math.MaxUint64, Seq: math.MaxUint32 + 1, CreatedAt: math.MinInt64, UpdatedAt: math.MaxInt64},
		{ID: string(bytes.Repeat([]byte("i"), 128)), Kind: string(bytes.Repeat([]byte("k"), 300)), Data: bytes.Repeat([]byte{0xc1}, 70000), Refs: []string{"", "a", "media/b"}},
	}
}

// TestRecordCodecWritesTheReflectiveBytes: the hand codec writes exactly
// what msgpack's reflection writes, alone, by value, in a page and through
// a pointer; and reads it back equal.
func TestRecordCodecWritesTheReflectiveBytes(t *testing.T) {
	for i, r := range recordSamples() {
		want, err := msgpack.Marshal((*recordReflect)(&r))
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]any{"pointer": &r, "value": r} {
			got, err := msgpack.Marshal(v)
			if err != nil {
				t.Fatalf("sample %d %s: %v", i, name, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("sample %d %s: wrote %x, reflection writes %x", i, name, got, want)
			}
		}
		var back contract.Record
		if err := decode(want, &back); err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		if !reflect.DeepEqual(back, r) {
			t.Errorf("sample %d: read %#v, want %#v", i, back, r)
		}
	}
	pg := contract.Page{Service: "messages", Records: recordSamples()}
	type pageReflect struct {
		Service string          `msgpack:"svc"`
		Records []recordReflect `msgpack:"recs"`
	}
	var recs []recordReflect
	for _, r := range pg.Records {
		recs = append(recs, recordReflect(r))
	}
	got, _ := msgpack.Marshal(&struct {
		Service string            `msgpack:"svc"`
		Records []contract.Record `msgpack:"recs"`
	}{pg.Service, pg.Records})
	want, _ := msgpack.Marshal(&pageReflect{pg.Service, recs})
	if !bytes.Equal(got, want) {
		t.Errorf("a page's records: the bytes differ from reflection's")
	}
}

// FuzzRecordCodec: on any bytes, the hand decoding and msgpack's reflective
// decoding agree, on the error and on the record (decode's own checks
// first, as the contract applies them); and whatever decodes re-encodes to
// the reflective bytes of the same record.
func FuzzRecordCodec(f *testing.F) {
	for _, r := range recordSamples() {
		b, _ := msgpack.Marshal((*recordReflect)(&r))
		f.Add(b)
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		enc.UseCompactInts(true)
		_ = enc.Encode((*recordReflect)(&r))
		f.Add(buf.Bytes())
		a, _ := msgpack.Marshal([]any{r.ID, r.Kind, r.Version})
		f.Add(a) // the array form
	}
	f.Add([]byte{0xc0})                                        // nil
	f.Add([]byte{0x82, 0xa2, 'I', 'D', 0x01, 0xa1, 'z', 0x02}) // a wrong type, an unknown key
	f.Fuzz(func(t *testing.T, b []byte) {
		if checkMsgpack(b) != nil {
			return // decode refuses it before either decoding runs
		}
		var hand contract.Record
		var refl recordReflect
		herr := msgpack.Unmarshal(b, &hand)
		rerr := msgpack.Unmarshal(b, &refl)
		if (herr == nil) != (rerr == nil) {
			t.Fatalf("%x: hand decoding %v, reflective %v", b, herr, rerr)
		}
		if herr != nil {
			return
		}
		if !reflect.DeepEqual(hand, contract.Record(refl)) {
			t.Fatalf("%x: hand decoding %#v, reflective %#v", b, hand, refl)
		}
		got, err := msgpack.Marshal(&hand)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := msgpack.Marshal(&refl)
		if !bytes.Equal(got, want) {
			t.Fatalf("%x: re-encoded %x, reflection %x", b, got, want)
		}
	})
}

// BenchmarkRecordPage encodes and decodes a page of 100 chat-sized
// records, by the hand codec and by msgpack's reflection.
func BenchmarkRecordPage(b *testing.B) {
	recs := make([]contract.Record, 100)
	for i := range recs {
		recs[i] = contract.Record{ID: "messages-" + string(rune('a'+i%26)), Kind: "message", Version: 3, Seq: uint64(i),
			CreatedAt: 1_700_000_000_000_000_000 + int64(i), UpdatedAt: 1_700_000_000_000_000_000, Data: bytes.Repeat([]byte("x"), 120)}
	}
	refl := make([]recordReflect, len(recs))
	for i, r := range recs {
		refl[i] = recordReflect(r)
	}
	run := func(b *testing.B, v any, newV func() any) {
		b.ReportAllocs()
		for b.Loop() {
			data, err := msgpack.Marshal(v)
			if err != nil {
				b.Fatal(err)
			}
			if err := msgpack.Unmarshal(data, newV()); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("hand", func(b *testing.B) { run(b, recs, func() any { return new([]contract.Record) }) })
	b.Run("reflect", func(b *testing.B) { run(b, refl, func() any { return new([]recordReflect) }) })
}

package contract

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var updateDigests = flag.Bool("update-digests", false, "rewrite testdata/digests.json")

// DigestVector is one record of testdata/digests.json: its fields, the
// exact bytes RecordHash hashes, and the hash.
type digestVector struct {
	ID        string   `json:"id"`
	Kind      string   `json:"kind"`
	CreatedAt int64    `json:"created_at"`
	Version   uint64   `json:"version"`
	UpdatedAt int64    `json:"updated_at"`
	Deleted   bool     `json:"deleted,omitempty"`
	DataHex   string   `json:"data_hex"`
	Refs      []string `json:"refs"`
	// Preimage is the hex of the bytes hashed (absent for a tombstone).
	Preimage string `json:"preimage,omitempty"`
	Hash     string `json:"hash,omitempty"`
}

type digestFile struct {
	Comment    []string        `json:"comment"`
	SliceWidth int64           `json:"slice_width_ns"`
	Records    []digestVector  `json:"records"`
	Slices     []digestSummary `json:"slices"`
}

type digestSummary struct {
	Slice int64  `json:"slice"`
	Count uint64 `json:"count"`
	Hash  string `json:"hash"`
}

func (v digestVector) record(t *testing.T) Record {
	data, err := hex.DecodeString(v.DataHex)
	if err != nil {
		t.Fatalf("%s: data_hex: %v", v.ID, err)
	}
	return Record{ID: v.ID, Kind: v.Kind, CreatedAt: v.CreatedAt, Version: v.Version, UpdatedAt: v.UpdatedAt,
		Deleted: v.Deleted, Data: data, Refs: v.Refs}
}

// vectorRecords are the records of the vectors: the edges an implementation
// gets wrong (empty fields, multi-byte varints, negative times, Unicode,
// a tombstone, slices either side of zero, a sum that carries).
func vectorRecords() []Record {
	long := bytes.Repeat([]byte{0xab}, 300) // a two-byte varint length
	return []Record{
		{ID: "m1", Kind: "message", CreatedAt: 1_700_000_000_000_000_000, Version: 1, UpdatedAt: 1_700_000_000_000_000_000, Data: []byte(`{"text":"hi"}`)},
		{ID: "m2", Kind: "message", CreatedAt: 1_700_000_000_500_000_000, Version: 3, UpdatedAt: 1_700_000_100_000_000_000, Data: []byte("edited"), Refs: []string{"media/p1"}},
		{ID: "m3", Kind: "", CreatedAt: 1_700_003_600_000_000_000, Version: 1, UpdatedAt: 0, Data: nil},
		{ID: "r/é✓", Kind: "reaction", CreatedAt: 1_700_003_600_000_000_001, Version: 18446744073709551615, UpdatedAt: -1, Data: long, Refs: []string{"media/a", "", "media/b"}},
		{ID: "old", Kind: "message", CreatedAt: -1, Version: 2, UpdatedAt: -1_000_000_000, Data: []byte{0}},
		{ID: "zero", Kind: "message", CreatedAt: 0, Version: 1, UpdatedAt: 0, Data: []byte{}},
		{ID: "gone", Kind: "message", CreatedAt: 1_700_000_000_000_000_000, Version: 4, UpdatedAt: 1_700_000_200_000_000_000, Deleted: true, DeletedAt: 1_700_000_200_000_000_000},
	}
}

// preimage is RecordHash's input, written out independently of it: the
// vectors check the two agree.
func preimage(r *Record) []byte {
	var b []byte
	str := func(s []byte) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	str([]byte(r.ID))
	str([]byte(r.Kind))
	b = binary.BigEndian.AppendUint64(b, uint64(r.CreatedAt))
	b = binary.BigEndian.AppendUint64(b, r.Version)
	b = binary.BigEndian.AppendUint64(b, uint64(r.UpdatedAt))
	str(r.Data)
	b = binary.AppendUvarint(b, uint64(len(r.Refs)))
	for _, ref := range r.Refs {
		str([]byte(ref))
	}
	return b
}

// TestDigestVectors: RecordHash, SliceOf and DigestsOf give exactly the
// bytes of testdata/digests.json, the vectors docs/participant.md points
// implementers in other languages to (-update-digests rewrites them).
func TestDigestVectors(t *testing.T) {
	recs := vectorRecords()
	want := digestFile{
		Comment: []string{
			"Slice-digest test vectors of the migration contract 2.0 (docs/participant.md \"Digests\").",
			"Per record: preimage = the bytes hashed (hex), hash = the first 16 bytes of SHA-256(preimage) (hex).",
			"A tombstone (deleted) has neither: it is never hashed. slices = the digests of all the records,",
			"slice = created_at rounded down to a multiple of slice_width_ns, hash = the sum modulo 2^128 (big-endian).",
		},
		SliceWidth: int64(SliceWidth),
	}
	for i := range recs {
		r := &recs[i]
		v := digestVector{ID: r.ID, Kind: r.Kind, CreatedAt: r.CreatedAt, Version: r.Version, UpdatedAt: r.UpdatedAt,
			Deleted: r.Deleted, DataHex: hex.EncodeToString(r.Data), Refs: r.Refs}
		if !r.Deleted {
			p := preimage(r)
			h := RecordHash(r)
			sum := sha256.Sum256(p)
			if !bytes.Equal(h[:], sum[:16]) {
				t.Fatalf("%s: RecordHash %x, SHA-256 of the documented preimage starts %x", r.ID, h, sum[:16])
			}
			v.Preimage, v.Hash = hex.EncodeToString(p), hex.EncodeToString(h[:])
		}
		want.Records = append(want.Records, v)
	}
	for _, d := range DigestsOf(recs, SliceWidth) {
		want.Slices = append(want.Slices, digestSummary{Slice: d.Slice, Count: d.Count, Hash: hex.EncodeToString(d.Hash[:])})
	}
	got, err := json.MarshalIndent(want, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	const path = "testdata/digests.json"
	if *updateDigests {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-digests)", err)
	}
	if !bytes.Equal(file, got) {
		t.Fatalf("%s differs from what RecordHash and DigestsOf compute (run with -update-digests after a deliberate change, and bump the contract version)", path)
	}
	// The file read back gives the same records (what an implementer
	// parses is what was hashed).
	var back digestFile
	if err := json.Unmarshal(file, &back); err != nil {
		t.Fatal(err)
	}
	for i, v := range back.Records {
		r := v.record(t)
		if !r.Deleted && hex.EncodeToString(func() []byte { h := RecordHash(&r); return h[:] }()) != v.Hash {
			t.Errorf("record %d (%s) read back hashes differently", i, v.ID)
		}
	}
	if len(back.Slices) != 4 || back.Slices[0].Slice != -int64(SliceWidth) || back.Slices[2].Count != 2 {
		t.Fatalf("want 4 slices (before zero, at zero, two of two records each), got %+v", back.Slices)
	}
}

// TestSliceOf: slices round down, negative times included.
func TestSliceOf(t *testing.T) {
	h := int64(SliceWidth)
	for _, c := range []struct{ at, want int64 }{{0, 0}, {1, 0}, {h - 1, 0}, {h, h}, {-1, -h}, {-h, -h}, {-h - 1, -2 * h}} {
		if got := SliceOf(c.at, SliceWidth); got != c.want {
			t.Errorf("SliceOf(%d) = %d, want %d", c.at, got, c.want)
		}
	}
}

// TestHashArithmetic: AddHash and SubHash are inverse and carry across the
// 64-bit halves.
func TestHashArithmetic(t *testing.T) {
	lowMax := [16]byte{8: 0xff, 9: 0xff, 10: 0xff, 11: 0xff, 12: 0xff, 13: 0xff, 14: 0xff, 15: 0xff}
	one := [16]byte{15: 1}
	sum := AddHash(lowMax, one)
	if sum != ([16]byte{7: 1}) {
		t.Fatalf("carry: %x", sum)
	}
	if SubHash(sum, one) != lowMax {
		t.Fatal("SubHash does not undo AddHash")
	}
	var zero [16]byte
	if AddHash(SubHash(zero, one), one) != zero {
		t.Fatal("wrap-around")
	}
}

package contract

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"slices"
	"time"
)

// SliceWidth is the width of a validation time slice: a record's slice is
// its CreatedAt rounded down to a multiple of it (SliceOf). Source and
// target must use the same width (the Pebble store records its width on
// first open and refuses another); every participant uses this one unless
// its whole deployment agrees on another.
const SliceWidth = time.Hour

// SliceOf returns the start of the slice of width holding createdAt (unix
// nanoseconds): createdAt rounded down, towards minus infinity, to a
// multiple of width. width must be positive.
func SliceOf(createdAt int64, width time.Duration) int64 {
	w := int64(width)
	m := createdAt % w
	if m < 0 {
		m += w
	}
	return createdAt - m
}

// RecordHash is the 128-bit hash of a live record that SliceDigest sums
// (docs/participant.md "Digests", byte-exact, with the vectors of
// testdata/digests.txt): the first 16 bytes of the SHA-256 of
//
//	uvarint(len(ID)) ID
//	uvarint(len(Kind)) Kind
//	uint64be(CreatedAt) uint64be(Version) uint64be(UpdatedAt)
//	uvarint(len(Data)) Data
//	uvarint(len(Refs)) then per ref: uvarint(len(ref)) ref
//
// where uvarint is the unsigned LEB128 varint (Go's binary.AppendUvarint)
// and the int64 times are their two's-complement bits. Seq, Deleted and
// DeletedAt are left out (a tombstone is never hashed; the change
// sequence differs legitimately between regions). Version and UpdatedAt
// are in: two regions holding the same content at different versions must
// not validate as equal, or a later import's version rule (paper 001 A3)
// would work on an unvalidated base.
func RecordHash(r *Record) [16]byte {
	n := 5*binary.MaxVarintLen64 + len(r.ID) + len(r.Kind) + 24 + len(r.Data)
	for _, ref := range r.Refs {
		n += binary.MaxVarintLen64 + len(ref)
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(len(r.ID)))
	b = append(b, r.ID...)
	b = binary.AppendUvarint(b, uint64(len(r.Kind)))
	b = append(b, r.Kind...)
	b = binary.BigEndian.AppendUint64(b, uint64(r.CreatedAt))
	b = binary.BigEndian.AppendUint64(b, r.Version)
	b = binary.BigEndian.AppendUint64(b, uint64(r.UpdatedAt))
	b = binary.AppendUvarint(b, uint64(len(r.Data)))
	b = append(b, r.Data...)
	b = binary.AppendUvarint(b, uint64(len(r.Refs)))
	for _, ref := range r.Refs {
		b = binary.AppendUvarint(b, uint64(len(ref)))
		b = append(b, ref...)
	}
	sum := sha256.Sum256(b)
	return [16]byte(sum[:16])
}

// AddHash returns a + b modulo 2^128, both big-endian: how a slice's Hash
// takes a record in. SubHash takes one out.
func AddHash(a, b [16]byte) [16]byte {
	lo, c := bits.Add64(binary.BigEndian.Uint64(a[8:]), binary.BigEndian.Uint64(b[8:]), 0)
	hi, _ := bits.Add64(binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(b[:8]), c)
	return hash128(hi, lo)
}

// SubHash returns a - b modulo 2^128, both big-endian.
func SubHash(a, b [16]byte) [16]byte {
	lo, c := bits.Sub64(binary.BigEndian.Uint64(a[8:]), binary.BigEndian.Uint64(b[8:]), 0)
	hi, _ := bits.Sub64(binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(b[:8]), c)
	return hash128(hi, lo)
}

func hash128(hi, lo uint64) (h [16]byte) {
	binary.BigEndian.PutUint64(h[:8], hi)
	binary.BigEndian.PutUint64(h[8:], lo)
	return h
}

// DigestsOf computes the slice digests of records, as a participant that
// keeps no running digests answers a digests request: tombstones are
// skipped, every live record is added to its slice of width, and the
// non-empty slices come back in slice order.
func DigestsOf(records []Record, width time.Duration) []SliceDigest {
	by := map[int64]*SliceDigest{}
	for i := range records {
		r := &records[i]
		if r.Deleted {
			continue
		}
		s := SliceOf(r.CreatedAt, width)
		d := by[s]
		if d == nil {
			d = &SliceDigest{Slice: s}
			by[s] = d
		}
		d.Count++
		d.Hash = AddHash(d.Hash, RecordHash(r))
	}
	out := make([]SliceDigest, 0, len(by))
	for _, d := range by {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b SliceDigest) int { return cmp.Compare(a.Slice, b.Slice) })
	return out
}

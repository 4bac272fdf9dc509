package store

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/cockroachdb/pebble"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/services/contract"
)

// SliceDigest is the contract's slice digest (contract.SliceDigest): a
// count and an order-independent content hash of the live records of one
// time slice, maintained at write time (Store.Digests).
type SliceDigest = contract.SliceDigest

// storedDigest is the msgpack form of a slice digest.
type storedDigest struct {
	Count uint64 `msgpack:"n"`
	Hi    uint64 `msgpack:"h"`
	Lo    uint64 `msgpack:"l"`
}

// u128 is a 128-bit value for digest arithmetic.
type u128 struct{ hi, lo uint64 }

func (a u128) add(b u128) u128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, c)
	return u128{hi, lo}
}

func (a u128) sub(b u128) u128 {
	lo, c := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, c)
	return u128{hi, lo}
}

func (a u128) bytes() (out [16]byte) {
	binary.BigEndian.PutUint64(out[:8], a.hi)
	binary.BigEndian.PutUint64(out[8:], a.lo)
	return out
}

// recordHash is contract.RecordHash as a u128.
func recordHash(r *Record) u128 {
	h := contract.RecordHash(r)
	return u128{binary.BigEndian.Uint64(h[:8]), binary.BigEndian.Uint64(h[8:])}
}

// SliceOf returns the start of the time slice holding createdAt
// (contract.SliceOf with Options.SliceWidth).
func (s *Store) SliceOf(createdAt int64) int64 { return contract.SliceOf(createdAt, s.opts.SliceWidth) }

// Digests returns the digests of the non-empty slices of resource in slice
// order, as of one consistent snapshot. Errors: ErrInvalid, ErrClosed,
// ErrCorrupt.
func (s *Store) Digests(resource string) ([]SliceDigest, error) {
	if err := validResource(resource); err != nil {
		return nil, err
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	return digestsOn(s.db, resource)
}

// digestsOn reads resource's stored digests from r, in slice order.
func digestsOn(r reader, resource string) ([]SliceDigest, error) {
	prefix := resPrefix(famDigest, resource)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, fmt.Errorf("store: digests: %w", err)
	}
	defer it.Close()
	var out []SliceDigest
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		if len(k) != len(prefix)+8 {
			return nil, corruptf("digest key %q", k)
		}
		d, err := decodeDigest(it.Value())
		if err != nil {
			return nil, corruptf("digest key %q: %w", k, err)
		}
		out = append(out, SliceDigest{
			Slice: int64(binary.BigEndian.Uint64(k[len(prefix):])),
			Count: d.Count,
			Hash:  u128{d.Hi, d.Lo}.bytes(),
		})
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("store: digests: %w", err)
	}
	return out, nil
}

// u128FromBytes reads a big-endian 128-bit value.
func u128FromBytes(b [16]byte) u128 {
	return u128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// sortDigests orders digests by slice.
func sortDigests(ds []SliceDigest) {
	slices.SortFunc(ds, func(a, b SliceDigest) int { return cmp.Compare(a.Slice, b.Slice) })
}

func decodeDigest(b []byte) (storedDigest, error) {
	var d storedDigest
	err := msgpack.Unmarshal(b, &d)
	return d, err
}

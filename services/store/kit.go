package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cockroachdb/pebble"

	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
)

// The Pebble store as the participant kit's storage (participant.Storage):
// the kit decides — authority, admission, tombstones, the import rule,
// digests — and the store keeps records, their indexes (change, time,
// kind, expiry), the counters, the digests and the authority record, all
// of one Update in one batch under the resource's lock.

var _ participant.Storage = (*Store)(nil)

// Update implements participant.Storage: fn runs under resource's lock on
// a batch that commits (fsync per Options.Sync) when fn returns nil. Range
// reads (Changes, Live) see the committed state; the kit reads ranges in an
// Update before it writes. Digests see the Update's own writes.
func (s *Store) Update(ctx context.Context, resource string, fn func(participant.Tx) error) error {
	if err := s.begin(ctx, resource); err != nil {
		return err
	}
	defer s.leave()
	unlock := s.lockResource(resource)
	defer unlock()
	b := s.db.NewBatch()
	defer b.Close()
	t, err := s.newTxn(resource, b, s.now())
	if err != nil {
		return err
	}
	t.kitDigests = true
	kt := &kitTx{kitReader: kitReader{s: s, r: s.db, res: resource}, t: t}
	if kt.auth, err = s.getAuthority(s.db, resource); err != nil {
		return err
	}
	if err := fn(kt); err != nil {
		return err
	}
	if !kt.dirty {
		return nil
	}
	if kt.authDirty {
		if err := setAuthority(b, resource, kt.auth); err != nil {
			return err
		}
	}
	return t.commit()
}

// View implements participant.Storage: fn reads one snapshot.
func (s *Store) View(ctx context.Context, resource string, fn func(participant.Reader) error) error {
	if err := s.begin(ctx, resource); err != nil {
		return err
	}
	defer s.leave()
	snap := s.db.NewSnapshot()
	defer snap.Close()
	return fn(kitReader{s: s, r: snap, res: resource})
}

// begin checks ctx and resource and enters the store (the caller leaves).
func (s *Store) begin(ctx context.Context, resource string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := validResource(resource); err != nil {
		return err
	}
	return s.enter()
}

// kitReader reads one resource from a snapshot or the DB.
type kitReader struct {
	s   *Store
	r   reader
	res string
}

func (k kitReader) Authority() (contract.Authority, error) { return k.s.getAuthority(k.r, k.res) }

func (k kitReader) Get(id string) (contract.Record, bool, error) {
	e, err := k.s.getEntry(k.r, k.res, id)
	if errors.Is(err, ErrNotFound) {
		return contract.Record{}, false, nil
	}
	return e.Record, err == nil, err
}

func (k kitReader) LastSeq() (uint64, error) {
	st, err := k.s.getState(k.r, k.res)
	return st.Seq, err
}

func (k kitReader) Changes(after, upto uint64, limit int) ([]contract.Record, error) {
	if after == math.MaxUint64 || upto <= after {
		return nil, nil
	}
	prefix := resPrefix(famChange, k.res)
	upper := prefixEnd(prefix)
	if upto != math.MaxUint64 {
		upper = changeKey(k.res, upto+1)
	}
	recs, _, _, err := k.s.changesOn(k.r, k.res, after, changeKey(k.res, after+1), upper, limit)
	return recs, err
}

func (k kitReader) Live(from, to, afterCreated int64, afterID string, limit int) ([]contract.Record, error) {
	prefix := resPrefix(famTime, k.res)
	lower, upper, ok := scanBounds(prefix, max(from, 0), to, max(afterCreated, 0), afterID)
	if !ok {
		return nil, nil
	}
	return k.s.scanOn(k.r, k.res, prefix, lower, upper, limit)
}

func (k kitReader) Digests() ([]contract.SliceDigest, error) { return digestsOn(k.r, k.res) }

// kitTx is an Update's transaction: the reads of kitReader on the DB
// (under the resource's lock) with the txn's own writes over them.
type kitTx struct {
	kitReader
	t                *txn
	auth             contract.Authority
	authDirty, dirty bool
}

func (k *kitTx) Authority() (contract.Authority, error) { return k.auth, nil }

func (k *kitTx) SetAuthority(a contract.Authority) error {
	k.auth, k.authDirty, k.dirty = a, true, true
	return nil
}

// Get reads through the txn, remembering what it read (the resource is
// locked: the DB cannot change under it), so that the Put or Remove that
// follows does not read the record again.
func (k *kitTx) Get(id string) (contract.Record, bool, error) {
	e, ok, err := k.t.get(id)
	if err != nil {
		return contract.Record{}, false, err
	}
	if _, seen := k.t.overlay[id]; !seen {
		if ok {
			cp := e
			k.t.overlay[id] = &cp
		} else {
			k.t.overlay[id] = nil
		}
	}
	return e.Record, ok, nil
}

// Prefetch reads the records ids that the txn has not seen with one
// iterator over the resource's records, seeking them in key order
// (participant.Prefetcher): an imported page costs one seek per id on one
// iterator instead of a point read each, and a resource that holds no
// record (a fresh import) answers every id with its first seek.
func (k *kitTx) Prefetch(ids []string) error {
	t := k.t
	if t.cleared {
		return nil
	}
	want := make([]string, 0, len(ids))
	for _, id := range ids {
		if _, seen := t.overlay[id]; !seen {
			want = append(want, id)
		}
	}
	if len(want) == 0 {
		return nil
	}
	slices.Sort(want)
	return t.s.entriesOf(t.s.db, t.res, slices.Compact(want), func(id string, e *entry) {
		t.overlay[id] = e
	})
}

func (k *kitTx) LastSeq() (uint64, error) { return k.t.state.Seq, nil }

func (k *kitTx) Put(rec contract.Record) error {
	old, exists, err := k.t.get(rec.ID)
	if err != nil {
		return err
	}
	next := entry{Record: rec}
	if rec.Deleted {
		next.expiresAt = k.s.expiry(rec.DeletedAt)
	}
	if rec.Seq > k.t.state.Seq {
		k.t.state.Seq, k.t.stateDirty = rec.Seq, true
	}
	var prev *entry
	if exists {
		prev = &old
	}
	k.dirty = true
	return k.t.replace(prev, &next)
}

func (k *kitTx) Remove(id string) error {
	old, exists, err := k.t.get(id)
	if err != nil || !exists {
		return err
	}
	k.dirty = true
	return k.t.replace(&old, nil)
}

func (k *kitTx) Digest(slice int64) (contract.SliceDigest, error) {
	d, err := k.t.loadDigest(slice)
	if err != nil {
		return contract.SliceDigest{}, err
	}
	return contract.SliceDigest{Slice: slice, Count: d.Count, Hash: u128{d.Hi, d.Lo}.bytes()}, nil
}

func (k *kitTx) SetDigest(d contract.SliceDigest) error {
	sd, err := k.t.loadDigest(d.Slice)
	if err != nil {
		return err
	}
	h := u128FromBytes(d.Hash)
	sd.Count, sd.Hi, sd.Lo = d.Count, h.hi, h.lo
	k.dirty = true
	return nil
}

// Digests are the stored ones with this Update's changes over them.
func (k *kitTx) Digests() ([]contract.SliceDigest, error) {
	var stored []contract.SliceDigest
	if !k.t.cleared {
		var err error
		if stored, err = digestsOn(k.r, k.res); err != nil {
			return nil, err
		}
	}
	out := make([]contract.SliceDigest, 0, len(stored)+len(k.t.digests))
	for _, d := range stored {
		if _, touched := k.t.digests[d.Slice]; !touched {
			out = append(out, d)
		}
	}
	for slice, d := range k.t.digests {
		if d.Count > 0 {
			out = append(out, contract.SliceDigest{Slice: slice, Count: d.Count, Hash: u128{d.Hi, d.Lo}.bytes()})
		}
	}
	sortDigests(out)
	return out, nil
}

// Clear removes every trace of the resource but its authority record in
// the batch, and starts the txn again on an empty resource.
func (k *kitTx) Clear() (int, error) {
	n, err := k.s.clearInto(k.t.batch, k.res, len(k.t.overlay) > 0)
	if err != nil {
		return 0, err
	}
	k.t.clear()
	k.dirty = true
	return n, nil
}

// pointDeleteMax is the most keys of one family of a resource that
// clearInto deletes one by one; above it the family is one range deletion.
// A range tombstone in the memtable costs every later point read: Pebble
// fragments the memtable's range tombstones again after each new one
// (memTable.newRangeDelIter), and a reset is a clear, one per migration and
// service at the target, usually of nothing. With five of them per clear,
// that fragmenting was 3.5 % of the CPU of `cutover bench throughput`.
const pointDeleteMax = 64

// clearInto puts the deletion of every record, index entry, digest and the
// counters of res into b (the authority record stays) and returns how many
// records (live and tombstones) it removes. batched says b already holds
// writes of res's records: the families are then range deletions, which
// also delete those (a point deletion finds only what is committed).
func (s *Store) clearInto(b *pebble.Batch, res string, batched bool) (int, error) {
	// Tombstones' expiry entries are keyed by time first, so they are found
	// through the records; everything else is a range per resource.
	prefix := resPrefix(famRecord, res)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return 0, fmt.Errorf("store: clear: %w", err)
	}
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
		e, derr := decodeEntry(it.Value())
		if derr != nil {
			// The range delete removes it anyway; a lost expiry entry is
			// harmless because the sweep re-checks the record.
			continue
		}
		if e.Deleted {
			if err := b.Delete(expiryKey(e.expiresAt, res, e.ID), nil); err != nil {
				_ = it.Close()
				return 0, fmt.Errorf("store: clear: %w", err)
			}
		}
	}
	if err := it.Close(); err != nil {
		return 0, fmt.Errorf("store: clear: %w", err)
	}
	for _, fam := range []byte{famRecord, famChange, famKind, famTime, famDigest} {
		if err := s.deleteFamily(b, resPrefix(fam, res), batched); err != nil {
			return 0, fmt.Errorf("store: clear: %w", err)
		}
	}
	if err := b.Delete(stateKey(res), nil); err != nil {
		return 0, fmt.Errorf("store: clear: %w", err)
	}
	return n, nil
}

// deleteFamily puts the deletion of every key under prefix into b: one by
// one when at most pointDeleteMax are committed there (none: nothing is
// written), else, or when ranged, one range deletion.
func (s *Store) deleteFamily(b *pebble.Batch, prefix []byte, ranged bool) error {
	end := prefixEnd(prefix)
	if !ranged {
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: end})
		if err != nil {
			return err
		}
		var keys [][]byte
		for ok := it.First(); ok && len(keys) <= pointDeleteMax; ok = it.Next() {
			keys = append(keys, slices.Clone(it.Key()))
		}
		if err := it.Close(); err != nil {
			return err
		}
		if len(keys) <= pointDeleteMax {
			for _, k := range keys {
				if err := b.Delete(k, nil); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return b.DeleteRange(prefix, end, nil)
}

// SliceWidth is the width of the store's digest slices (Options.SliceWidth,
// fixed when the store was created).
func (s *Store) SliceWidth() time.Duration { return s.opts.SliceWidth }

// Now is the store's clock (Options.Clock).
func (s *Store) Now() time.Time { return s.now() }

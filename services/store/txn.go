package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/vmihailenco/msgpack/v5"
)

// txn accumulates the mutations of one resource into a batch, keeping the
// record, its index entries, the digest of its slice, the counters and the
// sequence in step. The caller holds the resource's lock from the reads of
// the txn until commit, so what it reads from the DB cannot change under it.
// Several txns (of different, all locked resources) may share one batch.
type txn struct {
	s     *Store
	res   string
	batch *pebble.Batch
	now   time.Time

	state      resState
	stateDirty bool
	// digests holds the slices touched, loaded on first use.
	digests map[int64]*storedDigest
	// overlay holds records written earlier in this txn (nil: removed), so
	// that a page naming an id twice reads its own writes.
	overlay map[string]*entry
	// kitDigests: the participant kit keeps the digests (Digest,
	// SetDigest); replace leaves them alone.
	kitDigests bool
	// cleared: the txn emptied the resource (clear); nothing is read from
	// the DB any more.
	cleared bool
}

// newTxn starts a txn on res; the caller must hold the lock of res.
func (s *Store) newTxn(res string, b *pebble.Batch, now time.Time) (*txn, error) {
	st, err := s.getState(s.db, res)
	if err != nil {
		return nil, err
	}
	return &txn{
		s: s, res: res, batch: b, now: now, state: st,
		digests: map[int64]*storedDigest{},
		overlay: map[string]*entry{},
	}, nil
}

// get returns the current record id, or ok=false if there is none.
func (t *txn) get(id string) (e entry, ok bool, err error) {
	if p, seen := t.overlay[id]; seen {
		if p == nil {
			return entry{}, false, nil
		}
		return *p, true, nil
	}
	if t.cleared {
		return entry{}, false, nil
	}
	e, err = t.s.getEntry(t.s.db, t.res, id)
	if errors.Is(err, ErrNotFound) {
		return entry{}, false, nil
	}
	if err != nil {
		return entry{}, false, err
	}
	return e, true, nil
}

// nextSeq assigns the next change sequence of the resource.
func (t *txn) nextSeq() uint64 {
	t.state.Seq++
	t.stateDirty = true
	return t.state.Seq
}

// replace moves the resource from old (nil: the id was absent) to next (nil:
// remove physically), updating every index, the digest and the counters.
// next.Seq must already be assigned.
func (t *txn) replace(old, next *entry) error {
	b := t.batch
	if old != nil {
		if err := b.Delete(changeKey(t.res, old.Seq), nil); err != nil {
			return err
		}
		if old.Deleted {
			if err := b.Delete(expiryKey(old.expiresAt, t.res, old.ID), nil); err != nil {
				return err
			}
			t.state.Tombstones = decr(t.state.Tombstones)
		} else {
			if err := b.Delete(kindKey(t.res, old.Kind, old.CreatedAt, old.ID), nil); err != nil {
				return err
			}
			if err := b.Delete(timeKey(t.res, old.CreatedAt, old.ID), nil); err != nil {
				return err
			}
			if !t.kitDigests {
				if err := t.digest(&old.Record, false); err != nil {
					return err
				}
			}
			t.state.Live = decr(t.state.Live)
		}
		t.stateDirty = true
	}
	if next == nil {
		if old != nil {
			if err := b.Delete(recordKey(t.res, old.ID), nil); err != nil {
				return err
			}
			t.overlay[old.ID] = nil
		}
		return nil
	}
	val, err := encodeEntry(next)
	if err != nil {
		return fmt.Errorf("store: encode record: %w", err)
	}
	if err := b.Set(recordKey(t.res, next.ID), val, nil); err != nil {
		return err
	}
	if err := b.Set(changeKey(t.res, next.Seq), []byte(next.ID), nil); err != nil {
		return err
	}
	if next.Deleted {
		if err := b.Set(expiryKey(next.expiresAt, t.res, next.ID), nil, nil); err != nil {
			return err
		}
		t.state.Tombstones++
	} else {
		if err := b.Set(kindKey(t.res, next.Kind, next.CreatedAt, next.ID), nil, nil); err != nil {
			return err
		}
		if err := b.Set(timeKey(t.res, next.CreatedAt, next.ID), nil, nil); err != nil {
			return err
		}
		if !t.kitDigests {
			if err := t.digest(&next.Record, true); err != nil {
				return err
			}
		}
		t.state.Live++
	}
	t.stateDirty = true
	cp := *next
	t.overlay[next.ID] = &cp
	return nil
}

func decr(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	return n - 1
}

// digest adds (add=true) or removes a live record's contribution to the
// digest of its slice.
func (t *txn) digest(r *Record, add bool) error {
	d, err := t.loadDigest(t.s.SliceOf(r.CreatedAt))
	if err != nil {
		return err
	}
	h := recordHash(r)
	v := u128{d.Hi, d.Lo}
	if add {
		v = v.add(h)
		d.Count++
	} else {
		v = v.sub(h)
		d.Count = decr(d.Count)
	}
	d.Hi, d.Lo = v.hi, v.lo
	return nil
}

// loadDigest returns slice's digest as the txn holds it, read from the DB
// on first use.
func (t *txn) loadDigest(slice int64) (*storedDigest, error) {
	if d, ok := t.digests[slice]; ok {
		return d, nil
	}
	d := &storedDigest{}
	if !t.cleared {
		b, closer, err := t.s.db.Get(digestKey(t.res, slice))
		switch {
		case errors.Is(err, pebble.ErrNotFound):
		case err != nil:
			return nil, fmt.Errorf("store: get digest: %w", err)
		default:
			dec, derr := decodeDigest(b)
			closer.Close()
			if derr != nil {
				return nil, corruptf("digest of %q slice %d: %w", t.res, slice, derr)
			}
			*d = dec
		}
	}
	t.digests[slice] = d
	return d, nil
}

// clear starts the txn again on an empty resource (the batch holds the
// deletions: Store.clearInto).
func (t *txn) clear() {
	t.state, t.stateDirty = resState{}, true
	t.digests, t.overlay = map[int64]*storedDigest{}, map[string]*entry{}
	t.cleared = true
}

// flush writes the touched digests and the counters into the batch.
func (t *txn) flush() error {
	for slice, d := range t.digests {
		key := digestKey(t.res, slice)
		if d.Count == 0 {
			// An empty slice has no key, so a region that never had records
			// in it compares equal to one whose records all went.
			if err := t.batch.Delete(key, nil); err != nil {
				return err
			}
			continue
		}
		b, err := msgpack.Marshal(d)
		if err != nil {
			return fmt.Errorf("store: encode digest: %w", err)
		}
		if err := t.batch.Set(key, b, nil); err != nil {
			return err
		}
	}
	if t.stateDirty {
		b, err := msgpack.Marshal(&t.state)
		if err != nil {
			return fmt.Errorf("store: encode state: %w", err)
		}
		if err := t.batch.Set(stateKey(t.res), b, nil); err != nil {
			return err
		}
	}
	return nil
}

// commit flushes t into its batch and commits the batch.
func (t *txn) commit() error {
	if err := t.flush(); err != nil {
		return err
	}
	if err := t.batch.Commit(t.s.write); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

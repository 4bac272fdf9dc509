package store

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/cockroachdb/pebble"
	"github.com/cockroachdb/pebble/bloom"
	"github.com/cockroachdb/pebble/vfs"

	"github.com/cutover/cutover/services/participant"
	"github.com/vmihailenco/msgpack/v5"
)

// blockCacheBytes is the Pebble block cache. Pebble's 8 MiB default keeps
// too few index and filter blocks once a store holds a few hundred thousand
// records, and every point read then goes to disk.
const blockCacheBytes = 64 << 20

// lockStripes is the number of per-resource mutexes; resources hash onto them.
const lockStripes = 256

// Store is one service's Pebble store in one region. Its methods are safe for
// concurrent use by any goroutine.
type Store struct {
	db    *pebble.DB
	opts  Options
	write *pebble.WriteOptions

	// life guards db against Close: every method holds it shared for its
	// whole call, Close holds it exclusively. Pebble panics on use after
	// Close, and the library must not panic.
	life struct {
		sync.RWMutex
		closed bool
	}

	// stripes serialise the mutations of a resource. See lockResource.
	stripes [lockStripes]sync.Mutex

	// k is the participant kit over the store (mutate.go), made once.
	kitOnce sync.Once
	k       *participant.Participant
}

var _ io.Closer = (*Store)(nil)

// Open opens (creating if needed) the store in opts.Dir on opts.FS. It
// returns ErrInvalid for bad options, including a SliceWidth that differs from
// the one the store was created with, ErrCorrupt for an unknown format, and
// Pebble's error (wrapped) when the database cannot be opened.
func Open(opts Options) (*Store, error) {
	opts.EnsureDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	dir := opts.Dir
	if dir == "" {
		dir = "/"
	}
	cache := pebble.NewCache(blockCacheBytes)
	defer cache.Unref() // the DB holds its own reference
	db, err := pebble.Open(dir, pebbleOptions(opts.FS, cache, pebbleLogger{opts.Logger}))
	if err != nil {
		return nil, fmt.Errorf("store: open %q: %w", dir, err)
	}
	s := &Store{db: db, opts: opts, write: pebble.Sync}
	if !*opts.Sync {
		s.write = pebble.NoSync
	}
	if err := s.checkFormat(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// pebbleOptions are the Pebble settings: bloom filters on every level,
// because every mutation does point reads (authority, counters, the record, the
// digest) and an import reads ids that mostly do not exist yet; without
// filters each miss reads a block from every level.
func pebbleOptions(fs vfs.FS, cache *pebble.Cache, log pebble.Logger) *pebble.Options {
	o := &pebble.Options{FS: fs, Cache: cache, Levels: make([]pebble.LevelOptions, 7), Logger: log}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	return o.EnsureDefaults()
}

// pebbleLogger routes Pebble's log lines to slog: informational lines at
// debug level (a restart's WAL replay, compactions), fatal ones at error
// level and then a panic (Pebble's own logger would exit the process).
type pebbleLogger struct{ log *slog.Logger }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.log.Error(msg, "component", "pebble")
	panic("pebble: " + msg)
}

// checkFormat records the format and slice width on first open and refuses a
// store written with another format or slice width.
func (s *Store) checkFormat() error {
	var fi formatInfo
	err := s.getValue(s.db, formatKey, &fi)
	switch {
	case errors.Is(err, ErrNotFound):
		fi = formatInfo{Version: formatVersion, SliceWidth: int64(s.opts.SliceWidth)}
		b, err := msgpack.Marshal(&fi)
		if err != nil {
			return fmt.Errorf("store: encode format: %w", err)
		}
		if err := s.db.Set(formatKey, b, pebble.Sync); err != nil {
			return fmt.Errorf("store: write format: %w", err)
		}
		return nil
	case err != nil:
		return err
	case fi.Version < formatVersion:
		return fmt.Errorf("%w: store format %d predates format %d (one authority record per resource, migration contract 2.0) and is not converted: move its data out and delete %s",
			ErrFormat, fi.Version, formatVersion, s.opts.Dir)
	case fi.Version != formatVersion:
		return corruptf("format version %d, want %d", fi.Version, formatVersion)
	case fi.SliceWidth != int64(s.opts.SliceWidth):
		return invalidf("SliceWidth %s, store was created with %s",
			s.opts.SliceWidth, time.Duration(fi.SliceWidth))
	}
	return nil
}

// Close flushes nothing extra (every commit is already durable when Sync is
// on) and closes the database. It waits for calls in flight; later calls
// return ErrClosed, and so does a second Close.
func (s *Store) Close() error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.life.closed {
		return ErrClosed
	}
	s.life.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// enter marks a call in flight; the caller must call s.leave when enter
// returns nil.
func (s *Store) enter() error {
	s.life.RLock()
	if s.life.closed {
		s.life.RUnlock()
		return ErrClosed
	}
	return nil
}

func (s *Store) leave() { s.life.RUnlock() }

// lockResource takes the stripe lock of res and returns its unlock.
//
// STYLE.md says never to hold a mutex across I/O; this lock is the exception
// on purpose. A mutation must read the authority record, read the current
// record and commit its batch as one atomic check-and-write (DESIGN.md "Two
// layers of enforcement"): released before the commit, an export's install
// of the write fence could return between a Put's admission and its commit,
// and a write the export has already passed would land after the fence. The lock is per resource (striped), so it only
// serialises writers of the same resource, which Pebble would order anyway.
func (s *Store) lockResource(res string) func() {
	m := &s.stripes[stripeOf(res)]
	m.Lock()
	return m.Unlock
}

// stripeOf is the stripe index of res, for callers that lock several.
func stripeOf(res string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(res))
	return int(h.Sum32() % lockStripes)
}

func (s *Store) now() time.Time { return s.opts.Clock() }

// reader is what the DB, a snapshot and a batch have in common for reads.
type reader interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// getValue reads key and msgpack-decodes it into v; ErrNotFound if absent,
// ErrCorrupt if undecodable.
func (s *Store) getValue(r reader, key []byte, v any) error {
	b, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("store: get %q: %w", key, err)
	}
	defer closer.Close()
	if err := msgpack.Unmarshal(b, v); err != nil {
		return corruptf("key %q: %w", key, err)
	}
	return nil
}

// getEntry reads the stored record id of res; ErrNotFound if absent.
func (s *Store) getEntry(r reader, res, id string) (entry, error) {
	key := recordKey(res, id)
	b, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return entry{}, ErrNotFound
	}
	if err != nil {
		return entry{}, fmt.Errorf("store: get %q: %w", key, err)
	}
	defer closer.Close()
	e, err := decodeEntry(b)
	if err != nil {
		return entry{}, corruptf("record %q of %q: %w", id, res, err)
	}
	if e.ID != id {
		return entry{}, corruptf("record key %q holds id %q", key, e.ID)
	}
	return e, nil
}

// entriesOf reads the records ids of res, which must be sorted and
// distinct, with one iterator bounded to the resource's records, seeking
// them in key order: cheaper than a point read each (each Get builds an
// iterator of its own), and a resource with no record answers all of them
// with the first seek. fn gets each id with its record, nil when absent.
func (s *Store) entriesOf(r reader, res string, ids []string, fn func(id string, e *entry)) error {
	if len(ids) == 0 {
		return nil
	}
	lo := resPrefix(famRecord, res)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return fmt.Errorf("store: read %q: %w", res, err)
	}
	defer it.Close()
	for i, id := range ids {
		key := recordKey(res, id)
		if !it.SeekGE(key) {
			for _, rest := range ids[i:] { // nothing at or after key
				fn(rest, nil)
			}
			break
		}
		if !bytes.Equal(it.Key(), key) {
			fn(id, nil)
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("store: get %q: %w", key, err)
		}
		e, err := decodeEntry(v)
		if err != nil {
			return corruptf("record %q of %q: %w", id, res, err)
		}
		if e.ID != id {
			return corruptf("record key %q holds id %q", key, e.ID)
		}
		fn(id, &e)
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("store: read %q: %w", res, err)
	}
	return nil
}

// getState reads the counters of res; the zero state if there are none.
func (s *Store) getState(r reader, res string) (resState, error) {
	var st resState
	err := s.getValue(r, stateKey(res), &st)
	if errors.Is(err, ErrNotFound) {
		return resState{}, nil
	}
	return st, err
}

package contractnats

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cutover/cutover/services/store"
)

// Checkpoints is durable name -> value state where the import endpoint
// records, per (migration, service), the highest page sequence it applied.
// Implementations must be safe for concurrent use.
type Checkpoints interface {
	// Get returns the value stored under name, or nil and a nil error when
	// there is none.
	Get(name string) ([]byte, error)
	// Put stores v under name, replacing any earlier value; it returns once
	// the value is as durable as the service's own data.
	Put(name string, v []byte) error
}

// MemoryCheckpoints returns Checkpoints kept in memory only: for tests and
// for services whose imports rebuild their progress from the stream.
func MemoryCheckpoints() Checkpoints {
	return &memCheckpoints{m: map[string][]byte{}}
}

type memCheckpoints struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *memCheckpoints) Get(name string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.m[name]...), nil
}

func (c *memCheckpoints) Put(name string, v []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[name] = append([]byte(nil), v...)
	return nil
}

// StoreCheckpoints returns Checkpoints kept as cursors of st (store.PutCursor,
// synced like every store commit), so that a StoreParticipant's import
// progress lives in the same Pebble store as the records it imported.
func StoreCheckpoints(st *store.Store) Checkpoints { return storeCheckpoints{st} }

type storeCheckpoints struct{ st *store.Store }

func (c storeCheckpoints) Get(name string) ([]byte, error) {
	v, err := c.st.GetCursor(name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return v, err
}

// Put writes the checkpoint without an fsync of its own (PutCursorAfter):
// it is written after the import it describes returned, so it can never
// survive a crash that the import did not; losing it re-imports a page,
// which is idempotent. One synced commit per page instead of two.
func (c storeCheckpoints) Put(name string, v []byte) error { return c.st.PutCursorAfter(name, v) }

var (
	_ Checkpoints = (*memCheckpoints)(nil)
	_ Checkpoints = storeCheckpoints{}
)

// decodeCheckpoint reads a checkpoint value: 8 bytes big-endian, or absent.
func decodeCheckpoint(name string, v []byte) (uint64, error) {
	switch len(v) {
	case 0:
		return 0, nil
	case 8:
		return binary.BigEndian.Uint64(v), nil
	}
	return 0, fmt.Errorf("contractnats: checkpoint %q: %d bytes, want 8", name, len(v))
}

func encodeCheckpoint(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

package orchestrator

import (
	"context"
	"fmt"
	"sync"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// Fencing strategies (Config.Fencing). Only FencingProtocol is the design;
// the others exist so that `cutover bench fence` can migrate one workload
// each way and measure what the paper could only infer (paper 001 §6.5).
const (
	// FencingProtocol is this design: the source is hard-delete fenced in
	// Phase 2 (deletes become tombstones, writes flow) and write fenced only
	// in Phase 3 (paper 001 Algorithm 1). The default.
	FencingProtocol = "protocol"
	// FencingStopAndCopy write-fences the source before the historical copy:
	// writes are refused in Phases 2–3. The routing lock still follows the
	// protocol (hard-delete lock in Phase 2); the store fence is what users
	// hit (HTTP 423).
	FencingStopAndCopy = "stop-and-copy"
	// FencingReadOnly write-fences the source right after the pre-lock:
	// writes are refused in Phases 1–3. The routing lock cannot take a write
	// lock before convergence (paper 000 §4.1), so the store fence alone
	// carries the block during the convergence wait, set on the first step
	// after the PreLocked event.
	FencingReadOnly = "read-only"
	// FencingDeleteBlocking stands for a design that refuses deletes instead
	// of tombstoning them in Phases 2–3. The stores have no such fence level,
	// so the engine runs the protocol unchanged and the bench measures the
	// window in which such a design would refuse a delete (hard-delete lock
	// to swap).
	FencingDeleteBlocking = "delete-blocking"
)

// validFencing reports whether s names a strategy ("" is the default).
func validFencing(s string) error {
	switch s {
	case "", FencingProtocol, FencingStopAndCopy, FencingReadOnly, FencingDeleteBlocking:
		return nil
	}
	return fmt.Errorf("%w: fencing strategy %q", ErrInvalid, s)
}

// phase2Fence is the fence level set at the source for the historical copy.
func (w *Worker) phase2Fence() contract.FenceLevel {
	switch w.cfg.Fencing {
	case FencingStopAndCopy, FencingReadOnly:
		return contract.FenceWrite
	}
	return contract.FenceHardDelete
}

// holderCache keeps each in-flight migration's last routing document as
// written by its own lock transitions (paper 000 §8: the holder's cached
// document). A transition given a current cached document needs no read; a
// stale one costs a revision conflict and a re-read, never a wrong decision
// (kvrouting.Locker confirms every decision not proven by a write). Safe for
// concurrent use.
type holderCache struct {
	mu struct {
		sync.Mutex
		docs map[string]*kvrouting.Document
	}
}

// holderCacheMax bounds the cache: entries of migrations that died mid-way
// are dropped wholesale when it is reached (a miss only costs a read).
const holderCacheMax = 100_000

// processHolders is the cache the workers of one process share: a
// migration's steps may be delivered to any of them.
var processHolders = newHolderCache()

func newHolderCache() *holderCache {
	c := &holderCache{}
	c.mu.docs = map[string]*kvrouting.Document{}
	return c
}

// cached returns the holder's document for st, or nil (cache off, no entry,
// or an entry from another attempt).
func (w *Worker) cached(st *events.State) *kvrouting.Document {
	c := w.cfg.holder
	if w.cfg.NoHolderCache || c == nil {
		return nil
	}
	c.mu.Lock()
	d := c.mu.docs[st.ID]
	c.mu.Unlock()
	if d == nil || d.Resource != st.Resource {
		return nil
	}
	if tok := kvrouting.Token(st.Token); d.Primary.Lock.Token != tok {
		return nil
	}
	return d
}

// remember records d (nil: forget) as the holder's document of st.
func (w *Worker) remember(st *events.State, d *kvrouting.Document) {
	c := w.cfg.holder
	if w.cfg.NoHolderCache || c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d == nil {
		delete(c.mu.docs, st.ID)
		return
	}
	if len(c.mu.docs) >= holderCacheMax {
		clear(c.mu.docs)
	}
	c.mu.docs[st.ID] = d
}

// verify checks, before a call that acts under the lock (a fence, an export
// page, an import, a validation), that this migration still holds it. With
// the holder's cached document that is free; without it (NoHolderCache, or
// after a restart) it is one leader read, which is then cached. bad
// reports a lost or expired lock (the outcome rolls back) or a read error.
func (w *Worker) verify(ctx context.Context, st *events.State, res kvrouting.Resource) (outcome, bool) {
	d, err := w.cfg.Locker.Verify(ctx, res, kvrouting.Token(st.Token), w.cached(st))
	if err == nil {
		w.remember(st, d)
	}
	return w.lockErr(ctx, st, res, err)
}

package orchestrator

import (
	"context"
	"sync"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
)

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
	c := w.holders
	if c == nil {
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
	c := w.holders
	if c == nil {
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

// verify checks, before a call that acts under the lock (an export page, an
// import, a validation), that this migration still holds it, and returns
// the document it holds: the participants' authorities are stamped by it
// (authorityAt). With the holder's cached document that is free; without it
// (WithoutHolderCache, or after a restart) it is one leader read, which is
// then cached. bad reports a lost or expired lock (the outcome rolls back)
// or a read error.
func (w *Worker) verify(ctx context.Context, st *events.State, res kvrouting.Resource) (*kvrouting.Document, outcome, bool) {
	d, err := w.cfg.Locker.Verify(ctx, res, kvrouting.Token(st.Token), w.cached(st))
	if err == nil {
		w.remember(st, d)
	}
	o, bad := w.lockErr(ctx, st, res, err)
	return d, o, bad
}

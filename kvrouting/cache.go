package kvrouting

import (
	"sync"
	"sync/atomic"
	"time"
)

// Tier is one routing cache tier (paper 000 §2.4: edge, regional,
// service-local), with its own TTL. A tier may be shared by several
// resolvers (a regional cache used by every service of a region). Safe for
// concurrent use.
type Tier struct {
	name string
	ttl  time.Duration
	max  int

	mu struct {
		sync.Mutex
		entries map[string]tierEntry
	}
	hits, misses atomic.Uint64
}

type tierEntry struct {
	doc     *Document
	fetched time.Time
}

// NewTier returns a tier that keeps an entry for ttl after it was fetched
// from the store, and at most maxEntries entries (0 = 100 000).
func NewTier(name string, ttl time.Duration, maxEntries int) *Tier {
	if maxEntries <= 0 {
		maxEntries = 100_000
	}
	t := &Tier{name: name, ttl: ttl, max: maxEntries}
	t.mu.entries = make(map[string]tierEntry)
	return t
}

// Name returns the tier's name.
func (t *Tier) Name() string { return t.name }

// TTL returns the tier's TTL.
func (t *Tier) TTL() time.Duration { return t.ttl }

// get returns the cached document if it is younger than the TTL.
func (t *Tier) get(key string, now time.Time) (*Document, time.Time, bool) {
	t.mu.Lock()
	e, ok := t.mu.entries[key]
	t.mu.Unlock()
	if !ok || now.Sub(e.fetched) >= t.ttl {
		t.misses.Add(1)
		return nil, time.Time{}, false
	}
	t.hits.Add(1)
	return e.doc, e.fetched, true
}

// put stores doc as fetched at fetched. A cached entry never moves back to
// an older revision, and a copy refreshed from a lower tier keeps the lower
// tier's fetch time, so an entry's age is always its age since the store.
func (t *Tier) put(key string, doc *Document, fetched time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.mu.entries[key]; ok && e.doc.Revision > doc.Revision {
		return
	}
	if len(t.mu.entries) >= t.max {
		// Crude bound: drop an arbitrary entry. The TTL, not eviction, is
		// what correctness depends on.
		for k := range t.mu.entries {
			delete(t.mu.entries, k)
			break
		}
	}
	t.mu.entries[key] = tierEntry{doc: doc, fetched: fetched}
}

// Invalidate drops key (used by the optional watch; never needed for
// correctness).
func (t *Tier) Invalidate(key string) {
	t.mu.Lock()
	delete(t.mu.entries, key)
	t.mu.Unlock()
}

// Len returns the number of entries.
func (t *Tier) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.mu.entries)
}

// Hits returns hits and misses so far.
func (t *Tier) Hits() (hits, misses uint64) { return t.hits.Load(), t.misses.Load() }

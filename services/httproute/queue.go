package httproute

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
)

// Server-side write queueing. A write that meets a write lock
// or a write fence in force is parked — no store lock held, nothing written
// — until the resource's routing document changes (one KV watcher per
// Router, shared by every parked write), the refusal is expected to end (a
// lock or fence that ends with no routing change), or Config.QueueWrites
// elapses. It is then resolved again through the leader and run at the
// region the fresh document names. Clients that cannot retry (browsers, curl, other
// languages) therefore see no 423 at all when the write lock is shorter
// than QueueWrites; the ones that time out, or find the queue full, get the
// 423 with its Retry-After as before.

// QueuedHeader is set on the response to every write that was parked: how
// long it waited, in whole milliseconds.
const QueuedHeader = "Cutover-Queued-Ms"

// Queue defaults (Config.EnsureDefaults, with QueueWrites > 0).
const (
	// DefaultQueueMax bounds the writes parked at once in one Router.
	DefaultQueueMax = 1024
	// DefaultQueuePerResource bounds the writes parked at once on one
	// resource.
	DefaultQueuePerResource = 64
)

// Queue outcomes, as QueueObserver sees them.
const (
	// QueueApplied: the write was run again after the wait (it may still
	// have failed for another reason).
	QueueApplied = "applied"
	// QueueTimeout: the restriction outlasted QueueWrites; the 423 went out.
	QueueTimeout = "timeout"
	// QueueOverflow: the queue (or the resource's share) was full; the 423
	// went out at once.
	QueueOverflow = "overflow"
)

// QueueObserver receives every parked write's outcome and wait (metrics).
// It must be safe for concurrent use.
type QueueObserver interface {
	ObserveQueued(outcome string, wait time.Duration)
}

// QueueStats counts the queue's outcomes since the Router started.
type QueueStats struct {
	Queued, Applied, Timeouts, Overflows uint64
}

// writeQueue parks writes until their resource's routing changes.
type writeQueue struct {
	max, perResource int
	kv               jetstream.KeyValue

	mu      sync.Mutex
	parked  int
	byKey   map[string]int
	waiters map[string][]chan struct{}
	watch   jetstream.KeyWatcher
	stats   QueueStats
	closed  bool
}

func newWriteQueue(kv jetstream.KeyValue, max, perResource int) *writeQueue {
	return &writeQueue{max: max, perResource: perResource, kv: kv,
		byKey: map[string]int{}, waiters: map[string][]chan struct{}{}}
}

// admit takes a place in the queue for key, or reports it full.
func (q *writeQueue) admit(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.parked >= q.max || q.byKey[key] >= q.perResource {
		q.stats.Overflows++
		return false
	}
	q.parked++
	q.byKey[key]++
	q.stats.Queued++
	return true
}

// leave gives key's place back and counts the outcome.
func (q *writeQueue) leave(key, outcome string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.parked--
	if q.byKey[key]--; q.byKey[key] <= 0 {
		delete(q.byKey, key)
	}
	switch outcome {
	case QueueApplied:
		q.stats.Applied++
	case QueueTimeout:
		q.stats.Timeouts++
	}
}

// changed returns a channel closed at the next change of key's routing
// document. The watcher is started on first use (and again after it
// stops); an error starting it closes the channel at once, so the caller
// re-runs the write rather than waiting blind.
func (q *writeQueue) changed(key string) <-chan struct{} {
	ch := make(chan struct{})
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		close(ch)
		return ch
	}
	if q.watch == nil {
		w, err := q.kv.WatchAll(context.Background(), jetstream.UpdatesOnly())
		if err != nil {
			close(ch)
			return ch
		}
		q.watch = w
		go q.follow(w)
	}
	q.waiters[key] = append(q.waiters[key], ch)
	return ch
}

// forget drops ch from key's waiters (a write that stopped waiting).
func (q *writeQueue) forget(key string, ch <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	ws := q.waiters[key]
	for i, w := range ws {
		if w == ch {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(q.waiters, key)
	} else {
		q.waiters[key] = ws
	}
}

// follow wakes the waiters of every key that changes, until w stops; then
// it wakes everyone (they re-run) and lets the next wait start a watcher.
func (q *writeQueue) follow(w jetstream.KeyWatcher) {
	for e := range w.Updates() {
		if e == nil {
			continue // the end of the (empty) initial values
		}
		q.wake(e.Key())
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.watch == w {
		q.watch = nil
	}
	for k, ws := range q.waiters {
		for _, ch := range ws {
			close(ch)
		}
		delete(q.waiters, k)
	}
}

func (q *writeQueue) wake(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, ch := range q.waiters[key] {
		close(ch)
	}
	delete(q.waiters, key)
}

func (q *writeQueue) close() {
	q.mu.Lock()
	w := q.watch
	q.closed, q.watch = true, nil
	q.mu.Unlock()
	if w != nil {
		_ = w.Stop()
	}
}

func (q *writeQueue) snapshot() QueueStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.stats
}

// Queueable reports whether err is a refusal worth parking for: a 423 of a
// write lock or a write fence in force (not "moved": that one is resolved
// again at once).
func Queueable(err error) bool {
	if err == nil || Moved(err) {
		return false
	}
	return services.ToError(err).Code == contract.CodeLocked
}

// park runs the write again each time its resource's routing document
// changes, and when the lock or fence that refused it is expected to end
// (the refusal's Retry-After, doubled on every wake that finds it still in
// force, at most maxParkNap: a lock whose migration stopped ends at its
// expiry with no routing change, and a store's fence may end after the
// routing change that released it), until it is no longer refused by a
// lock or QueueWrites has passed since the first refusal. It returns the
// last run's error; a write still refused then is run once more, so that
// its 423 says when to retry as of now.
func (rt *Router) park(w http.ResponseWriter, r *http.Request, res kvrouting.Resource, run func() error, err error) error {
	q := rt.queue
	key := res.Key()
	start := time.Now()
	if !q.admit(key) {
		rt.observeQueued(QueueOverflow, 0)
		return err
	}
	deadline := time.NewTimer(rt.cfg.QueueWrites)
	defer deadline.Stop()
	outcome := QueueTimeout
	defer func() {
		wait := time.Since(start)
		q.leave(key, outcome)
		rt.observeQueued(outcome, wait)
	}()
	stamp := func() { w.Header().Set(QueuedHeader, strconv.FormatInt(time.Since(start).Milliseconds(), 10)) }
	nap := time.Duration(0)
	changed := true
	for Queueable(err) {
		// Subscribe before the leader read, so that a change between the
		// two still wakes this write.
		ch := q.changed(key)
		if changed {
			rt.Refresh(r.Context(), res)
		}
		stamp()
		if err = run(); !Queueable(err) {
			q.forget(key, ch)
			outcome = QueueApplied
			break
		}
		nap = min(max(2*nap, services.ToError(err).RetryAfter, minParkNap), maxParkNap)
		timer := time.NewTimer(nap)
		select {
		case <-ch:
			changed = true
		case <-timer.C:
			q.forget(key, ch)
			changed = false
		case <-deadline.C:
			timer.Stop()
			q.forget(key, ch)
			if err = run(); !Queueable(err) {
				outcome = QueueApplied
			}
			stamp()
			return err
		case <-r.Context().Done():
			timer.Stop()
			q.forget(key, ch)
			return err
		}
		timer.Stop()
	}
	stamp()
	return err
}

// A parked write's naps between runs with no routing change: from the
// refusal's Retry-After (at least minParkNap), doubling, at most
// maxParkNap, so that a lock or fence that ends with no routing change
// holds the write at most maxParkNap longer.
const (
	minParkNap = 50 * time.Millisecond
	maxParkNap = time.Second
)

func (rt *Router) observeQueued(outcome string, wait time.Duration) {
	if rt.cfg.QueueObserver != nil {
		rt.cfg.QueueObserver.ObserveQueued(outcome, wait)
	}
}

// QueueStats returns the write queue's counters (zero when queueing is
// off).
func (rt *Router) QueueStats() QueueStats {
	if rt.queue == nil {
		return QueueStats{}
	}
	return rt.queue.snapshot()
}

// Close stops the write queue's routing watcher; parked writes run once
// more and answer. The Router keeps routing without queueing.
func (rt *Router) Close() {
	if rt.queue != nil {
		rt.queue.close()
	}
}

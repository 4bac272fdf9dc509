package check

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/nats-io/nats.go/jetstream"
)

// Revision is one committed routing revision as the KV stream recorded
// it: Created is the leader's commit timestamp.
type Revision struct {
	Rev     uint64
	Created time.Time
	Doc     *kvrouting.Document
}

// Observer watches every revision of the ROUTING bucket. It is the
// checker's own view of the lock history, independent of the engine's
// events: it sees what the store accepted, not what a worker believed.
type Observer struct {
	js     jetstream.JetStream
	cancel context.CancelFunc
	// delivered counts the watch's deliveries; stalled is delivered + 1
	// at the last catch-up that had to read the bucket (0: none): while
	// the watch has delivered nothing since, CatchUp does not wait for it.
	delivered, stalled atomic.Uint64
	done               chan struct{}
	mu                 struct {
		sync.Mutex
		revs map[string][]Revision // resource → revisions in commit order
		n    int
	}
}

// Watch starts observing every revision of the ROUTING bucket (from its
// history on). Errors: the bucket or the watch could not be opened.
func Watch(ctx context.Context, js jetstream.JetStream) (*Observer, error) {
	kv, err := js.KeyValue(ctx, cnats.RoutingBucket)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	w, err := kv.WatchAll(wctx)
	if err != nil {
		cancel()
		return nil, err
	}
	o := &Observer{js: js, cancel: cancel, done: make(chan struct{})}
	o.mu.revs = map[string][]Revision{}
	go func() {
		defer close(o.done)
		defer w.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil || e.Operation() != jetstream.KeyValuePut {
					continue
				}
				doc, err := kvrouting.DecodeDocument(e.Value(), e.Revision())
				if err != nil {
					continue
				}
				o.add(doc.Resource, Revision{Rev: e.Revision(), Created: e.Created(), Doc: doc})
				o.delivered.Add(1)
			}
		}
	}()
	return o, nil
}

// add records rev of res unless it has it; revisions stay in commit order
// (a backfill may bring older ones than the watch's last).
func (o *Observer) add(res string, rev Revision) {
	o.mu.Lock()
	defer o.mu.Unlock()
	hs := o.mu.revs[res]
	i, found := slices.BinarySearchFunc(hs, rev.Rev, func(h Revision, r uint64) int { return cmp.Compare(h.Rev, r) })
	if found {
		return
	}
	o.mu.revs[res] = slices.Insert(hs, i, rev)
	o.mu.n++
}

// ErrBehind is returned by CatchUp when neither the watch nor the bucket's
// kept history gives every revision up to the one asked for.
var ErrBehind = errors.New("check: routing observer behind")

// CatchUp makes sure the observer holds res's revisions up to rev (a
// revision read from the leader): it waits up to wait for the watch (not
// at all while the watch has delivered nothing since it last fell behind), then
// reads the revisions the bucket keeps for res (its history setting) and
// adds those the watch has not delivered. A watch can fall behind for
// longer than any fixed wait (its server SIGKILLed, a loaded box), and the
// lock analysis must not mistake a history it has not received for one
// without a swap. Errors: ErrBehind when revisions are still missing (the bucket
// keeps fewer than the watch missed), or the history read's error.
func (o *Observer) CatchUp(ctx context.Context, res kvrouting.Resource, rev uint64, wait time.Duration) error {
	if o.stalled.Load() == o.delivered.Load()+1 {
		wait = 0 // the watch has delivered nothing since it last fell behind
	}
	for deadline := time.Now().Add(wait); o.LastRev(res.String()) < rev && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	last := o.LastRev(res.String())
	if last >= rev {
		return nil
	}
	o.stalled.Store(o.delivered.Load() + 1)
	// Read from the stream itself, one revision at a time (the key's next
	// revision at or after a sequence), with the stream leader's message
	// get: no consumer, which a connection whose watch stalled may not get
	// either (seen: kv.History hanging until the context's end), and not a
	// direct get, which the regional mirror may answer with revisions the
	// leader has dropped (seen under load: TestObserverCatchesUpFromTheBucket).
	subj := cnats.RoutingSubject(res.Key())
	type msg struct {
		data   []byte
		seq    uint64
		stored time.Time
	}
	get := func(seq uint64) (msg, error) {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		data, at, stored, err := cnats.LeaderGetNext(gctx, o.js.Conn(), cnats.RoutingStream, subj, seq)
		if errors.Is(err, cnats.ErrDeleted) {
			err = nil // a delete or purge marker: data nil
		}
		return msg{data, at, stored}, err
	}
	seq := max(last, 1)
	if last > 0 {
		// The bucket drops a key's oldest revisions first: if the last one
		// the watch delivered is still there, so is every later one.
		m, err := get(last)
		if err != nil && !errors.Is(err, cnats.ErrNotFound) {
			return fmt.Errorf("check: routing history of %s: %w", res, err)
		}
		if err != nil || m.seq != last {
			return fmt.Errorf("%w: %s at revision %d, the watch delivered up to %d, which the bucket no longer keeps", ErrBehind, res, rev, last)
		}
		seq = last + 1
	}
	for seq <= rev {
		m, err := get(seq)
		if errors.Is(err, cnats.ErrNotFound) {
			break
		}
		if err != nil {
			return fmt.Errorf("check: routing history of %s: %w", res, err)
		}
		seq = m.seq + 1
		if m.data == nil {
			continue // a delete or purge
		}
		doc, err := kvrouting.DecodeDocument(m.data, m.seq)
		if err != nil {
			return fmt.Errorf("check: routing history of %s: revision %d: %w", res, m.seq, err)
		}
		o.add(res.String(), Revision{Rev: m.seq, Created: m.stored, Doc: doc})
	}
	if o.LastRev(res.String()) < rev {
		return fmt.Errorf("%w: %s at revision %d, the stream holds up to %d", ErrBehind, res, rev, o.LastRev(res.String()))
	}
	return nil
}

// Stop ends the watch.
func (o *Observer) Stop() {
	o.cancel()
	<-o.done
}

// History is res's revisions in commit order.
func (o *Observer) History(res string) []Revision {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.mu.revs[res])
}

// LastRev is the last revision of res seen (0: none).
func (o *Observer) LastRev(res string) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	hs := o.mu.revs[res]
	if len(hs) == 0 {
		return 0
	}
	return hs[len(hs)-1].Rev
}

// LockAnalysis walks one resource's revisions and reports operations the
// store accepted with a stale token (a holder acting after its lock's
// expiry, or a new holder replacing a lock still in force), how many of
// those came from paused holders, the longest write fence (write lock
// start to its removal, bounded by its expiry: after that no enforcer
// honours it), and the time of the last swap.
func LockAnalysis(hs []Revision, skew time.Duration, paused map[kvrouting.Token]bool) (stale, pausedOps int, maxFence time.Duration, lastSwap time.Time, samples []string) {
	var fenceStart, fenceExp time.Time
	var fenceTok kvrouting.Token
	for i := range hs {
		cur, at := hs[i].Doc, hs[i].Created
		cl := cur.Primary.Lock
		prev := cur
		if i > 0 {
			prev = hs[i-1].Doc
		}
		pl := prev.Primary.Lock
		swapped := cur.Primary.Region != prev.Primary.Region
		if swapped {
			lastSwap = at
		}
		if i > 0 && !pl.IsZero() {
			x := pl.Token
			byX := (cl.Token == x && cl != pl) || (swapped && cur.Secondary != nil && cur.Secondary.Lock.Token == x)
			if byX && at.After(pl.Expiry.Add(skew)) {
				stale++
				if paused[x] {
					pausedOps++
				}
				samples = append(samples, fmt.Sprintf("%s rev %d: %s→%s by the holder at %s, its lock expired %s", cur.Resource, hs[i].Rev, pl.Type, cl.Type, at.Format("15:04:05.000"), pl.Expiry.Format("15:04:05.000")))
			}
			if !cl.IsZero() && cl.Token != x && pl.InForce(at, 0) && pl.Type != kvrouting.LockSecondary {
				stale++
				samples = append(samples, fmt.Sprintf("%s rev %d: token replaced a %s lock still in force", cur.Resource, hs[i].Rev, pl.Type))
			}
		}
		// Write fence: from the first revision with a token's write lock to
		// the first without it (or its expiry, whichever is first).
		if cl.Type == kvrouting.LockWrite && (fenceTok != cl.Token || fenceStart.IsZero()) {
			fenceStart, fenceExp, fenceTok = at, cl.Expiry, cl.Token
		} else if cl.Type == kvrouting.LockWrite && cl.Token == fenceTok {
			fenceExp = cl.Expiry // a renewal would show here
		}
		if !fenceStart.IsZero() && (cl.Type != kvrouting.LockWrite || cl.Token != fenceTok) {
			end := at
			if fenceExp.Before(end) {
				end = fenceExp
			}
			maxFence = max(maxFence, end.Sub(fenceStart))
			fenceStart, fenceTok = time.Time{}, ""
			if cl.Type == kvrouting.LockWrite {
				fenceStart, fenceExp, fenceTok = at, cl.Expiry, cl.Token
			}
		}
	}
	if !fenceStart.IsZero() {
		maxFence = max(maxFence, fenceExp.Sub(fenceStart))
	}
	return stale, pausedOps, maxFence, lastSwap, samples
}

// Revisions is the number of revisions observed.
func (o *Observer) Revisions() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.mu.n
}

// Tokens are every lock token the observed documents carried (the cluster
// test checks that none is logged whole).
func (o *Observer) Tokens() map[kvrouting.Token]bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[kvrouting.Token]bool{}
	for _, hs := range o.mu.revs {
		for _, r := range hs {
			for _, l := range []kvrouting.Lock{r.Doc.Primary.Lock} {
				if l.Token != "" {
					out[l.Token] = true
				}
			}
			if r.Doc.Secondary != nil && r.Doc.Secondary.Lock.Token != "" {
				out[r.Doc.Secondary.Lock.Token] = true
			}
		}
	}
	return out
}

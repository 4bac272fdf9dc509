//go:build ignore

package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/services/chat"
	"github.com/cutover/cutover/services/client"
	"github.com/cutover/cutover/services/store"
	"github.com/nats-io/nats.go/jetstream"
)

// observedRev is one committed routing revision as the KV stream recorded
// it: Created is the leader's commit timestamp.
type observedRev struct {
	rev     uint64
	created time.Time
	doc     *kvrouting.Document
}

// routingObserver watches every revision of the ROUTING bucket. It is the
// checker's own view of the lock history, independent of the engine's
// events: it sees what the store accepted, not what a worker believed.
type routingObserver struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     struct {
		sync.Mutex
		revs map[string][]observedRev // resource → revisions in commit order
		n    int
	}
}

func watchRouting(ctx context.Context, js jetstream.JetStream) (*routingObserver, error) {
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
	o := &routingObserver{cancel: cancel, done: make(chan struct{})}
	o.mu.revs = map[string][]observedRev{}
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
				o.mu.Lock()
				hs := o.mu.revs[doc.Resource]
				if len(hs) == 0 || hs[len(hs)-1].rev < e.Revision() {
					o.mu.revs[doc.Resource] = append(hs, observedRev{rev: e.Revision(), created: e.Created(), doc: doc})
					o.mu.n++
				}
				o.mu.Unlock()
			}
		}
	}()
	return o, nil
}

func (o *routingObserver) stop() {
	o.cancel()
	<-o.done
}

func (o *routingObserver) history(res string) []observedRev {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.mu.revs[res])
}

func (o *routingObserver) lastRev(res string) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	hs := o.mu.revs[res]
	if len(hs) == 0 {
		return 0
	}
	return hs[len(hs)-1].rev
}

// lockAnalysis walks one resource's revisions and reports operations the
// store accepted with a stale token (a holder acting after its lock's
// expiry, or a new holder replacing a lock still in force), how many of
// those came from paused holders, the longest write fence (write lock
// start to its removal, bounded by its expiry: after that no enforcer
// honours it), and the time of the last swap.
func lockAnalysis(hs []observedRev, skew time.Duration, paused map[kvrouting.Token]bool) (stale, pausedOps int, maxFence time.Duration, lastSwap time.Time, samples []string) {
	var fenceStart, fenceExp time.Time
	var fenceTok kvrouting.Token
	for i := range hs {
		cur, at := hs[i].doc, hs[i].created
		cl := cur.Primary.Lock
		prev := cur
		if i > 0 {
			prev = hs[i-1].doc
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
				samples = append(samples, fmt.Sprintf("%s rev %d: %s→%s by the holder at %s, its lock expired %s", cur.Resource, hs[i].rev, pl.Type, cl.Type, at.Format("15:04:05.000"), pl.Expiry.Format("15:04:05.000")))
			}
			if !cl.IsZero() && cl.Token != x && pl.InForce(at, 0) && pl.Type != kvrouting.LockSecondary {
				stale++
				samples = append(samples, fmt.Sprintf("%s rev %d: token replaced a %s lock still in force", cur.Resource, hs[i].rev, pl.Type))
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

// settled retries a read for up to checkReadPatience: the checks run right
// after the last fault, and a stream whose leader was just killed answers
// 503 until its election ends (seen in TestChaosShort under -race). Reads
// are idempotent; an error that outlasts the patience is returned.
func settled[T any](ctx context.Context, read func() (T, error)) (T, error) {
	deadline := time.Now().Add(checkReadPatience)
	for {
		v, err := read()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

const checkReadPatience = 20 * time.Second

// check fills the migration figures and the invariants from what clients
// saw acknowledged, what the stores hold and the observed routing history.
func (r *chaosRun) check(ctx context.Context, regions regionMap, reader *client.Client, led *ledger) error {
	rep := r.rep
	inv := &rep.Invariants
	sample := func(s string) {
		if len(inv.Samples) < 12 {
			inv.Samples = append(inv.Samples, s)
		}
	}
	r.mu.Lock()
	all := slices.Clone(r.mu.all)
	convs := slices.Clone(r.mu.convs)
	paused := map[kvrouting.Token]bool{}
	for k := range r.mu.paused {
		paused[k] = true
	}
	r.mu.Unlock()

	// Every migration completed or rolled back cleanly (terminal, and no
	// lock of it left in the routing document).
	for _, id := range all {
		st, err := settled(ctx, func() (*events.State, error) {
			st, _, err := r.orch.State(ctx, id)
			return st, err
		})
		if err != nil {
			return fmt.Errorf("state of %s: %w", id, err)
		}
		switch {
		case st.Status == events.StatusCompleted:
			rep.Migrations.Completed++
		case st.Status.Terminal():
			res, err := kvrouting.ParseResource(st.Resource)
			if err != nil {
				return err
			}
			doc, err := settled(ctx, func() (*kvrouting.Document, error) { return r.lk.Get(ctx, res) })
			if err != nil {
				return err
			}
			if doc.MigrationID == id || (st.Token != "" && doc.Primary.Lock.Token == kvrouting.Token(st.Token)) {
				inv.NotClean++
				sample(fmt.Sprintf("migration %s (%s) ended %s but left its lock", id, st.Resource, st.Status))
			} else {
				rep.Migrations.RolledBack++
			}
			if rep.Migrations.Reasons == nil {
				rep.Migrations.Reasons = map[string]int{}
			}
			rep.Migrations.Reasons[reasonClass(st.Status, st.Reason)]++
			if len(rep.Migrations.StepErrors) < 8 {
				if hs, err := r.orch.History(ctx, id); err == nil {
					for _, e := range hs {
						var b events.StepFailed
						switch x := e.Body.(type) {
						case events.StepFailed:
							b = x
						case *events.StepFailed:
							b = *x
						default:
							continue
						}
						if len(rep.Migrations.StepErrors) < 8 {
							rep.Migrations.StepErrors = append(rep.Migrations.StepErrors, fmt.Sprintf("%s %s@%s: %s", id, b.Phase, e.Time.Format("15:04:05.000"), b.Error))
						}
					}
				}
			}
		default:
			rep.Migrations.Unfinished++
			inv.NotClean++
			sample(fmt.Sprintf("migration %s (%s) unfinished: %s/%s", id, st.Resource, st.Phase, st.Status))
		}
	}

	skew := r.lk.Config().ClockSkew
	led.mu.Lock()
	defer led.mu.Unlock()
	rep.Writes.Conversation = len(convs)
	for _, conv := range convs {
		res := chatResource(conv)
		doc, err := settled(ctx, func() (*kvrouting.Document, error) { return r.lk.Get(ctx, res) })
		if err != nil {
			return err
		}
		// The observer must have caught up with the final revision.
		for deadline := time.Now().Add(10 * time.Second); r.obs.lastRev(res.String()) < doc.Revision && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if !doc.Primary.Lock.IsZero() {
			inv.OrphanedLocks++
			sample(fmt.Sprintf("orphaned %s lock on %s", doc.Primary.Lock.Type, conv))
		}
		if doc.Target != "" || doc.MigrationID != "" || (doc.Secondary != nil && doc.Secondary.Region == doc.Primary.Region) {
			inv.PartialCutovers++
			sample(fmt.Sprintf("partial cutover of %s: primary %s target %q migration %q", conv, doc.Primary.Region, doc.Target, doc.MigrationID))
		}
		hs := r.obs.history(res.String())
		rep.Observed.Revisions += len(hs)
		stale, pausedOps, fence, lastSwap, ss := lockAnalysis(hs, skew, paused)
		inv.StaleTokenOps += stale
		inv.PausedHolderOps += pausedOps
		inv.MaxWriteFenceMs = max(inv.MaxWriteFenceMs, float64(fence.Microseconds())/1000)
		for _, s := range ss {
			sample(s)
		}

		// Acknowledged writes present with their last content, acknowledged
		// deletes absent, read through the API at the authoritative region.
		seen := map[string]string{}
		for m, err := range reader.AllMessages(ctx, conv, client.ListOptions{Limit: 200}) {
			var ae *client.APIError
			if errors.As(err, &ae) && ae.Code == client.CodeNotFound {
				// The conversation is gone at its authoritative region:
				// every acknowledged message in it counts as lost.
				sample(fmt.Sprintf("conversation %s missing at its primary %s", conv, doc.Primary.Region))
				break
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", conv, err)
			}
			seen[m.ID] = m.Text
		}
		for id, st := range led.msgs[conv] {
			text, ok := seen[id]
			switch {
			case !ok && (st.deleted || st.maybeDeleted):
			case ok && !st.deleted && text == st.text:
			case ok && slices.Contains(st.maybe, text):
				inv.Uncertain++
			case st.deleted && ok:
				inv.Resurrected++
				sample(fmt.Sprintf("resurrected %s/%s: %q", conv, id, text))
			default:
				inv.LostWrites++
				sample(fmt.Sprintf("lost %s/%s: want %q, present=%v text %q", conv, id, st.text, ok, text))
			}
		}

		// No user write accepted at the old location after the last swap
		// (imports keep their source timestamps, so only a user write could
		// carry a later one).
		if doc.Secondary == nil || lastSwap.IsZero() {
			continue
		}
		reg := regions[doc.Secondary.Region]
		if reg == nil {
			continue
		}
		for _, p := range reg.ParticipantsFor(chat.KindConversation) {
			sp, ok := p.(interface{ Store() *store.Store })
			if !ok {
				continue
			}
			recs, _, _, err := sp.Store().Changes(res.String(), 0, 0, 100_000)
			if err != nil {
				return err
			}
			for _, rec := range recs {
				if rec.UpdatedAt > lastSwap.UnixNano() || rec.DeletedAt > lastSwap.UnixNano() {
					inv.DualAuthorityWrites++
					sample(fmt.Sprintf("write at the old location %s of %s after the swap: %s", doc.Secondary.Region, conv, rec.ID))
				}
			}
		}
	}
	return nil
}

// reasonClass shortens an end reason to a class for the report: the status
// and the reason up to its first colon (ids and tokens follow it).
func reasonClass(status events.Status, reason string) string {
	if i := strings.IndexAny(reason, ":("); i > 0 {
		reason = reason[:i]
	}
	if len(reason) > 60 {
		reason = reason[:60]
	}
	return fmt.Sprintf("%s: %s", status, strings.TrimSpace(reason))
}

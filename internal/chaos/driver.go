package chaos

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/orchestrator"
)

// migrate is the migration driver: it keeps migrations running until ctx
// ends — single starts, small tenant moves, and now and then a new
// conversation.
func (r *run) migrate(ctx context.Context) {
	rng := rand.New(rand.NewPCG(r.o.Seed, 11))
	regions := r.sys.Config.Regions
	tick := 0
	var (
		creating atomic.Bool
		bg       sync.WaitGroup
		starting = newLimiter(16)
	)
	defer bg.Wait()
	defer starting.Wait()
	nextConv := r.convs.Len() // the next conversation's number
	var stats struct {
		ticks, noIdle, getErr, locked, startErr atomic.Int64
		reapNs, startNs                         atomic.Int64
	}
	defer func() {
		r.logf("driver: %d ticks, %d with no idle conversation, candidate reads failed %d, locked %d, starts failed %d; reap %.1f s, starts %.1f s",
			stats.ticks.Load(), stats.noIdle.Load(), stats.getErr.Load(), stats.locked.Load(), stats.startErr.Load(),
			time.Duration(stats.reapNs.Load()).Seconds(), time.Duration(stats.startNs.Load()).Seconds())
	}()
	// Finished migrations are reaped in a loop of their own: under a leader
	// kill a state read waits out its timeout, and the ticks that start
	// migrations must not wait for it (a driver that reaped in its tick
	// spent half of a run reaping and started ~75 migrations a minute).
	bg.Go(func() {
		for ctx.Err() == nil {
			t0 := time.Now()
			left := r.reap(ctx)
			stats.reapNs.Add(int64(time.Since(t0)))
			if d := time.Since(t0); d > time.Second {
				r.logf("slow reap: %d in flight checked in %s", left, d.Round(time.Millisecond))
			}
			sleep(ctx, 100*time.Millisecond)
		}
	})
	for ctx.Err() == nil {
		tick++
		stats.ticks.Add(1)
		t0 := time.Now()
		// Now and then a new conversation, and always when few are idle (so
		// the number of conversations, not the engine, never limits the
		// migrations started).
		// In the background, one at a time: creating one posts its seed
		// messages through the API, which under faults can take a minute.
		if (rng.IntN(4) == 0 || len(r.idleConvs()) < 6) && creating.CompareAndSwap(false, true) {
			i := nextConv
			nextConv++
			bg.Go(func() {
				defer creating.Store(false)
				if err := r.newConv(ctx, i); err != nil {
					r.logf("new conversation: %v", err)
				}
			})
		}
		idle := r.idleConvs()
		if len(idle) == 0 {
			stats.noIdle.Add(1)
		}
		t1 := time.Now()
		rng.Shuffle(len(idle), func(i, j int) { idle[i], idle[j] = idle[j], idle[i] })
		// Starts run in the background (at most 16 at once): under a
		// partition a routing read or a start can wait out its timeouts,
		// and the driver must keep starting migrations meanwhile (a
		// driver that waited started 364 in 10 minutes, the engine idle).
		// The conversations are reserved first so no tick picks them twice.
		if tick%8 == 0 && len(idle) >= 3 {
			// A tenant move: up to 4 idle conversations not at the target.
			target := regions[rng.IntN(len(regions))]
			cands := r.reserve(idle[:min(len(idle), 8)])
			tenant := fmt.Sprintf("t%d", tick)
			if !starting.TryGo(func() {
				var res []string
				for _, c := range cands {
					if len(res) < 4 {
						if doc, err := r.sys.Locker.Get(ctx, chatResource(c)); err == nil && doc.Primary.Region != target && doc.Primary.Lock.IsZero() {
							res = append(res, c)
							continue
						}
					}
					r.unreserve(c)
				}
				if len(res) == 0 {
					return
				}
				rs := make([]string, len(res))
				for i, c := range res {
					rs[i] = "conv/" + c
				}
				tid, err := r.sys.Orch.StartTenant(ctx, events.StartTenant{Tenant: tenant, Target: target, Resources: rs, Concurrency: 2})
				if err != nil {
					stats.startErr.Add(1)
					r.unreserve(res...)
					return
				}
				r.track(tid, true, res...)
			}) {
				r.unreserve(cands...)
			}
		} else {
			for _, c := range r.reserve(idle[:min(len(idle), 1+rng.IntN(3))]) {
				if !starting.TryGo(func() {
					doc, err := r.sys.Locker.Get(ctx, chatResource(c))
					switch {
					case err != nil:
						stats.getErr.Add(1)
						r.unreserve(c)
						return
					case !doc.Primary.Lock.IsZero():
						stats.locked.Add(1)
						r.unreserve(c)
						return
					}
					id, err := r.sys.Orch.Start(ctx, events.Start{Resource: "conv/" + c, Target: r.other(doc.Primary.Region)})
					if err != nil {
						stats.startErr.Add(1)
						r.unreserve(c)
						return
					}
					r.track(id, false, c)
				}) {
					r.unreserve(c)
				}
			}
		}
		stats.startNs.Add(int64(time.Since(t1)))
		if d := time.Since(t0); d > 2*time.Second {
			r.logf("slow tick: %s", d.Round(time.Millisecond))
		}
		sleep(ctx, time.Duration(200+rng.IntN(400))*time.Millisecond)
	}
}

func chatResource(conv string) kvrouting.Resource {
	return kvrouting.Resource{Kind: chat.KindConversation, ID: conv}
}

// other is a region other than region.
func (r *run) other(region string) string {
	for _, x := range r.sys.Config.Regions {
		if x != region {
			return x
		}
	}
	return region
}

func (r *run) idleConvs() []string {
	convs := r.convs.All()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range convs {
		if _, ok := r.mu.busy[c]; !ok {
			out = append(out, c)
		}
	}
	return out
}

// reserve marks the idle ones of convs busy (no migration id yet) and
// returns them, so that a start running in the background is not raced by
// the next tick.
func (r *run) reserve(convs []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range convs {
		if _, busy := r.mu.busy[c]; !busy {
			r.mu.busy[c] = ""
			out = append(out, c)
		}
	}
	return out
}

// unreserve frees conversations reserved for a start that did not happen.
func (r *run) unreserve(convs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range convs {
		if r.mu.busy[c] == "" {
			delete(r.mu.busy, c)
		}
	}
}

// limiter runs at most n functions at once in the background.
type limiter struct {
	sem chan struct{}
	wg  sync.WaitGroup
}

func newLimiter(n int) *limiter { return &limiter{sem: make(chan struct{}, n)} }

// TryGo runs f in the background unless n are running; it reports whether
// it did.
func (l *limiter) TryGo(f func()) bool {
	select {
	case l.sem <- struct{}{}:
	default:
		return false
	}
	l.wg.Go(func() {
		defer func() { <-l.sem }()
		f()
	})
	return true
}

// Wait waits for every function started.
func (l *limiter) Wait() { l.wg.Wait() }

// track records a started migration (or tenant move) over convs.
func (r *run) track(id string, tenant bool, convs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range convs {
		r.mu.busy[c] = id
	}
	r.mu.inflight[id] = append(r.mu.inflight[id], convs...)
	if tenant {
		r.mu.tenants = append(r.mu.tenants, id)
		r.rep.Migrations.Tenants++
	} else {
		r.mu.all = append(r.mu.all, id)
		r.rep.Migrations.Started++
	}
}

// reap frees the conversations of finished migrations; it reports how many
// are still in flight.
func (r *run) reap(ctx context.Context) int {
	r.mu.Lock()
	ids := make([]string, 0, len(r.mu.inflight))
	for id := range r.mu.inflight {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	// All at once: during a leader kill each read may wait out its timeout,
	// and one tick must not wait for the sum of them.
	states := make([]*events.State, len(ids))
	children := make([][]string, len(ids))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, id := range ids {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			st, _, err := r.sys.Orch.State(sctx, id)
			if err != nil {
				return
			}
			if st.Fanout != nil && st.Status.Terminal() {
				// A tenant's children: the fan-out's state forgets their
				// ids once they finish, its events keep them.
				ids, err := tenantChildren(sctx, r.sys.Orch, id)
				if err != nil {
					return // not reaped: read again next tick
				}
				children[i] = ids
			}
			states[i] = st
		})
	}
	wg.Wait()
	r.startAfterSwap(ctx, ids, states)
	left := 0
	for i, id := range ids {
		st := states[i]
		if st == nil || !st.Status.Terminal() {
			left++
			continue
		}
		r.mu.Lock()
		for _, c := range r.mu.inflight[id] {
			if r.mu.busy[c] == id {
				delete(r.mu.busy, c)
			}
		}
		delete(r.mu.inflight, id)
		if slices.Contains(r.mu.tenants, id) {
			for _, ch := range children[i] {
				if !slices.Contains(r.mu.all, ch) {
					r.mu.all = append(r.mu.all, ch)
					r.rep.Migrations.Started++
				}
			}
		}
		r.mu.Unlock()
	}
	return left
}

// drain waits until every tracked migration is terminal (at most
// drainLimit).
func (r *run) drain(ctx context.Context) error {
	deadline := time.Now().Add(drainLimit)
	for {
		left := r.reap(ctx)
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d migrations still running after %s", left, drainLimit)
		}
		r.logf("draining: %d in flight", left)
		sleep(ctx, 500*time.Millisecond)
	}
}

// tenantChildren are the migration ids a tenant fan-out started, from its
// TenantProgress events.
func tenantChildren(ctx context.Context, orch *orchestrator.Client, tid string) ([]string, error) {
	hs, err := orch.History(ctx, tid)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range hs {
		if b, ok := events.BodyAs[events.TenantProgress](e); ok && b.StartedID != "" {
			out = append(out, b.StartedID)
		}
	}
	return out, nil
}

// startAfterSwap starts, for one in four single migrations seen swapped but
// not yet terminal, the next migration of its resource at once (back to
// where it came from): the new pre-lock then races the previous
// migration's post-swap steps (its Swapped event, post-swap fence, clear of
// the fence before it, cleanup schedule), which a driver that waits for
// Completed never exercises. Which ones is decided by the
// migration id, so a seed picks the same ones.
func (r *run) startAfterSwap(ctx context.Context, ids []string, states []*events.State) {
	for i, id := range ids {
		st := states[i]
		if st == nil || st.SwappedAt.IsZero() || st.Status.Terminal() || st.Fanout != nil || fnv32(id)%4 != 0 {
			continue
		}
		r.mu.Lock()
		convs := r.mu.inflight[id]
		done := r.mu.afterSwap[id]
		if r.mu.afterSwap == nil {
			r.mu.afterSwap = map[string]bool{}
		}
		r.mu.afterSwap[id] = true
		r.mu.Unlock()
		if done || len(convs) != 1 {
			continue
		}
		c := convs[0]
		next, err := r.sys.Orch.Start(ctx, events.Start{Resource: "conv/" + c, Target: st.Source})
		if err != nil {
			continue
		}
		r.track(next, false, c)
		r.mu.Lock()
		r.rep.Migrations.PostSwapStarts++
		r.mu.Unlock()
	}
}

func fnv32(s string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return h.Sum32()
}

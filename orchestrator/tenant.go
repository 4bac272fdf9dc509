package orchestrator

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/cutover/cutover/events"
)

// startTenant creates a tenant fan-out aggregate and its work message.
func (w *Worker) startTenant(ctx context.Context, env *events.Envelope, b events.StartTenant) error {
	id := b.MigrationID
	if id == "" {
		id = DeriveID("tenant", env.ID)
	}
	if !events.ValidID(id) || b.Tenant == "" || b.Target == "" {
		return fmt.Errorf("%w: tenant %q, target %q, id %q", ErrInvalid, b.Tenant, b.Target, id)
	}
	conc := b.Concurrency
	if conc <= 0 {
		conc = w.cfg.TenantConcurrency
	}
	return w.create(ctx, id, env.ID, events.TenantStarted{Tenant: b.Tenant, Target: b.Target, Resources: b.Resources, Concurrency: conc,
		MaxWriteBlock: max(b.MaxWriteBlock, 0), Rate: max(b.Rate, 0), MaxWriteLockP99: max(b.MaxWriteLockP99, 0),
		MaxSourceLatency: max(b.MaxSourceLatency, 0)})
}

// partition is the rate-limit partition of a resource.
func (w *Worker) partition(resource string) int {
	h := fnv.New32a()
	h.Write([]byte(resource))
	return int(h.Sum32() % uint32(w.cfg.Partitions))
}

// tenantStep advances a tenant fan-out: it reads every active child's
// state at once, records each child that ended, brakes when their
// write-blocked times say so, brings the running children in line with
// its pause and rate, starts children while fewer than Concurrency run
// (the semaphore lives in the state), it is not paused and their
// partition is not rate-limited, and completes when all have ended. All
// of it is one step: one event per fact (TenantProgress per child ended
// or started, Throttled per brake), appended one after another
// (outcome.then), so a tenant move costs its children's reads once per
// step, not once per child.
func (w *Worker) tenantStep(ctx context.Context, st *events.State, now time.Time) outcome {
	if st.Status.Terminal() {
		return outcome{ack: true}
	}
	var evs []events.Body
	cur := st
	record := func(b events.Body) bool { // folds b into cur, as the append will
		next, err := Apply(cur, &events.Envelope{ID: "next", MigrationID: st.ID, Time: now, Body: b})
		if err != nil {
			return false
		}
		evs, cur = append(evs, b), next
		return true
	}
	children := w.childStates(ctx, st.Fanout.Active)
	for i, c := range st.Fanout.Active {
		if cs := children[i]; cs != nil && cs.Status.Terminal() {
			record(events.TenantProgress{Finished: c.Resource, Outcome: cs.Status, BlockedMs: cs.WriteBlocked.Milliseconds()})
		}
	}
	if b := brake(cur.Fanout, children, now); b != nil {
		record(*b)
	}
	w.steerChildren(ctx, cur, children)
	var wait time.Duration
	for {
		f := cur.Fanout
		if cur.Paused || len(f.Active) >= f.Concurrency || f.Next >= len(f.Resources) {
			break
		}
		res := f.Resources[f.Next]
		p := w.partition(res)
		if iv := w.cfg.PartitionInterval; iv > 0 && p < len(f.LastStart) && !f.LastStart[p].IsZero() {
			if next := f.LastStart[p].Add(iv); now.Before(next) {
				wait = min(next.Sub(now), w.cfg.TenantPoll)
				break
			}
		}
		cmd := events.Start{Resource: res, Target: f.Target, Parent: st.ID, Tenant: f.Tenant, MaxWriteBlock: f.MaxWriteBlock, Rate: f.ChildRate()}
		cmd.MigrationID = startID("", cmd)
		if err := sendCommand(ctx, w.js, DeriveID("tenant-cmd", st.ID, res), st.ID, cmd); err != nil {
			wait = w.cfg.RetryBackoff
			break
		}
		if !record(events.TenantProgress{Started: res, StartedID: cmd.MigrationID, Partition: p}) {
			break
		}
	}
	if f := cur.Fanout; f.Next >= len(f.Resources) && len(f.Active) == 0 {
		record(events.Completed{Figures: events.Figures{TotalMs: now.Sub(st.RequestedAt).Milliseconds(), Attempts: 1}})
	}
	if len(evs) == 0 {
		return waitFor(cmp.Or(wait, w.cfg.TenantPoll))
	}
	return outcome{body: evs[0], then: evs[1:]}
}

// childStates reads the active children's states, tenantReads at a time,
// in the order given. A child whose state cannot be read now (its start
// command not processed yet, the stream unavailable) is nil: it counts as
// running.
func (w *Worker) childStates(ctx context.Context, active []events.TenantChild) []*events.State {
	out := make([]*events.State, len(active))
	sem := make(chan struct{}, tenantReads)
	var wg sync.WaitGroup
	for i, c := range active {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if cs, _, err := Load(ctx, w.nc, c.MigrationID); err == nil {
				out[i] = cs
			}
		})
	}
	wg.Wait()
	return out
}

// tenantReads bounds a tenant step's concurrent reads of its children.
const tenantReads = 16

package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
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
	return w.create(ctx, id, env.ID, events.TenantStarted{Tenant: b.Tenant, Target: b.Target, Resources: b.Resources, Concurrency: conc})
}

// partition is the rate-limit partition of a resource.
func (w *Worker) partition(resource string) int {
	h := fnv.New32a()
	h.Write([]byte(resource))
	return int(h.Sum32() % uint32(w.cfg.Partitions))
}

// tenantStep advances a tenant fan-out: record children that ended, start
// more while fewer than Concurrency run (the semaphore lives in the state)
// and the resource's partition is not rate-limited, complete when all have
// ended.
func (w *Worker) tenantStep(ctx context.Context, st *events.State, now time.Time) outcome {
	f := st.Fanout
	if st.Status.Terminal() {
		return outcome{ack: true}
	}
	for _, c := range f.Active {
		cs, _, err := Load(ctx, w.nc, c.MigrationID)
		if errors.Is(err, ErrNotFound) {
			continue // its start command is not processed yet
		}
		if err != nil {
			return waitFor(w.cfg.RetryBackoff)
		}
		if cs.Status.Terminal() {
			return outcome{body: events.TenantProgress{Finished: c.Resource, Outcome: cs.Status}}
		}
	}
	if len(f.Active) < f.Concurrency && f.Next < len(f.Resources) {
		res := f.Resources[f.Next]
		p := w.partition(res)
		if iv := w.cfg.PartitionInterval; iv > 0 && p < len(f.LastStart) && !f.LastStart[p].IsZero() {
			if next := f.LastStart[p].Add(iv); now.Before(next) {
				return waitFor(min(next.Sub(now), w.cfg.TenantPoll))
			}
		}
		cmd := events.Start{Resource: res, Target: f.Target, Parent: st.ID, Tenant: f.Tenant}
		cmd.MigrationID = startID("", cmd)
		if err := sendCommand(ctx, w.js, DeriveID("tenant-cmd", st.ID, res), st.ID, cmd); err != nil {
			return waitFor(w.cfg.RetryBackoff)
		}
		return outcome{body: events.TenantProgress{Started: res, StartedID: cmd.MigrationID, Partition: p}}
	}
	if f.Next >= len(f.Resources) && len(f.Active) == 0 {
		return outcome{body: events.Completed{Figures: events.Figures{TotalMs: now.Sub(st.RequestedAt).Milliseconds(), Attempts: 1}}}
	}
	return waitFor(w.cfg.TenantPoll)
}

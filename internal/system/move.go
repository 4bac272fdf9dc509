package system

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/projector"
)

// TenantProgress is a tenant move's progress, as the projector sees it.
type TenantProgress = projector.TenantView

// MoveTenant moves resources to target as one tenant migration with at
// most concurrency in flight, waits until it is terminal (at most limit;
// 0 = 15 minutes) and returns its id and wall time. progress, when not
// nil, is called whenever the count of finished children changes (it
// needs the projector). Errors: the start's, ctx's, or the limit's.
func (s *System) MoveTenant(ctx context.Context, tenant, target string, resources []string, concurrency int, limit time.Duration,
	progress func(TenantProgress, time.Duration)) (string, time.Duration, error) {
	if limit <= 0 {
		limit = 15 * time.Minute
	}
	start := time.Now()
	tid, err := s.Orch.StartTenant(ctx, events.StartTenant{Tenant: tenant, Target: target, Resources: resources, Concurrency: concurrency})
	if err != nil {
		return "", 0, err
	}
	last := -1
	for {
		st, _, err := s.Orch.State(ctx, tid)
		if err == nil && st.Status.Terminal() {
			return tid, time.Since(start), nil
		}
		if s.Projector != nil && progress != nil {
			if tv, ok := s.Projector.Tenant(tid); ok && tv.Completed+tv.Failed+tv.Dropped != last {
				last = tv.Completed + tv.Failed + tv.Dropped
				progress(tv, time.Since(start))
			}
		}
		if time.Since(start) > limit {
			return tid, time.Since(start), fmt.Errorf("tenant move %s did not finish in %s", tid, limit)
		}
		select {
		case <-ctx.Done():
			return tid, time.Since(start), ctx.Err()
		case <-s.Done():
			return tid, time.Since(start), errors.New("system stopped during the tenant move")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Children are the final states of a finished tenant move's children, from
// the projector.
func (s *System) Children(ctx context.Context, tid string) ([]*events.State, error) {
	var out []*events.State
	for _, v := range s.Projector.Snapshot().Migrations {
		if v.Parent != tid || v.Phase == events.PhaseTenant {
			continue
		}
		st, _, err := s.Orch.State(ctx, v.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/internal/workload"
)

// env is one in-process deployment for a suite (internal/system) with the
// moves and the user view the suites measure.
type env struct{ *system.System }

// startEnv boots cfg with what every suite shares: the durable default
// unless cfg says otherwise (one JetStream node with sync always, Pebble
// fsync per commit: DurableSingle), no migration-events metrics feed (it
// would compete with what is measured), and a ten-minute cleanup window
// (unless set) so no source cleanup runs during a measurement.
func startEnv(ctx context.Context, cfg system.Config) (*env, error) {
	cfg.NoEventMetrics = true
	if cfg.Orchestrator.CleanupWindow == 0 {
		cfg.Orchestrator.CleanupWindow = 10 * time.Minute
	}
	sys, err := system.Start(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &env{sys}, nil
}

// seed creates convs, each with users as members, and posts their messages
// through the SDK (workload.Seeder).
func (e *env) seed(ctx context.Context, convs []workload.Conv, users []string, progress func(string)) error {
	c, err := client.New(e.APIURL, "user:seed", client.WithWorkers(32))
	if err != nil {
		return err
	}
	defer c.Close()
	return workload.Seeder{Client: c, Users: users}.All(ctx, convs, func(posted, _ int) {
		say(progress, "seeded %d messages", posted)
	})
}

// traffic starts live user traffic on convs with the one documented mix
// (workload.DefaultMix) and think time.
func (e *env) traffic(ctx context.Context, convs []workload.Conv, users []string, seed uint64) (*workload.Traffic, error) {
	return workload.StartTraffic(ctx, workload.TrafficConfig{APIs: []string{e.APIURL}, Users: users,
		Convs: workload.NewConvSet(workload.IDs(convs)...), Mix: workload.DefaultMix, Seed: seed})
}

// clientFence is what the users felt: 423s and the delay they added.
type clientFence struct {
	Writes      int64 `json:"writes_attempted"`
	Rejected423 int64 `json:"rejected_423"`
	Fenced      int64 `json:"fenced_ops"`
	Unrecovered int64 `json:"unrecovered"`
	OtherFailed int64 `json:"failed_other"`
	// FailedBy breaks failed_other down by operation and answer ("edit
	// 404 not_found", ...).
	FailedBy   map[string]int64 `json:"failed_by,omitempty"`
	AvgDelayMs float64          `json:"avg_fence_delay_ms"`
	MaxDelayMs float64          `json:"max_fence_delay_ms"`
}

// fenceOf is the users' view of the fences from the traffic's stats.
func fenceOf(s workload.Stats) clientFence {
	return clientFence{Writes: s.Attempted, Rejected423: s.Rejected423, Fenced: s.Fenced, Unrecovered: s.Unrecovered,
		OtherFailed: s.FailedOther, FailedBy: s.FailedBy, AvgDelayMs: s.AvgFenceMs(), MaxDelayMs: s.MaxFenceMs()}
}

// migrated is one finished migration of a conversation.
type migrated struct {
	conv  workload.Conv
	state *events.State
}

// moveAll migrates every conversation to the target as one tenant move
// (System.MoveTenant) and returns the children's final states and the
// move's wall time.
func (e *env) moveAll(ctx context.Context, tenant string, convs []workload.Conv, concurrency int, progress func(string)) ([]migrated, time.Duration, error) {
	resources := make([]string, len(convs))
	byRes := map[string]workload.Conv{}
	for i, c := range convs {
		resources[i] = "conv/" + c.ID
		byRes[resources[i]] = c
	}
	tid, wall, err := e.MoveTenant(ctx, tenant, e.Target, resources, concurrency, 0, func(tv system.TenantProgress, d time.Duration) {
		say(progress, "migrated %d/%d (active %d, failed %d) %.1f s", tv.Completed, tv.Total, tv.Active, tv.Failed, d.Seconds())
	})
	if err != nil {
		return nil, 0, err
	}
	// The move is terminal in its state; the projector, which lists the
	// children, may be a few events behind: once it has the move's last
	// event it has its children's (they come first on the events stream).
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if tv, ok := e.Projector.Tenant(tid); ok && tv.Status.Terminal() {
			break
		}
	}
	states, err := e.Children(ctx, tid)
	if err != nil {
		return nil, 0, err
	}
	out := make([]migrated, 0, len(states))
	for _, st := range states {
		out = append(out, migrated{conv: byRes[st.Resource], state: st})
	}
	return out, wall, nil
}

// moveDirect starts one migration per conversation at once (no tenant
// fan-out: the workers' Parallel limit is the only throttle) and returns
// their final states and the wall time until the last one ended.
func (e *env) moveDirect(ctx context.Context, convs []workload.Conv, progress func(string)) ([]migrated, time.Duration, error) {
	start := time.Now()
	ids := map[string]workload.Conv{}
	for _, c := range convs {
		id, err := e.Orch.Start(ctx, events.Start{Resource: "conv/" + c.ID, Target: e.Target})
		if err != nil {
			return nil, 0, err
		}
		ids[id] = c
	}
	last := -1
	for {
		ended := 0
		for _, v := range e.Projector.Snapshot().Migrations {
			if _, ok := ids[v.ID]; ok && v.Status.Terminal() {
				ended++
			}
		}
		if ended == len(ids) {
			break
		}
		if ended/50 != last {
			last = ended / 50
			say(progress, "migrated %d/%d %.1f s", ended, len(ids), time.Since(start).Seconds())
		}
		if time.Since(start) > 15*time.Minute {
			return nil, 0, errors.New("migrations did not finish in 15 minutes")
		}
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-e.Done():
			return nil, 0, errors.New("system stopped during the migrations")
		case <-time.After(20 * time.Millisecond):
		}
	}
	wall := time.Since(start)
	out := make([]migrated, 0, len(ids))
	for id, c := range ids {
		st, _, err := e.Orch.State(ctx, id)
		if err != nil {
			return nil, 0, fmt.Errorf("state of %s: %w", id, err)
		}
		out = append(out, migrated{conv: c, state: st})
	}
	return out, wall, nil
}

// streamMsgs returns each stream's last sequence: the appends it has taken
// (absent for a stream it cannot read).
func (e *env) streamMsgs(ctx context.Context, names ...string) map[string]uint64 {
	out := map[string]uint64{}
	for _, n := range names {
		s, err := e.JS.Stream(ctx, n)
		if err != nil {
			continue
		}
		if info, err := s.Info(ctx); err == nil {
			out[n] = info.State.LastSeq // appends, whatever the retention removed since
		}
	}
	return out
}

func msBetween(a, b time.Time) float64 {
	if a.IsZero() || b.IsZero() {
		return 0
	}
	return float64(b.Sub(a).Microseconds()) / 1000
}

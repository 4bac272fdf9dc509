package chaos

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/internal/check"
)

// verify runs the shared checker over every conversation and every
// migration started (tenant children included) and fills the report's
// migration outcomes, observed revisions and invariants. Chaos has no
// checks of its own: a run that moves conversations back and forth has no
// target region, so only the target checks are off. Errors: check.Run's.
func (r *run) verify(ctx context.Context, reader *client.Client) error {
	r.mu.Lock()
	all := slices.Clone(r.mu.all)
	paused := maps.Clone(r.mu.paused)
	r.mu.Unlock()
	convs := r.convs.All()
	lc := r.sys.Locker.Config()
	res, err := check.Run(ctx, check.Config{Ledger: r.led, Convs: convs, Reader: reader, Routing: r.sys.Locker.Get,
		Observer: r.obs, ClockSkew: lc.ClockSkew, WriteLease: lc.WriteLease, Paused: paused,
		Stamps: check.RegionStamps(r.sys.Regions), Migrations: all, Orch: r.sys.Orch,
		Authorities: check.RegionAuthorities(r.sys.Regions), Regions: r.sys.Config.Regions,
		CleanupWindow: r.sys.Config.Orchestrator.CleanupWindow, CleanupSlack: 30 * time.Second})
	if err != nil {
		return err
	}
	rep := r.rep
	rep.Writes.Conversation = len(convs)
	m := &rep.Migrations
	m.Completed, m.RolledBack, m.Unfinished = res.Migrations.Completed, res.Migrations.RolledBack, res.Migrations.Unfinished
	m.Reasons, m.StepErrors = res.Migrations.Reasons, res.Migrations.StepErrors
	rep.Observed.Revisions = res.Revisions
	if r.slow != nil {
		rep.Nemesis.SlowFsyncs = r.slow.slows.Load()
	}
	rep.Invariants = res.Invariants
	return nil
}

package ops

// Golden tests of the views that read the event log (migrate status, its
// list, history), against an embedded server whose MIGRATION_EVENTS holds
// fixed events: same events, same sequences, same output.

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cutover/cutover/eventlog"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/cutover/cutover/orchestrator"
)

func TestEventLogViews(t *testing.T) {
	s := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, s.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := orchestrator.Provision(ctx, js, orchestrator.StreamConfig{Memory: true}); err != nil {
		t.Fatal(err)
	}
	log := eventlog.New(nc, js)
	appendAll := func(id string, evs []*events.Envelope) {
		t.Helper()
		var seq uint64
		for i, e := range evs {
			e.ID, e.MigrationID = fmt.Sprintf("%s-e%02d", id, i), id
			if e.State != nil {
				e.State.ID, e.State.Events = id, i+1
				if e.State.RequestedAt.IsZero() {
					e.State.RequestedAt = evs[0].Time
				}
			}
			var err error
			if seq, err = log.Append(ctx, e, seq); err != nil {
				t.Fatalf("append %s #%d: %v", id, i, err)
			}
		}
	}
	// m-tl: the timeline's migration events (the audits without a state
	// dropped); the tenant's fan-out; an admin audit, never listed.
	var tl []*events.Envelope
	for _, e := range timeline()[:20] {
		if e.State != nil {
			tl = append(tl, e)
		}
	}
	appendAll("m-tl", tl)
	appendAll("t-acme", tenantEvents())
	other := states()[2] // rolled back, retrying
	appendAll("m-rolled", []*events.Envelope{{Type: events.TypeRolledBack, Time: at(30 * time.Minute),
		Body: events.RolledBack{Reason: other.Reason, Phase: events.PhaseHistorical}, State: other}})
	appendAll("a-audit", []*events.Envelope{{Type: events.TypeForceReleased, Time: at(40 * time.Minute),
		Body: events.ForceReleased{Resource: "conv/lunch", Approvers: []string{"alice", "bob"}, Reason: "stuck"}, State: &events.State{Phase: events.PhaseDone, Status: events.StatusCompleted}}})

	url := s.ClientURL()
	var out bytes.Buffer
	run := func(title string, f func() error) {
		t.Helper()
		fmt.Fprintf(&out, "$ %s\n", title)
		if err := f(); err != nil {
			fmt.Fprintf(&out, "error: %v\n", err)
		}
	}
	run("migrate status --list", func() error { return Status(ctx, StatusRequest{NATS: url, List: true}, &out) })
	run("migrate status --list --active --limit 1", func() error {
		return Status(ctx, StatusRequest{NATS: url, List: true, Active: true, Limit: 1}, &out)
	})
	run("migrate status --list --json", func() error { return Status(ctx, StatusRequest{NATS: url, List: true, JSON: true}, &out) })
	run("migrate status m-tl", func() error { return Status(ctx, StatusRequest{NATS: url, ID: "m-tl"}, &out) })
	run("migrate status m-tl --json", func() error { return Status(ctx, StatusRequest{NATS: url, ID: "m-tl", JSON: true}, &out) })
	run("migrate status t-acme", func() error { return Status(ctx, StatusRequest{NATS: url, ID: "t-acme"}, &out) })
	run("history m-tl", func() error { return History(ctx, HistoryRequest{NATS: url, Of: "m-tl"}, &out) })
	run("history t-acme --json", func() error { return History(ctx, HistoryRequest{NATS: url, Of: "t-acme", JSON: true}, &out) })
	run("history a-audit", func() error { return History(ctx, HistoryRequest{NATS: url, Of: "a-audit"}, &out) })
	run("history m-none", func() error { return History(ctx, HistoryRequest{NATS: url, Of: "m-none"}, &out) })
	golden(t, "eventlog_views.golden", out.Bytes())
}

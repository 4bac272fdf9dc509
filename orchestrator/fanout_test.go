package orchestrator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
)

// A dependent resource discovered in an export page (a message's media)
// migrates as a child migration (paper 001 Algorithm 1 line 9).
func TestChildMigration(t *testing.T) {
	e := mustEnv(t)
	e.seed("conv/parent", 10, "media/m1")
	e.seed("media/m1", 3)
	e.startWorker(e.config())
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/parent", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	st := e.waitDone(id, 30*time.Second)
	if st.Status != events.StatusCompleted || len(st.Children) != 1 || st.Children[0] != "media/m1" {
		t.Fatalf("parent %s children %v (%s)", st.Status, st.Children, st.Reason)
	}
	h := e.history(id)
	var child string
	for _, ev := range h {
		if b, ok := ev.Body.(events.ChildStarted); ok {
			child = b.MigrationID
		}
	}
	if countType(h, events.TypeChildStarted) != 1 || child == "" {
		t.Fatal("want one ChildStarted")
	}
	cs := e.waitDone(child, 30*time.Second)
	if cs.Status != events.StatusCompleted || cs.Parent != id || cs.Resource != "media/m1" {
		t.Fatalf("child %+v", cs)
	}
	e.assertMigrated("conv/parent")
	e.assertMigrated("media/m1")
}

// A tenant fan-out starts one migration per resource, at most Concurrency
// at a time, rate-limited per partition, and reports progress.
func TestTenantFanout(t *testing.T) {
	const n = 200
	e := mustEnv(t)
	var resources []string
	for i := range n {
		r := fmt.Sprintf("conv/t%03d", i)
		e.seed(r, 3)
		resources = append(resources, r)
	}
	cfg := e.config()
	cfg.Partitions, cfg.PartitionInterval = 8, 10*time.Millisecond
	e.startWorker(cfg)
	e.startWorker(cfg)
	id, err := e.client.StartTenant(context.Background(), events.StartTenant{Tenant: "acme", Target: "eu", Resources: resources, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	// The concurrency limit holds at every step of the fan-out.
	deadline := time.Now().Add(80 * time.Second)
	var st *events.State
	for {
		var err error
		st, _, err = Load(context.Background(), e.nc, id)
		if err == nil {
			if len(st.Fanout.Active) > 8 {
				t.Fatalf("%d active > concurrency 8", len(st.Fanout.Active))
			}
			if st.Status.Terminal() {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("tenant not done: %+v", st.Fanout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Status != events.StatusCompleted || st.Fanout.Completed != n || st.Fanout.Next != n {
		t.Fatalf("tenant %s %+v", st.Status, st.Fanout)
	}
	h := e.history(id)
	if countType(h, events.TypeTenantProgress) != 2*n {
		t.Fatalf("%d TenantProgress events", countType(h, events.TypeTenantProgress))
	}
	maxActive := 0
	for _, ev := range h {
		maxActive = max(maxActive, len(ev.State.Fanout.Active))
	}
	if maxActive > 8 {
		t.Fatalf("max active %d", maxActive)
	}
	for _, r := range resources {
		e.assertMigrated(r)
	}
	assertFold(t, h)
}

// One tenant step reads its active children once and records every child
// that ended and every child it can start, one event each, in one outcome;
// the step that finds the last child ended completes the move.
func TestTenantStepBatches(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	w, err := NewWorker(e.nc, e.js, e.config()) // not run: its steps are called directly
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	// Three children that ended, one still running.
	ended := map[string]events.Status{"conv/a": events.StatusFailed, "conv/b": events.StatusFailed, "conv/c": events.StatusDropped, "conv/d": events.StatusActive}
	var active []events.TenantChild
	for _, res := range []string{"conv/a", "conv/b", "conv/c", "conv/d"} {
		id := DeriveID("test-child", res)
		env, seq, err := appendTo(ctx, e.js, id, nil, 0, events.Requested{Resource: res, Target: "eu", Attempt: 1, MaxAttempts: 3, Token: "t"}, "", now, id+"-1")
		if err != nil {
			t.Fatal(err)
		}
		var end events.Body
		switch ended[res] {
		case events.StatusFailed:
			end = events.Failed{Reason: "test"}
		case events.StatusDropped:
			end = events.Dropped{Reason: "test"}
		}
		if end != nil {
			if _, _, err := appendTo(ctx, e.js, id, env.State, seq, end, "", now, id+"-2"); err != nil {
				t.Fatal(err)
			}
		}
		active = append(active, events.TenantChild{Resource: res, MigrationID: id})
	}
	resources := []string{"conv/a", "conv/b", "conv/c", "conv/d", "conv/e", "conv/f", "conv/g"}
	st := &events.State{ID: "tenant1", Phase: events.PhaseTenant, Status: events.StatusActive, RequestedAt: now, Attempt: 1,
		Fanout: &events.TenantState{Tenant: "acme", Target: "eu", Resources: resources, Concurrency: 3, Next: 4, Active: active}}
	out := w.tenantStep(ctx, st, now)
	var got []string
	for _, b := range append([]events.Body{out.body}, out.then...) {
		tp, ok := b.(events.TenantProgress)
		switch {
		case !ok:
			got = append(got, b.Type())
		case tp.Finished != "":
			got = append(got, "finished "+tp.Finished)
		default:
			got = append(got, "started "+tp.Started)
		}
	}
	// a, b, c ended; d runs; concurrency 3 leaves room for e and f.
	want := "[finished conv/a finished conv/b finished conv/c started conv/e started conv/f]"
	if fmt.Sprint(got) != want {
		t.Fatalf("one step recorded %v, want %v", got, want)
	}
	// Every child ended and none left to start: the same step completes.
	st.Fanout.Next, st.Fanout.Active = len(resources), active[:3]
	out = w.tenantStep(ctx, st, now)
	if last := append([]events.Body{out.body}, out.then...); len(last) != 4 || last[3].Type() != events.TypeCompleted {
		t.Fatalf("the last step recorded %v, want three finished children and completed", last)
	}
}

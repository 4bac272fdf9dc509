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

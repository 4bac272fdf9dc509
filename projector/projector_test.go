package projector

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/cutover/cutover/orchestrator"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// publisher appends state-carrying events the way the orchestrator does.
type publisher struct {
	t      *testing.T
	js     jetstream.JetStream
	states map[string]*events.State
	t0     time.Time
	last   uint64
}

func (p *publisher) emit(id string, body events.Body, after time.Duration) {
	p.t.Helper()
	env := &events.Envelope{ID: fmt.Sprintf("%s-%d", id, len(p.states)+int(p.last)), MigrationID: id, Time: p.t0.Add(after), Body: body}
	st, err := orchestrator.Apply(p.states[id], env)
	if err != nil {
		p.t.Fatal(err)
	}
	p.states[id] = st
	env.State = st
	env.Resource = st.Resource
	data, err := events.Encode(env)
	if err != nil {
		p.t.Fatal(err)
	}
	msg := nats.NewMsg(events.EventSubject(id))
	msg.Data = data
	ack, err := p.js.PublishMsg(context.Background(), msg)
	if err != nil {
		p.t.Fatal(err)
	}
	p.last = ack.Sequence
}

func TestProjector(t *testing.T) {
	srv := natstest.RunServer(t)
	_, js := natstest.MustConnect(t, srv.ClientURL())
	ctx := context.Background()
	if err := orchestrator.Provision(ctx, js, orchestrator.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	pub := &publisher{t: t, js: js, states: map[string]*events.State{}, t0: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}

	// Events written before the projector starts are caught up from seq 1.
	pub.emit("tenant1", events.TenantStarted{Tenant: "acme", Target: "eu", Resources: []string{"conv/a0", "conv/a1", "conv/a2"}, Concurrency: 2}, 0)
	live := New(js, nil)
	changes, unsubscribe := live.Subscribe(1000)
	defer unsubscribe()
	go func() { _ = live.Run(ctx) }()
	t.Cleanup(func() { _ = live.Close() })

	for i := range 3 {
		id := fmt.Sprintf("m%d", i)
		res := fmt.Sprintf("conv/a%d", i)
		pub.emit("tenant1", events.TenantProgress{Started: res, StartedID: id}, time.Duration(i)*time.Millisecond)
		pub.emit(id, events.Requested{Resource: res, Target: "eu", Tenant: "acme", Parent: "tenant1", Attempt: 1, MaxAttempts: 3, Token: "t"}, 0)
		if i == 2 { // the pre-lock found the resource locked
			pub.emit(id, events.Failed{Reason: "locked by another migration"}, 110*time.Millisecond)
			pub.emit("tenant1", events.TenantProgress{Finished: res, Outcome: events.StatusFailed}, time.Second)
			continue
		}
		pub.emit(id, events.PreLocked{Source: "us"}, 10*time.Millisecond)
		pub.emit(id, events.HardDeleteLocked{Services: []string{"messages"}}, 100*time.Millisecond)
		pub.emit(id, events.WriteLocked{}, 200*time.Millisecond)
		pub.emit(id, events.Swapped{CleanupAt: pub.t0.Add(time.Hour)}, 210*time.Millisecond)
		pub.emit(id, events.Completed{Figures: events.Figures{PreLockMs: int64(100 * (i + 1)), WriteLockMs: int64(10 * (i + 1)), TotalMs: int64(1000 * (i + 1)), Attempts: 1}}, time.Second)
		pub.emit("tenant1", events.TenantProgress{Finished: res, Outcome: events.StatusCompleted}, time.Second)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := live.WaitSeq(wctx, pub.last); err != nil {
		t.Fatal(err)
	}

	snap := live.Snapshot()
	if m0 := snap.Migrations["m0"]; m0.Status != events.StatusCompleted || len(m0.Timeline) != 6 || m0.Source != "us" || m0.Tenant != "acme" {
		t.Fatalf("m0 %+v", m0)
	}
	if m2 := snap.Migrations["m2"]; m2.Status != events.StatusFailed || m2.Reason != "locked by another migration" {
		t.Fatalf("m2 %+v", m2)
	}
	tv, ok := live.Tenant("tenant1")
	if !ok || tv.Total != 3 || tv.Started != 3 || tv.Completed != 2 || tv.Failed != 1 || tv.Active != 0 {
		t.Fatalf("tenant %+v", tv)
	}
	d := snap.Durations[DurTotal]
	if d.Count != 2 || d.P50 != time.Second || d.P99 != 2*time.Second || d.Max != 2*time.Second {
		t.Fatalf("total distribution %+v", d)
	}
	if w := snap.Durations[DurWriteLock]; w.Max != 20*time.Millisecond {
		t.Fatalf("write-lock distribution %+v", w)
	}

	t.Run("rebuild equals live", func(t *testing.T) {
		rebuilt, err := live.Rebuild(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(rebuilt, live.Snapshot()) {
			t.Fatalf("rebuilt != live:\n%+v\n%+v", rebuilt, live.Snapshot())
		}
	})
	t.Run("second projector catches up", func(t *testing.T) {
		p2 := New(js, nil)
		go func() { _ = p2.Run(ctx) }()
		defer p2.Close()
		if err := p2.WaitSeq(wctx, pub.last); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p2.Snapshot(), live.Snapshot()) {
			t.Fatal("second projector differs")
		}
	})
	t.Run("subscribe", func(t *testing.T) {
		seen := map[string]bool{}
		for len(changes) > 0 {
			c := <-changes
			seen[c.MigrationID+"/"+c.Type] = true
		}
		for _, want := range []string{"tenant1/tenant-started", "m0/completed", "m2/failed", "tenant1/tenant-progress"} {
			if !seen[want] {
				t.Fatalf("no change %s in %v", want, seen)
			}
		}
	})
}

func TestDistribution(t *testing.T) {
	var xs []int64
	for i := 1; i <= 100; i++ {
		xs = append(xs, int64(i))
	}
	d := distribution(xs)
	if d.Count != 100 || d.P50 != 50*time.Millisecond || d.P99 != 99*time.Millisecond || d.Max != 100*time.Millisecond {
		t.Fatalf("%+v", d)
	}
	if (distribution(nil) != Distribution{}) {
		t.Fatal("empty")
	}
}

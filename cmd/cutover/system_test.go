package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/projector"
)

// testSystem starts the whole dev system in process (embedded NATS, two
// regions, contract servers, HTTP API, workers, projector).
type testSystem struct {
	api  string
	orch *orchestrator.Client
	proj *projector.Projector
	lk   *kvrouting.Locker
	sys  *system.System
}

// testServiceSecret is the validator's secret of the tests' systems.
const testServiceSecret = "test-service-secret-0123456789"

func startSystem(t *testing.T, mods ...func(*system.Config)) *testSystem {
	t.Helper()
	cfg := system.Config{InMemory: true, ServiceSecret: testServiceSecret}
	for _, m := range mods {
		m(&cfg)
	}
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sys, err := system.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Close() })
	return &testSystem{api: sys.APIURL, orch: sys.Orch, proj: sys.Projector, lk: sys.Locker, sys: sys}
}

// TestMigrateThroughTheStack: a conversation with messages, a reaction and a
// deleted message migrates from us-east to eu-west through the NATS
// contract with validation through the HTTP API; afterwards the API serves
// it from eu-west with everything intact and the deleted message absent.
func TestMigrateThroughTheStack(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	s := startSystem(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alice, err := client.New(s.api, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	conv, err := alice.CreateConversation(ctx, client.NewConversation{ID: "e2e", Title: "t", Members: []string{"bob"}})
	if err != nil || conv.Region != "us-east" {
		t.Fatalf("create: %v %+v", err, conv)
	}
	for i := 0; i < 30; i++ {
		if _, err := alice.PostMessage(ctx, "e2e", client.NewMessage{ID: fmt.Sprintf("m%02d", i), Text: fmt.Sprintf("hello %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := alice.React(ctx, "e2e", "m01", "tada"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.DeleteMessage(ctx, "e2e", "m02"); err != nil {
		t.Fatal(err)
	}
	id, err := s.orch.Start(ctx, events.Start{Resource: "conv/e2e", Target: "eu-west"})
	if err != nil {
		t.Fatal(err)
	}
	// Live writes while it migrates: each must land exactly once (the SDK
	// absorbs 423s).
	for i := 30; i < 40; i++ {
		if _, err := alice.PostMessage(ctx, "e2e", client.NewMessage{ID: fmt.Sprintf("m%02d", i), Text: "live"}); err != nil {
			t.Fatalf("live post %d: %v", i, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var st *events.State
	for {
		st, _, err = s.orch.State(ctx, id)
		if err == nil && st.Status.Terminal() {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("migration did not finish: %v", err)
		}
		if st != nil && testing.Verbose() {
			t.Logf("phase %s status %s failures %d reason %q abort %q", st.Phase, st.Status, st.Failures, st.Reason, st.Abort)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Status != events.StatusCompleted {
		t.Fatalf("migration ended %s: %s", st.Status, st.Reason)
	}
	doc, err := s.lk.Get(ctx, kvrouting.Resource{Kind: "conv", ID: "e2e"})
	if err != nil || doc.Primary.Region != "eu-west" || !doc.Primary.Lock.IsZero() || doc.Secondary.Lock.Type != kvrouting.LockSecondary {
		t.Fatalf("routing after: %v %+v", err, doc)
	}
	n := 0
	for m, err := range alice.AllMessages(ctx, "e2e", client.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if m.ID == "m02" {
			t.Fatal("deleted message resurrected at the target")
		}
		n++
	}
	if n != 39 {
		t.Fatalf("%d messages at the target, want 39", n)
	}
	rs, err := alice.Reactions(ctx, "e2e", "m01")
	if err != nil || len(rs) != 1 {
		t.Fatalf("reactions at target: %v %v", err, rs)
	}
	if _, err := alice.PostMessage(ctx, "e2e", client.NewMessage{ID: "after", Text: "at eu-west"}); err != nil {
		t.Fatalf("post after cutover: %v", err)
	}
	st2 := alice.Stats()
	t.Logf("migration %s completed: figures %+v; client 423s %d recovered %d", id, st.Figures, st2.Rejected423, st2.Recovered)
}

// Every stream the system creates says what it is (`nats stream ls`).
func TestStreamsHaveDescriptions(t *testing.T) {
	ts := startSystem(t)
	ctx := context.Background()
	lister := ts.sys.JS.ListStreams(ctx)
	n := 0
	for info := range lister.Info() {
		n++
		if info.Config.Description == "" {
			t.Errorf("stream %s has no description", info.Config.Name)
		}
	}
	if err := lister.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 4 {
		t.Fatalf("only %d streams", n)
	}
}

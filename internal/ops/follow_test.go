package ops

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/cutover/cutover/orchestrator"
)

// syncBuf is a bytes.Buffer safe for a writer and a reader.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// appendEvent publishes one event of migration id with its state after it.
func appendEvent(t *testing.T, js jetstream.JetStream, id, typ string, body events.Body, st events.Status) {
	t.Helper()
	b, err := events.Encode(&events.Envelope{ID: id + "-" + typ, MigrationID: id, Resource: "conv/f", Time: time.Now(), Body: body,
		State: &events.State{ID: id, Resource: "conv/f", Target: "eu-west", Phase: events.PhaseRequested, Status: st}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), events.EventSubject(id), b); err != nil {
		t.Fatal(err)
	}
}

func followEnv(t *testing.T) (url string, js jetstream.JetStream, shutdown func()) {
	t.Helper()
	s := natstest.RunServer(t)
	_, js = natstest.MustConnect(t, s.ClientURL())
	if err := orchestrator.Provision(context.Background(), js, orchestrator.StreamConfig{Memory: true}); err != nil {
		t.Fatal(err)
	}
	return s.ClientURL(), js, s.Shutdown
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestFollowPrintsEveryEventAndResumes: `migrate status ID --follow
// --json` prints every event as it happens, each with its seq, and ends
// with the migration; following again after the last seq printed prints
// nothing more.
func TestFollowPrintsEveryEventAndResumes(t *testing.T) {
	url, js, _ := followEnv(t)
	const id = "m-follow"
	appendEvent(t, js, id, events.TypeRequested, events.Requested{Resource: "conv/f", Target: "eu-west", Attempt: 1, MaxAttempts: 3}, events.StatusActive)
	var out syncBuf
	done := make(chan error, 1)
	go func() {
		done <- Status(context.Background(), StatusRequest{NATS: url, ID: id, Follow: true, JSON: true}, &out)
	}()
	waitUntil(t, "the first event", func() bool { return strings.Contains(out.String(), events.TypeRequested) })
	appendEvent(t, js, id, events.TypeCompleted, events.Completed{}, events.StatusCompleted)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for line := range strings.Lines(out.String()) {
		var e struct {
			Seq  uint64 `json:"seq"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		seqs = append(seqs, e.Seq)
	}
	if len(seqs) != 2 || seqs[0] >= seqs[1] {
		t.Fatalf("followed %v:\n%s", seqs, out.String())
	}
	var again syncBuf
	if err := Status(context.Background(), StatusRequest{NATS: url, ID: id, Follow: true, JSON: true, After: seqs[1]}, &again); err != nil || again.String() != "" {
		t.Fatalf("following again after the last seq: %v %q", err, again.String())
	}
}

// TestFollowEndsWhenNATSGoesAway: a follow whose NATS server dies exits
// with an error saying so once the connection has been lost for
// NATSLostAfter, instead of hanging.
func TestFollowEndsWhenNATSGoesAway(t *testing.T) {
	old := NATSLostAfter
	NATSLostAfter = 200 * time.Millisecond
	defer func() { NATSLostAfter = old }()
	url, js, shutdown := followEnv(t)
	const id = "m-lost"
	appendEvent(t, js, id, events.TypeRequested, events.Requested{Resource: "conv/f", Target: "eu-west", Attempt: 1, MaxAttempts: 3}, events.StatusActive)
	var out syncBuf
	done := make(chan error, 1)
	go func() { done <- Status(context.Background(), StatusRequest{NATS: url, ID: id, Follow: true}, &out) }()
	waitUntil(t, "the first event", func() bool { return strings.Contains(out.String(), events.TypeRequested) })
	shutdown()
	select {
	case err := <-done:
		if !errors.Is(err, errNATSLost) || !strings.Contains(err.Error(), "the migration goes on") {
			t.Fatalf("follow after NATS went away: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the follow hangs after NATS went away")
	}
}

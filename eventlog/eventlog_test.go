package eventlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/nats/natstest"
)

// newLog starts a server with the events stream and returns the log on it.
func newLog(t *testing.T) (*Log, jetstream.JetStream) {
	t.Helper()
	srv := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, srv.ClientURL())
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: events.EventStream, Subjects: []string{events.EventPrefix + ">"}, AllowAtomicPublish: true}); err != nil {
		t.Fatal(err)
	}
	return New(nc, js), js
}

// event is an envelope of migration id carrying a state.
func event(id string, n int) *events.Envelope {
	return &events.Envelope{ID: fmt.Sprintf("%s-%d", id, n), MigrationID: id, Time: time.Unix(int64(n), 0).UTC(),
		Body: events.StepFailed{Error: fmt.Sprint(n)}, State: &events.State{ID: id, Phase: events.PhaseRequested, Events: n}}
}

// An append is conditioned on the migration's last sequence: the next one
// after it succeeds, a second writer with the same expectation gets
// ErrConflict, and so does the same event appended again once it is in
// (the server checks the expectation first; the writer re-reads and finds
// its own event).
func TestAppendIsConditional(t *testing.T) {
	l, _ := newLog(t)
	ctx := t.Context()
	s1, err := l.Append(ctx, event("m1", 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, event("m1", 2), 0); !errors.Is(err, ErrConflict) {
		t.Fatalf("a second first event: %v, want ErrConflict", err)
	}
	s2, err := l.Append(ctx, event("m1", 2), s1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, event("m1", 2), s1); !errors.Is(err, ErrConflict) {
		t.Fatalf("the same event again: %v, want ErrConflict", err)
	}
	if _, err := l.Append(ctx, event("m2", 1), 0); err != nil { // another migration: its own sequence
		t.Fatal(err)
	}
	env, seq, err := l.Last(ctx, "m1")
	if err != nil || seq != s2 || env.ID != "m1-2" || env.State.Events != 2 {
		t.Fatalf("last of m1: %+v at %d, %v; want m1-2 at %d", env, seq, err, s2)
	}
	if _, _, err := l.Last(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("last of a migration without events: %v, want ErrNotFound", err)
	}
	h, err := l.History(ctx, "m1")
	if err != nil || len(h) != 2 || h[0].ID != "m1-1" || h[1].ID != "m1-2" {
		t.Fatalf("history of m1: %v, %v", h, err)
	}
	if h, err := l.History(ctx, "nope"); err != nil || len(h) != 0 {
		t.Fatalf("history of nothing: %v, %v", h, err)
	}
	last, err := l.LastSeq(ctx)
	if err != nil || last != s2+1 {
		t.Fatalf("last sequence %d, %v; want %d", last, err, s2+1)
	}
	heads, err := l.Heads(ctx)
	if err != nil || len(heads) != 2 {
		t.Fatalf("heads %v, %v", heads, err)
	}
	for _, e := range heads {
		if want := map[string]string{"m1": "m1-2", "m2": "m2-1"}[e.Event.MigrationID]; e.Event.ID != want {
			t.Errorf("head of %s is %s, want %s", e.Event.MigrationID, e.Event.ID, want)
		}
	}
}

// A batch is appended whole or not at all, conditioned on the migration's
// last sequence; a stale condition appends none of it.
func TestAppendBatch(t *testing.T) {
	l, _ := newLog(t)
	ctx := t.Context()
	s1, err := l.Append(ctx, event("m1", 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	last, err := l.AppendBatch(ctx, []*events.Envelope{event("m1", 2), event("m1", 3), event("m1", 4)}, s1)
	if err != nil || last != s1+3 {
		t.Fatalf("batch: last seq %d, %v; want %d", last, err, s1+3)
	}
	if _, err := l.AppendBatch(ctx, []*events.Envelope{event("m1", 5), event("m1", 6)}, s1); !errors.Is(err, ErrConflict) {
		t.Fatalf("a batch after a stale sequence: %v, want ErrConflict", err)
	}
	if _, err := l.AppendBatch(ctx, []*events.Envelope{event("m1", 5), event("m2", 1)}, last); err == nil {
		t.Fatal("a batch over two migrations was appended")
	}
	h, err := l.History(ctx, "m1")
	if err != nil || len(h) != 4 || h[3].ID != "m1-4" {
		t.Fatalf("history after the batches: %d events, %v", len(h), err)
	}
	// Retried after it landed (its ids are stored): refused, nothing added.
	if _, err := l.AppendBatch(ctx, []*events.Envelope{event("m1", 2), event("m1", 3)}, last); !errors.Is(err, ErrConflict) {
		t.Fatalf("a batch of stored events: %v, want ErrConflict", err)
	}
	if n, _ := l.LastSeq(ctx); n != last {
		t.Fatalf("the stream's last sequence moved to %d from %d", n, last)
	}
	// A reader tells the appends apart: the batch's later messages were
	// written by the append of its first.
	var same []bool
	err = l.Follow(ctx, "m1", 0, func(e Entry) error {
		if same = append(same, e.SameAppend); len(same) == 4 {
			return ErrStop
		}
		return nil
	})
	if want := []bool{false, false, true, true}; err != nil || !slices.Equal(same, want) {
		t.Fatalf("SameAppend of the four events: %v, %v; want %v", same, err, want)
	}
}

// Follow reads from a sequence on, one migration or all, then what is
// appended later, until the callback says stop; an undecodable message is
// handed over with its error, in its place.
func TestFollow(t *testing.T) {
	l, js := newLog(t)
	ctx := t.Context()
	var seqs []uint64
	for i := 1; i <= 3; i++ {
		for _, id := range []string{"a", "b"} {
			after := uint64(0)
			if _, s, err := l.Last(ctx, id); err == nil {
				after = s
			}
			s, err := l.Append(ctx, event(id, i), after)
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, s)
		}
	}
	if _, err := js.Publish(ctx, events.EventSubject("c"), []byte("not msgpack")); err != nil {
		t.Fatal(err)
	}
	follow := func(id string, from uint64, n int) []Entry {
		t.Helper()
		var got []Entry
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err := l.Follow(fctx, id, from, func(e Entry) error {
			got = append(got, e)
			if len(got) == n {
				return ErrStop
			}
			return nil
		})
		if err != nil || len(got) != n {
			t.Fatalf("follow %q from %d: %d entries, %v", id, from, len(got), err)
		}
		return got
	}
	all := follow("", 0, 7)
	if all[0].Seq != seqs[0] || all[5].Seq != seqs[5] || all[6].Err == nil || all[6].Event != nil {
		t.Fatalf("all from the start: %+v", all)
	}
	b := follow("b", seqs[2], 2) // b's events from the sequence of its second one
	if b[0].Event.ID != "b-2" || b[1].Event.ID != "b-3" {
		t.Fatalf("b from seq %d: %s, %s", seqs[2], b[0].Event.ID, b[1].Event.ID)
	}
	// A follower at the end gets what is appended next.
	done := make(chan []Entry, 1)
	go func() { done <- follow("a", seqs[5]+2, 1) }()
	_, last, _ := l.Last(ctx, "a")
	if _, err := l.Append(ctx, event("a", 4), last); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got[0].Event.ID != "a-4" {
		t.Fatalf("new event: %s", got[0].Event.ID)
	}
	// A callback's error ends Follow with it; ctx's end with nil.
	boom := errors.New("boom")
	if err := l.Follow(ctx, "", 0, func(Entry) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("callback error: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := l.Follow(cctx, "nope", 0, func(Entry) error { return nil }); err != nil {
		t.Fatalf("follow ended by its context: %v", err)
	}
}

// TestPublishAttemptIsBounded: a publish whose reply never comes (a stream
// leader that crashed: the request is taken, nobody answers) ends after
// its attempts, each bounded, not at the caller's long deadline.
func TestPublishAttemptIsBounded(t *testing.T) {
	defer func(d time.Duration) { PublishAttemptTimeout = d }(PublishAttemptTimeout)
	PublishAttemptTimeout = 50 * time.Millisecond
	srv := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, srv.ClientURL())
	// A subscriber that takes every request and never replies.
	sub, err := nc.SubscribeSync("silent.>")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	msg := nats.NewMsg("silent.cmd")
	msg.Data = []byte("x")
	if _, err := PublishRetry(ctx, js, msg, jetstream.WithMsgID("id-1")); err == nil {
		t.Fatal("a publish nobody answered succeeded")
	}
	if ctx.Err() != nil {
		t.Fatal("PublishRetry waited for the caller's deadline")
	}
	// Every attempt reached the subscriber: the retries happened.
	n, _, _ := sub.Pending()
	if n != 4 {
		t.Fatalf("%d attempts, want 4", n)
	}
}

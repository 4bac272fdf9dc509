package orchestrator

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services"
)

// eventTypes lists h's event types in order.
func eventTypes(h []*events.Envelope) []string {
	var out []string
	for _, ev := range h {
		out = append(out, ev.Type)
	}
	return out
}

// TestMergedStepsFallBack: the escalations set their fences and the swap
// step records the validation and schedules the cleanup, in one synced
// append each (issue 7). When the piece a step adds fails, the step still
// records what it did and the phase of its own does the rest: a fence that
// fails in an escalation's step is set by the Fenced step, a post-swap
// fence that fails after a passed validation leaves a Validated event and
// the Validated phase swaps, a previous fence that cannot be cleared after
// the swap leaves the CleanupScheduled step to clear it. Nothing is lost
// and no step is counted as a failure.
func TestMergedStepsFallBack(t *testing.T) {
	e := mustEnv(t)
	const res = "conv/merged"
	e.seed(res, 5)
	us := e.wrap("us", "messages")
	var fences atomic.Int32
	us.onFence = func(services.Fence) error {
		if fences.Add(1)%2 == 1 { // the 1st, 3rd, 5th: each fence fails once
			return errors.New("fence refused (test)")
		}
		return nil
	}
	e.startWorker(e.config())
	ctx := context.Background()
	id1, err := e.client.Start(ctx, events.Start{Resource: res, Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	if st := e.waitDone(id1, 30*time.Second); st.Status != events.StatusCompleted {
		t.Fatalf("move: %s %s", st.Status, st.Reason)
	}
	h := e.history(id1)
	want := []string{events.TypeRequested, events.TypePreLocked,
		events.TypeHardDeleteLocked, events.TypeFenced, events.TypePagesCopied,
		events.TypeWriteLocked, events.TypeFenced, events.TypeDeltasCopied,
		events.TypeValidated, events.TypeSwapped, events.TypeCompleted}
	if got := eventTypes(h); !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	for _, ev := range h {
		switch b := ev.Body.(type) {
		case events.HardDeleteLocked:
			if b.Fenced || b.At.IsZero() {
				t.Fatalf("HardDeleteLocked %+v: want the lock alone, with its time", b)
			}
		case events.WriteLocked:
			if b.Fenced || b.At.IsZero() || b.At.After(ev.Time) {
				t.Fatalf("WriteLocked %+v at %s: want the lock alone, written before the event", b, ev.Time)
			}
		case events.Swapped:
			if b.Validation != nil || b.CleanupAt.IsZero() {
				t.Fatalf("Swapped %+v: the validation had its own event; no previous fence to clear", b)
			}
		}
	}
	if n := countType(h, events.TypeStepFailed); n != 0 {
		t.Fatalf("%d StepFailed: a deferred piece is not a failure", n)
	}
	assertFold(t, h)
	e.assertMigrated(res)

	// The move back clears the first move's post-swap fence at us; refused
	// once, the Swapped event has no cleanup schedule and the next step
	// clears it and schedules.
	us.mu.Lock()
	us.onFence = nil
	var clears atomic.Int32
	us.onClear = func(string) error {
		if clears.Add(1) == 1 {
			return errors.New("clear refused (test)")
		}
		return nil
	}
	us.mu.Unlock()
	id2, err := e.client.Start(ctx, events.Start{Resource: res, Target: "us"})
	if err != nil {
		t.Fatal(err)
	}
	if st := e.waitDone(id2, 30*time.Second); st.Status != events.StatusCompleted {
		t.Fatalf("move back: %s %s", st.Status, st.Reason)
	}
	h = e.history(id2)
	want = []string{events.TypeRequested, events.TypePreLocked, events.TypeHardDeleteLocked,
		events.TypePagesCopied, events.TypeWriteLocked, events.TypeDeltasCopied,
		events.TypeSwapped, events.TypeCleanupScheduled, events.TypeCompleted}
	if got := eventTypes(h); !slices.Equal(got, want) {
		t.Fatalf("move back events\n got %v\nwant %v", got, want)
	}
	for _, ev := range h {
		if b, ok := ev.Body.(events.Swapped); ok && (b.Validation == nil || !b.Validation.OK || !b.CleanupAt.IsZero()) {
			t.Fatalf("Swapped %+v: want the validation, no cleanup schedule", b)
		}
	}
	if clears.Load() < 2 {
		t.Fatalf("previous fence cleared %d times, want a retry", clears.Load())
	}
	assertFold(t, h)
}

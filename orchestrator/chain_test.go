package orchestrator

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/eventlog"
	"github.com/cutover/cutover/events"
)

// appends lists a migration's events as they were appended: the events of
// one append joined by "+".
func (e *env) appends(id string) []string {
	e.t.Helper()
	var out []string
	n := len(e.history(id))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := 0
	err := eventlog.New(e.nc, e.js).Follow(ctx, id, 0, func(en eventlog.Entry) error {
		if en.Err != nil {
			return en.Err
		}
		if en.SameAppend && len(out) > 0 {
			out[len(out)-1] += "+" + en.Event.Type
		} else {
			out = append(out, en.Event.Type)
		}
		if seen++; seen == n {
			return eventlog.ErrStop
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// On streams that stage an atomic batch in memory, the historical copy goes
// into the append of the hard-delete lock, and the completion into the
// swap's: five appends for the seven events of a small migration. On an R1
// file stream each step appends on its own (batchesInMemory).
func TestChainedStepsShareTheirAppend(t *testing.T) {
	for _, c := range []struct {
		streams string
		sc      StreamConfig
		want    []string
	}{
		{"memory", StreamConfig{Memory: true}, []string{"requested", "pre-locked", "hard-delete-locked+pages-copied", "write-locked", "swapped+completed"}},
		{"file", StreamConfig{}, []string{"requested", "pre-locked", "hard-delete-locked", "pages-copied", "write-locked", "swapped", "completed"}},
	} {
		t.Run(c.streams, func(t *testing.T) {
			e := mustEnvOn(t, c.sc)
			e.seed("conv/chain", 5)
			e.startWorker(e.config())
			id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/chain", Target: "eu"})
			if err != nil {
				t.Fatal(err)
			}
			if st := e.waitDone(id, 30*time.Second); st.Status != events.StatusCompleted || st.Attempt != 1 {
				t.Fatalf("status %s attempt %d: %s", st.Status, st.Attempt, st.Reason)
			}
			if got := e.appends(id); !slices.Equal(got, c.want) {
				t.Fatalf("appends\n got %s\nwant %s", strings.Join(got, " "), strings.Join(c.want, " "))
			}
			h := e.history(id)
			assertFold(t, h)
			// The chained events keep their own times: the lock's and the
			// swap's, not the append's.
			st := h[len(h)-1].State
			if !st.HardDeleteAt.Before(st.WriteLockedAt) || st.SwappedAt.After(st.EndedAt) {
				t.Fatalf("phase times: hard-delete %s write %s swapped %s ended %s", st.HardDeleteAt, st.WriteLockedAt, st.SwappedAt, st.EndedAt)
			}
			e.assertMigrated("conv/chain")
		})
	}
}

func TestBatchesInMemory(t *testing.T) {
	for _, c := range []struct {
		sc   jetstream.StreamConfig
		want bool
	}{
		{jetstream.StreamConfig{Replicas: 1, Storage: jetstream.FileStorage}, false},
		{jetstream.StreamConfig{Storage: jetstream.FileStorage}, false},
		{jetstream.StreamConfig{Replicas: 3, Storage: jetstream.FileStorage}, true},
		{jetstream.StreamConfig{Replicas: 1, Storage: jetstream.MemoryStorage}, true},
	} {
		if got := batchesInMemory(c.sc); got != c.want {
			t.Errorf("replicas %d storage %s: %v, want %v", c.sc.Replicas, c.sc.Storage, got, c.want)
		}
	}
}

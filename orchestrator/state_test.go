package orchestrator

import (
	"testing"
	"time"

	"github.com/cutover/cutover/events"
)

// TestApplyKeepsPreviousAcrossAttempts: a rescheduled attempt pre-locks a
// document whose last migration is its own rolled-back first attempt. The
// link to the real predecessor must survive, or a move back never clears
// that predecessor's post-swap fence (found by `cutover chaos`: 1-hour
// fences left on a primary, every later migration of it rolled back).
func TestApplyKeepsPreviousAcrossAttempts(t *testing.T) {
	const id, pred = "mself", "mpredecessor"
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	bodies := []events.Body{
		events.Requested{Resource: "conv/a", Target: "us", Attempt: 1, MaxAttempts: 3, Token: "t1"},
		events.PreLocked{Source: "eu", Previous: pred},
		events.RolledBack{Reason: "lock expired", Phase: events.PhaseConverged},
		events.Rescheduled{Attempt: 2, Token: "t2", At: t0.Add(time.Second)},
		events.PreLocked{Source: "eu", Previous: id},
	}
	var st *events.State
	for i, b := range bodies {
		st = Apply(st, &events.Envelope{ID: "e", MigrationID: id, Time: t0.Add(time.Duration(i) * time.Millisecond), Body: b})
	}
	if st.Previous != pred {
		t.Fatalf("Previous after a second attempt = %q, want %q", st.Previous, pred)
	}
	// A genuinely new predecessor (another migration ran in between) replaces it.
	st = Apply(st, &events.Envelope{ID: "e", MigrationID: id, Time: t0.Add(time.Second), Body: events.RolledBack{Reason: "x", Phase: events.PhasePreLocked}})
	st = Apply(st, &events.Envelope{ID: "e", MigrationID: id, Time: t0.Add(2 * time.Second), Body: events.Rescheduled{Attempt: 3, Token: "t3"}})
	st = Apply(st, &events.Envelope{ID: "e", MigrationID: id, Time: t0.Add(3 * time.Second), Body: events.PreLocked{Source: "eu", Previous: "mother"}})
	if st.Previous != "mother" {
		t.Fatalf("Previous = %q, want mother", st.Previous)
	}
}

package orchestrator

import (
	"testing"
	"time"

	"github.com/cutover/cutover/events"
)

// TestApplyStartsTheCopyAndTheDelta: the hard-delete lock starts the
// historical copy of the services it names, the write lock the delta.
func TestApplyStartsTheCopyAndTheDelta(t *testing.T) {
	const id = "m1"
	t0 := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	var st *events.State
	for i, b := range []events.Body{
		events.Requested{Resource: "conv/a", Target: "us", Attempt: 1, MaxAttempts: 3, Token: "t1"},
		events.PreLocked{Source: "eu"},
		events.HardDeleteLocked{Expiry: t0.Add(time.Hour), At: t0, Services: []string{"messages", "reactions"}},
	} {
		var err error
		if st, err = Apply(st, &events.Envelope{ID: "e", MigrationID: id, Time: t0.Add(time.Duration(i) * time.Millisecond), Body: b}); err != nil {
			t.Fatal(err)
		}
	}
	if st.Phase != events.PhaseHistorical || len(st.Services) != 2 || st.Services[1].Service != "reactions" {
		t.Fatalf("after the hard-delete lock: phase %s, services %+v", st.Phase, st.Services)
	}
	st, err := Apply(st, &events.Envelope{ID: "e", MigrationID: id, Time: t0.Add(time.Second), Body: events.WriteLocked{Expiry: t0.Add(time.Minute), At: t0}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != events.PhaseDelta || !st.WriteLockedAt.Equal(t0) {
		t.Fatalf("after the write lock: phase %s, write locked at %v", st.Phase, st.WriteLockedAt)
	}
}

package orchestrator

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
)

// TestNextActionTable runs testdata/decide.txt: which action of paper 001
// Algorithm 1 each folded state takes next, guards first.
func TestNextActionTable(t *testing.T) {
	f, err := os.Open("testdata/decide.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	lim := limits{phaseRetries: DefaultPhaseRetries, skew: 50 * time.Millisecond}
	covered := map[events.Phase]bool{}
	sc := bufio.NewScanner(f)
	line, cases := 0, 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		given, want, ok := strings.Cut(text, "->")
		fields := strings.Fields(given)
		if !ok || len(fields) == 0 {
			t.Fatalf("line %d: %q: want phase [columns] -> action [reason]", line, text)
		}
		st := &events.State{ID: "m1", Resource: "conv/x", Target: "eu", Source: "us", Token: "tok",
			Status: events.StatusActive, Phase: events.Phase(fields[0]), Attempt: 1, MaxAttempts: 3,
			LockExpiry: now.Add(time.Hour)}
		for _, col := range fields[1:] {
			if err := setColumn(st, col, now); err != nil {
				t.Fatalf("line %d: %v", line, err)
			}
		}
		wantAction, wantReason, _ := strings.Cut(strings.TrimSpace(want), " ")
		t.Run(strings.Join(fields, "/"), func(t *testing.T) {
			d := nextAction(st, now, lim)
			if d.action.String() != wantAction || d.reason != wantReason {
				t.Fatalf("line %d: got %s %q, want %s %q", line, d.action, d.reason, wantAction, wantReason)
			}
			if d.action != actTenant && d.action != actAck && d.action != actCleanSource && d.res.Kind == "" && !strings.HasPrefix(d.reason, "invalid resource") {
				t.Fatalf("line %d: %s without the parsed resource", line, d.action)
			}
		})
		covered[st.Phase] = true
		cases++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []events.Phase{events.PhaseRequested, events.PhasePreLocked, events.PhaseConverged,
		events.PhaseHistorical, events.PhaseDelta,
		events.PhaseValidated, events.PhaseSwapped, events.PhaseCleanupScheduled, events.PhaseRolledBack,
		events.PhaseDone, events.PhaseTenant} {
		if !covered[p] {
			t.Errorf("no case for phase %s", p)
		}
	}
	if cases < 40 {
		t.Fatalf("only %d cases", cases)
	}
}

// setColumn applies one "key=value" or flag column of decide.txt to st.
func setColumn(st *events.State, col string, now time.Time) error {
	key, val, _ := strings.Cut(col, "=")
	var err error
	switch key {
	case "status":
		st.Status = events.Status(val)
	case "abort":
		st.Abort = val
	case "reason":
		st.Reason = val
	case "failures":
		st.Failures, err = strconv.Atoi(val)
	case "attempt":
		st.Attempt, err = strconv.Atoi(val)
	case "max":
		st.MaxAttempts, err = strconv.Atoi(val)
	case "expiry":
		var d time.Duration
		d, err = time.ParseDuration(strings.TrimPrefix(val, "+"))
		st.LockExpiry = now.Add(d)
	case "budget":
		st.MaxWriteBlock, err = time.ParseDuration(val)
	case "wlocked":
		var d time.Duration
		d, err = time.ParseDuration(strings.TrimPrefix(val, "+"))
		st.WriteLockedAt = now.Add(d)
	case "source":
		st.Source = strings.TrimPrefix(val, "none")
	case "resource":
		st.Resource = val
	case "cancelled":
		st.Cancelled = true
	case "cleaned":
		st.SourceCleaned = true
	case "fanout":
		st.Fanout = &events.TenantState{Tenant: "t", Target: "eu"}
	case "paused":
		st.Paused = true
	case "byparent": // paused by its tenant move, one service's copy pending unless copied
		st.Paused, st.PausedByParent = true, true
		st.Services = []events.ServiceProgress{{Service: "messages"}}
	case "copied":
		for i := range st.Services {
			st.Services[i].HistoricalDone = true
		}
	default:
		return fmt.Errorf("unknown column %q", col)
	}
	if err != nil {
		return fmt.Errorf("column %q: %w", col, err)
	}
	return nil
}

// TestQueues: which steps wait for a background slot (queues): those with
// work the slots bound; never Phase 3, a timer re-armed, a settled message
// or the completion after the swap.
func TestQueues(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	lim := limits{phaseRetries: DefaultPhaseRetries, skew: 50 * time.Millisecond}
	for _, c := range []struct {
		phase  events.Phase
		status events.Status
		edit   func(*events.State)
		want   bool
	}{
		{phase: events.PhaseRequested, want: true},
		{phase: events.PhasePreLocked, edit: func(s *events.State) { s.WaitUntil = now.Add(time.Second) }},
		{phase: events.PhasePreLocked, edit: func(s *events.State) { s.WaitUntil = now }, want: true},
		{phase: events.PhaseConverged, want: true},
		{phase: events.PhaseHistorical, want: true},
		{phase: events.PhaseDelta},
		{phase: events.PhaseDelta, edit: func(s *events.State) { s.LockExpiry = now }}, // Phase 3's rollback
		{phase: events.PhaseValidated},
		{phase: events.PhaseSwapped, want: true}, // the authorities again (the swap's step could not)
		{phase: events.PhaseCleanupScheduled},
		{phase: events.PhaseRolledBack, want: true},
		{phase: events.PhaseRolledBack, edit: func(s *events.State) { s.Cancelled = true }},
		{phase: events.PhaseDone, status: events.StatusCompleted, edit: func(s *events.State) { s.CleanupAt = now.Add(time.Second) }},
		{phase: events.PhaseDone, status: events.StatusCompleted, edit: func(s *events.State) { s.CleanupAt = now }, want: true},
		{phase: events.PhaseDone, status: events.StatusCompleted, edit: func(s *events.State) { s.SourceCleaned = true }},
		{phase: events.PhaseDone, status: events.StatusFailed},
	} {
		st := &events.State{ID: "m1", Resource: "conv/x", Target: "eu", Source: "us", Token: "tok",
			Status: events.StatusActive, Phase: c.phase, Attempt: 1, MaxAttempts: 3, LockExpiry: now.Add(time.Hour)}
		if c.status != "" {
			st.Status = c.status
		}
		if c.edit != nil {
			c.edit(st)
		}
		d := nextAction(st, now, lim)
		if got := queues(d, st, now); got != c.want {
			t.Errorf("%s %s (%s): queues %v, want %v", c.phase, st.Status, d.action, got, c.want)
		}
	}
}

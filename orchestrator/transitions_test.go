package orchestrator

import (
	"bufio"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
)

// TestTransitionTable runs testdata/transitions.txt through Apply: each
// case's event in its phase leads to the phase given or is refused with
// ErrIllegalTransition. Every event type of the table has a case that
// accepts it.
func TestTransitionTable(t *testing.T) {
	f, err := os.Open("testdata/transitions.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	types := events.BodyTypes()
	accepted := map[string]bool{}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		given, want, ok := strings.Cut(text, "->")
		fields, want := strings.Fields(given), strings.TrimSpace(want)
		if !ok || len(fields) < 2 || want == "" {
			t.Fatalf("line %d: %q: want phase event [flag] -> phase|refused", line, text)
		}
		typ, flags := fields[1], fields[2:]
		rt, ok := types[typ]
		if !ok {
			t.Fatalf("line %d: unknown event type %q", line, typ)
		}
		body := reflect.New(rt).Elem().Interface().(events.Body)
		switch b := body.(type) {
		case events.Validated:
			b.OK = slices.Contains(flags, "ok")
			body = b
		case events.Swapped:
			if slices.Contains(flags, "cleanup") {
				b.CleanupAt = t0.Add(time.Hour)
			}
			body = b
		}
		var st *events.State
		if fields[0] != string(phaseNew) {
			st = &events.State{ID: "m1", Resource: "conv/x", Source: "us", Target: "eu", Phase: events.Phase(fields[0]), Status: events.StatusActive, Attempt: 1, MaxAttempts: 3}
			if st.Phase == events.PhaseDone {
				st.Status = events.StatusCompleted
			}
			if slices.Contains(flags, "tenant") {
				st.Fanout = &events.TenantState{Tenant: "acme", Target: "eu"}
			}
		}
		before := ""
		if st != nil {
			before = string(st.Phase)
		}
		next, err := Apply(st, &events.Envelope{ID: "e", MigrationID: "m1", Time: t0, Body: body})
		if want == "refused" {
			if !errors.Is(err, ErrIllegalTransition) || next != nil {
				t.Errorf("line %d: %s in %s: got %v, %v; want refused", line, typ, fields[0], next, err)
			}
			if st != nil && string(st.Phase) != before {
				t.Errorf("line %d: a refused event changed the state's phase", line)
			}
			continue
		}
		if err != nil {
			t.Errorf("line %d: %s in %s: %v; want %s", line, typ, fields[0], err, want)
			continue
		}
		got := string(next.Phase)
		if got == "" {
			got = string(phaseNew)
		}
		if got != want {
			t.Errorf("line %d: %s in %s led to %s, want %s", line, typ, fields[0], got, want)
		}
		accepted[typ] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for typ := range transitions {
		if !accepted[typ] {
			t.Errorf("event type %s has no accepting case in testdata/transitions.txt", typ)
		}
	}
}

// Every event type the orchestrator folds has a row; commands have none
// and are refused.
func TestTransitionTableCoversTheEvents(t *testing.T) {
	commands := []string{events.TypeStart, events.TypeStartTenant, events.TypeCancel, events.TypeForceRelease, events.TypeFenceClear,
		events.TypePause, events.TypeResume, events.TypeThrottle}
	for typ := range events.BodyTypes() {
		_, row := transitions[typ]
		if command := slices.Contains(commands, typ); command == row {
			t.Errorf("%s: command %v, row in the table %v", typ, command, row)
		}
	}
	if _, err := Apply(nil, &events.Envelope{ID: "e", MigrationID: "m1", Body: events.Cancel{MigrationID: "m1"}}); !errors.Is(err, ErrIllegalTransition) {
		t.Errorf("a command folded: %v", err)
	}
	for _, bad := range []string{
		"requested (new) -> nowhere",
		"no-such-event (new) -> requested",
		"requested -> requested",
		"requested (new) -> requested\nrequested (new) -> requested",
		"requested (new)",
	} {
		if _, err := parseTransitions(bad); err == nil {
			t.Errorf("parseTransitions(%q) accepted a malformed table", bad)
		}
	}
}

package orchestrator

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"

	"github.com/cutover/cutover/events"
)

// The transition table (transitions.txt, embedded): for each event type,
// the phases it may follow and the phases it may lead to. Apply checks
// both, so the fold refuses what the table does not allow instead of
// folding on (temporal's hsm: transitions declare their sources).

//go:embed transitions.txt
var transitionsTxt string

// phaseNew stands for "no event yet" in the table's from column.
const phaseNew events.Phase = "(new)"

// transition is one event type's row.
type transition struct {
	from []events.Phase // phaseNew: the aggregate's first event
	any  bool           // "*": from every phase, new included
	to   []events.Phase
	same bool // "same": the phase it followed
}

// transitions is the table by event type.
var transitions = mustParseTransitions(transitionsTxt)

// mustParseTransitions parses the table; a malformed table is a build
// defect, reported at start.
func mustParseTransitions(txt string) map[string]transition {
	t, err := parseTransitions(txt)
	if err != nil {
		panic(err)
	}
	return t
}

// knownPhases are the phases the table may name.
var knownPhases = []events.Phase{events.PhaseRequested, events.PhasePreLocked, events.PhaseConverged,
	events.PhaseHistorical, events.PhaseDelta, events.PhaseValidated, events.PhaseSwapped,
	events.PhaseCleanupScheduled, events.PhaseRolledBack, events.PhaseDone, events.PhaseTenant}

func parseTransitions(txt string) (map[string]transition, error) {
	out := map[string]transition{}
	for i, line := range strings.Split(txt, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("orchestrator: transitions.txt line %d: %s", i+1, fmt.Sprintf(format, args...))
		}
		lhs, rhs, ok := strings.Cut(line, "->")
		from, to := strings.Fields(lhs), strings.Fields(rhs)
		if !ok || len(from) < 2 || len(to) == 0 {
			return nil, bad("want: event from-phases -> to-phases")
		}
		typ := from[0]
		if !events.Registered(typ) {
			return nil, bad("unknown event type %q", typ)
		}
		if _, dup := out[typ]; dup {
			return nil, bad("event type %q listed twice", typ)
		}
		var t transition
		for _, f := range from[1:] {
			switch p := events.Phase(f); {
			case f == "*":
				t.any = true
			case p == phaseNew || slices.Contains(knownPhases, p):
				t.from = append(t.from, p)
			default:
				return nil, bad("unknown phase %q", f)
			}
		}
		for _, f := range to {
			switch p := events.Phase(f); {
			case f == "same":
				t.same = true
			case slices.Contains(knownPhases, p):
				t.to = append(t.to, p)
			default:
				return nil, bad("unknown phase %q", f)
			}
		}
		out[typ] = t
	}
	return out, nil
}

// allows reports whether the table lets an event of type typ follow phase
// from (phaseNew: the first event) and lead to phase to.
func allows(typ string, from, to events.Phase) error {
	t, ok := transitions[typ]
	if !ok {
		return fmt.Errorf("%w: event %s has no row in the transition table", ErrIllegalTransition, typ)
	}
	if !t.any && !slices.Contains(t.from, from) {
		return fmt.Errorf("%w: event %s in phase %s (it follows %s)", ErrIllegalTransition, typ, from, phaseList(t.from))
	}
	sameAs := from
	if from == phaseNew {
		sameAs = ""
	}
	if !(t.same && to == sameAs) && !slices.Contains(t.to, to) {
		return fmt.Errorf("%w: event %s from phase %s to phase %s", ErrIllegalTransition, typ, from, to)
	}
	return nil
}

func phaseList(ps []events.Phase) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

package model

import (
	"fmt"
	"strings"
)

// StepOf is one labelled transition of a trace of states S.
type StepOf[S any] struct {
	Action string
	State  S
}

// TraceOf is a counterexample: the path from the initial state, and the
// invariant broken at its end.
type TraceOf[S fmt.Stringer] struct {
	Invariant string
	Steps     []StepOf[S]
}

// String prints the invariant, then one line per step: its number, its
// action and the state it reached.
func (t TraceOf[S]) String() string {
	w := 0
	for _, s := range t.Steps {
		w = max(w, len(s.Action))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "violation: %s\n", t.Invariant)
	for i, s := range t.Steps {
		fmt.Fprintf(&b, "%3d %-*s %s\n", i, w+1, s.Action, s.State)
	}
	return b.String()
}

// traces turns search's findings into traces.
func traces[S interface {
	comparable
	fmt.Stringer
}](fs []found[S]) []TraceOf[S] {
	var out []TraceOf[S]
	for _, f := range fs {
		t := TraceOf[S]{Invariant: f.inv}
		for i := range f.states {
			t.Steps = append(t.Steps, StepOf[S]{Action: f.labels[i], State: f.states[i]})
		}
		out = append(out, t)
	}
	return out
}

// found is one broken invariant and the shortest path to it.
type found[S comparable] struct {
	inv    string
	states []S
	labels []string
}

// search enumerates every state reachable from init, breadth first,
// checking check on every state and the invariant successors report on
// every transition. It keeps the first (shortest) counterexample of each
// broken invariant and does not explore past a violation; stopAtFirst ends
// the search at the first. normalize merges states no future step tells
// apart. It returns the number of distinct states.
func search[S comparable](init S, stopAtFirst bool, check func(S) string,
	successors func(S, func(label string, next S, inv string)), normalize func(S) S) (int, []found[S]) {
	index := map[S]int32{init: 0}
	states := []S{init}
	parent := []int32{-1}
	action := []string{"init"}
	seen := map[string]bool{}
	var out []found[S]

	report := func(i int32, inv, last string, end S) {
		if seen[inv] {
			return
		}
		seen[inv] = true
		var f found[S]
		if last != "" {
			f.states, f.labels = append(f.states, end), append(f.labels, last)
		}
		for ; i >= 0; i = parent[i] {
			f.states, f.labels = append(f.states, states[i]), append(f.labels, action[i])
		}
		for l, r := 0, len(f.states)-1; l < r; l, r = l+1, r-1 {
			f.states[l], f.states[r] = f.states[r], f.states[l]
			f.labels[l], f.labels[r] = f.labels[r], f.labels[l]
		}
		f.inv = inv
		out = append(out, f)
	}

	for head := int32(0); int(head) < len(states); head++ {
		if stopAtFirst && len(out) > 0 {
			break
		}
		s := states[head]
		if inv := check(s); inv != "" {
			report(head, inv, "", s)
			continue
		}
		successors(s, func(label string, next S, inv string) {
			if inv != "" {
				report(head, inv, label, next)
				return
			}
			next = normalize(next)
			if _, ok := index[next]; ok {
				return
			}
			index[next] = int32(len(states))
			states = append(states, next)
			parent = append(parent, head)
			action = append(action, label)
		})
	}
	return len(states), out
}

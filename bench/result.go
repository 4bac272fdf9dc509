package bench

import (
	"fmt"
	"io"
)

// Result is the common shape of a suite's JSON: this design, its
// baseline, their ratio, the target, and the durability every figure ran
// with.
type Result struct {
	Suite      string   `json:"suite"`
	Durability string   `json:"durability"`
	Ours       any      `json:"ours"`
	Baseline   any      `json:"baseline"`
	Ratio      float64  `json:"ratio"`
	Target     string   `json:"target"`
	Met        bool     `json:"target_met"`
	Details    any      `json:"details,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

// WriteText writes the result's one-line summary and its notes.
func (r *Result) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s (%s): ratio %.2f, target %s: met=%v\n", r.Suite, r.Durability, r.Ratio, r.Target, r.Met)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

// say calls progress with a formatted line, if progress is set.
func say(progress func(string), format string, a ...any) {
	if progress != nil {
		progress(fmt.Sprintf(format, a...))
	}
}

// users are the names of n traffic users: u0, u1, ...
func users(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("u%d", i)
	}
	return out
}

package conformance

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Result is one case's outcome in a standalone run (Check).
type Result struct {
	// Case is the case's name ("AdmissionTable", "HistoricalCopy").
	Case string `json:"case"`
	// Pass says whether every check of the case and its sub-cases held.
	Pass bool `json:"pass"`
	// Reason is the first failure, prefixed with the sub-case it happened
	// in ("line42: …"); empty when the case passed.
	Reason string `json:"reason,omitempty"`
	// Failures counts the failed checks.
	Failures int `json:"failures,omitempty"`
	// Ms is how long the case ran, in milliseconds.
	Ms int64 `json:"ms"`
}

// Cases lists the names of the cases, in the order Check runs them.
func Cases() []string {
	out := make([]string, len(subtests))
	for i, st := range subtests {
		out[i] = st.name
	}
	return out
}

// Check runs every case, each on a fresh Harness from factory, outside
// package testing, and calls each (when not nil) with every case's Result
// as it ends. ctx bounds the run: its end fails the cases still running.
// A case that panics fails with the panic.
func Check(ctx context.Context, factory Factory, each func(Result)) []Result {
	var out []Result
	for _, st := range subtests {
		start := time.Now()
		r := newRunT(ctx, "")
		r.run(func(t T) { st.fn(t, factory) })
		res := Result{Case: st.name, Pass: !r.Failed(), Ms: time.Since(start).Milliseconds()}
		if !res.Pass {
			res.Failures = len(r.msgs)
			res.Reason = "failed"
			if len(r.msgs) > 0 {
				res.Reason = r.msgs[0]
			}
		}
		out = append(out, res)
		if each != nil {
			each(res)
		}
	}
	return out
}

// runT is the standalone T: failures are collected, FailNow ends the
// case's goroutine, cleanups run when the case (or sub-case) ends, last
// first.
type runT struct {
	ctx    context.Context
	cancel context.CancelFunc
	name   string // the sub-case path below the case ("line42")

	mu       sync.Mutex
	failed   bool
	msgs     []string
	cleanups []func()
}

func newRunT(parent context.Context, name string) *runT {
	ctx, cancel := context.WithCancel(parent)
	return &runT{ctx: ctx, cancel: cancel, name: name}
}

// run runs f in a goroutine of its own (FailNow exits it) and waits.
func (r *runT) run(f func(T)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer r.cleanup()
		defer func() {
			if p := recover(); p != nil {
				r.Errorf("panic: %v", p)
			}
		}()
		f(r)
	}()
	<-done
}

func (r *runT) cleanup() {
	r.cancel()
	r.mu.Lock()
	cs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		func() {
			defer func() {
				if p := recover(); p != nil {
					r.Errorf("cleanup panic: %v", p)
				}
			}()
			cs[i]()
		}()
	}
}

func (r *runT) Helper() {}

func (r *runT) Errorf(format string, args ...any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, args...))
	if r.name != "" {
		msg = r.name + ": " + msg
	}
	if err := r.ctx.Err(); err != nil && len(r.msgs) == 0 {
		msg += " (the run's deadline passed)"
	}
	r.mu.Lock()
	r.failed = true
	r.msgs = append(r.msgs, msg)
	r.mu.Unlock()
}

func (r *runT) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.FailNow()
}

func (r *runT) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *runT) Logf(string, ...any) {}

func (r *runT) FailNow() {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *runT) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *runT) Context() context.Context { return r.ctx }

func (r *runT) Cleanup(f func()) {
	r.mu.Lock()
	r.cleanups = append(r.cleanups, f)
	r.mu.Unlock()
}

// Run runs a sub-case; its failures are the parent's too.
func (r *runT) Run(name string, f func(T)) bool {
	if r.name != "" {
		name = r.name + "/" + name
	}
	c := newRunT(r.ctx, name)
	c.run(f)
	c.mu.Lock()
	failed, msgs := c.failed, c.msgs
	c.mu.Unlock()
	if failed {
		r.mu.Lock()
		r.failed = true
		r.msgs = append(r.msgs, msgs...)
		r.mu.Unlock()
	}
	return !failed
}

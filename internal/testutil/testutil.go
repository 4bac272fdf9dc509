// Package testutil holds the helpers the module's tests share: a fake
// clock tests move by hand, and WaitFor, which polls a condition instead of
// sleeping a fixed time.
//
// It imports package testing, so only _test.go files may import it: a
// production package that did would link testing into the binary (see
// cmd/cutover's deps tests).
package testutil

import (
	"sync"
	"testing"
	"time"
)

// Start is where every Clock starts.
var Start = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// Clock is a fake clock that tests move by hand. It is safe for concurrent
// use; pass its Now method where code takes a func() time.Time.
type Clock struct {
	mu   sync.Mutex
	t    time.Time
	tick time.Duration
}

// NewClock returns a clock standing at Start. Now reads the same time until
// the test moves the clock.
func NewClock() *Clock { return &Clock{t: Start} }

// NewTickingClock returns a clock standing at Start whose every Now reading
// first moves it on by tick, so successive readings are distinct and
// increasing.
func NewTickingClock(tick time.Duration) *Clock { return &Clock{t: Start, tick: tick} }

// Now returns the clock's time (after the tick, for a ticking clock).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(c.tick)
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set puts the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// WaitDeadline is how long WaitFor polls before it fails the test: generous,
// so a loaded two-core box passes.
const WaitDeadline = time.Minute

// waitPoll is how often WaitFor tries cond.
const waitPoll = 5 * time.Millisecond

// WaitFor polls cond every few milliseconds until it holds, and fails the
// test, naming what it waited for, if it does not hold within WaitDeadline.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitDeadline)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", WaitDeadline, what)
		}
		time.Sleep(waitPoll)
	}
}

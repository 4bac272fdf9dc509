package orchestrator

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestWorkerOptionsConflict: a nil or repeated option is refused with
// ErrInvalid and no worker starts.
func TestWorkerOptionsConflict(t *testing.T) {
	e := mustEnv(t)
	for name, opts := range map[string][]WorkerOption{
		"nil policy":   {WithFencePolicy(nil)},
		"two policies": {WithFencePolicy(ProtocolFencing()), WithFencePolicy(ProtocolFencing())},
		"nil option":   {nil},
		"nil timer":    {WithOpTimer(nil)},
		"two timers":   {WithOpTimer(func(string, time.Duration) {}), WithOpTimer(func(string, time.Duration) {})},
	} {
		if _, err := NewWorker(e.nc, e.js, e.config(), opts...); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// TestWithOpTimer: a migration's steps report every kind of operation they
// wait on (the four lock writes, the appends, the contract requests at
// both regions), each with a duration; nothing else.
func TestWithOpTimer(t *testing.T) {
	e := mustEnv(t)
	const res = "conv/timed"
	e.seed(res, 5)
	var mu sync.Mutex
	seen := map[string]int{}
	w, err := NewWorker(e.nc, e.js, e.config(), WithOpTimer(func(op string, took time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if took <= 0 {
			t.Errorf("%s took %v", op, took)
		}
		seen[op]++
	}))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.Run(context.Background()) }()
	t.Cleanup(func() { _ = w.Close() })
	e.migrateDone(res, "eu")
	e.assertMigrated(res)
	mu.Lock()
	defer mu.Unlock()
	// Pre-lock, hard-delete lock, write lock, swap.
	if seen[OpRoutingWrite] < 4 {
		t.Errorf("routing writes timed: %d, want the 4 lock transitions (%v)", seen[OpRoutingWrite], seen)
	}
	for _, op := range []string{OpEventAppend, OpExport, OpImport, OpAuthority, OpDigests} {
		if seen[op] == 0 {
			t.Errorf("no %s timed: %v", op, seen)
		}
	}
	for op := range seen {
		switch op {
		case OpRoutingWrite, OpEventAppend, OpAuthority, OpExport, OpImport, OpDigests, OpCleanup:
		default:
			t.Errorf("unknown op %q timed", op)
		}
	}
}

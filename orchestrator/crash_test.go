package orchestrator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
)

// happyTypes is the event sequence a worker appends in an uneventful
// migration of a small resource (one page per service; the two services'
// pages are copied concurrently and checkpointed in one event).
//
// Six synced appends: the escalations carry their fences, the swap carries
// the last delta pages, the validation and the cleanup schedule (issue 7's
// budget).
var happyTypes = []string{
	events.TypePreLocked, events.TypeHardDeleteLocked, events.TypePagesCopied,
	events.TypeWriteLocked, events.TypeSwapped, events.TypeCompleted,
}

// A worker that dies at any phase boundary — right after event K, or after
// the side effect of step K but before its event — is replaced by a fresh
// worker that finishes the migration exactly once (paper 001 §3.5). On
// memory streams the chained steps share their append (engine.go): a crash
// before it loses both steps' events.
func TestCrashResume(t *testing.T) {
	for _, mode := range []string{"after", "before"} {
		for k := 1; k <= len(happyTypes); k++ {
			for _, streams := range []string{"file", "memory"} {
				t.Run(fmt.Sprintf("%s-%02d-%s-%s", mode, k, happyTypes[k-1], streams), func(t *testing.T) {
					t.Parallel()
					crashResume(t, mode, k, StreamConfig{Memory: streams == "memory"})
				})
			}
		}
	}
}

// crashResume is one case of TestCrashResume: the K-th append (mode
// "after") or the K-th event before its append ("before") crashes the worker.
func crashResume(t *testing.T, mode string, k int, sc StreamConfig) {
	e := mustEnvOn(t, sc)
	e.seed("conv/crash", 5)
	cfg := e.config()
	cfg.AckWait, cfg.StepTimeout = time.Second, time.Second
	var n atomic.Int32
	crashed := make(chan struct{})
	var once sync.Once
	crash := func() error {
		if int(n.Add(1)) == k {
			once.Do(func() { close(crashed) })
			return errCrash
		}
		return nil
	}
	if mode == "after" {
		cfg.AfterAppend = func(*events.Envelope) error { return crash() }
	} else {
		cfg.BeforeAppend = func(*events.State, events.Body) error { return crash() }
	}
	a := e.startWorker(cfg)
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/crash", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-crashed:
	case <-time.After(20 * time.Second):
		t.Fatal("no crash")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	cfg2 := e.config()
	cfg2.AckWait, cfg2.StepTimeout = time.Second, time.Second
	e.startWorker(cfg2)
	st := e.waitDone(id, 30*time.Second)
	t.Logf("resumed in %s", time.Since(t0))
	if st.Status != events.StatusCompleted {
		t.Fatalf("status %s: %s", st.Status, st.Reason)
	}
	h := e.history(id)
	if c := countType(h, events.TypeSwapped); c != 1 {
		t.Fatalf("%d Swapped events", c)
	}
	if c := countType(h, events.TypeCompleted); c != 1 {
		t.Fatalf("%d Completed events", c)
	}
	e.assertMigrated("conv/crash")
	assertFold(t, h)
}

// Two workers and duplicate starts of one resource: the routing pre-lock
// admits one migration; exactly one completes, the others end Failed
// (locked) or Dropped (already at target).
func TestDuplicateStarts(t *testing.T) {
	e := mustEnv(t)
	e.seed("conv/dup", 10)
	e.startWorker(e.config())
	e.startWorker(e.config())
	var ids []string
	for range 3 {
		id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/dup", Target: "eu"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	completed, swaps := 0, 0
	for _, id := range ids {
		st := e.waitDone(id, 30*time.Second)
		switch st.Status {
		case events.StatusCompleted:
			completed++
		case events.StatusFailed:
			if st.Reason != "locked by another migration" {
				t.Fatalf("failed: %s", st.Reason)
			}
		case events.StatusDropped:
		}
		swaps += countType(e.history(id), events.TypeSwapped)
	}
	if completed != 1 || swaps != 1 {
		t.Fatalf("%d completed, %d swaps", completed, swaps)
	}
	e.assertMigrated("conv/dup")
}

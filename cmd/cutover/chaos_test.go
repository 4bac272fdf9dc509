//go:build ignore

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/cutover/cutover/kvrouting"
)

// TestChaosShort is the short chaos run inside `make test`: a fixed seed,
// ~20 s of nemesis, then drain and the independent check.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos run: 3-node cluster, ~30 s")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	rep, err := chaos(ctx, chaosOptions{seed: 1, duration: 20 * time.Second, workers: 3, clients: 4}, &stderr)
	if err != nil {
		t.Fatalf("chaos: %v\n%s", err, stderr.String())
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	t.Logf("report:\n%s", b)
	if bad := rep.failures(); len(bad) > 0 {
		t.Fatalf("invariants violated: %v", bad)
	}
	if n := rep.Nemesis; n.LeaderKills == 0 || n.WorkerKills == 0 || n.Partitions == 0 || n.Pauses == 0 || n.DuplicateStarts == 0 {
		t.Errorf("a fault kind never happened: %+v", n)
	}
	if rep.Migrations.Completed == 0 || rep.Writes.Acknowledged == 0 {
		t.Errorf("no work done: %d migrations completed, %d writes acknowledged", rep.Migrations.Completed, rep.Writes.Acknowledged)
	}
}

// TestChaosUsage checks the flag validation without starting anything.
func TestChaosUsage(t *testing.T) {
	var out bytes.Buffer
	if err := runChaos(context.Background(), []string{"--workers", "1"}, &out, &out); err == nil {
		t.Fatal("--workers 1 accepted")
	}
}

// TestLockAnalysis shows that the checker's lock-history analysis is not
// vacuous: it flags a holder acting after its expiry, a lock taken over
// while another is in force, and measures the write fence.
func TestLockAnalysis(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	skew := 100 * time.Millisecond
	doc := func(region string, l kvrouting.Lock, sec *kvrouting.Location) *kvrouting.Document {
		return &kvrouting.Document{Resource: "conv/x", Primary: kvrouting.Location{Region: region, Lock: l}, Secondary: sec}
	}
	pre := kvrouting.Lock{Type: kvrouting.LockPre, Token: "a", Expiry: t0.Add(time.Minute)}
	hd := kvrouting.Lock{Type: kvrouting.LockHardDelete, Token: "a", Expiry: t0.Add(10 * time.Second)}
	wl := kvrouting.Lock{Type: kvrouting.LockWrite, Token: "a", NotBefore: t0.Add(2 * time.Second), Expiry: t0.Add(5 * time.Second)}
	swapped := doc("eu", kvrouting.Lock{}, &kvrouting.Location{Region: "us", Lock: kvrouting.Lock{Type: kvrouting.LockSecondary, Token: "a"}})
	rev := func(n int, at time.Duration, d *kvrouting.Document) observedRev {
		return observedRev{rev: uint64(n), created: t0.Add(at), doc: d}
	}
	t.Run("clean", func(t *testing.T) {
		hs := []observedRev{rev(1, 0, doc("us", kvrouting.Lock{}, nil)), rev(2, time.Second, doc("us", pre, nil)),
			rev(3, 1500*time.Millisecond, doc("us", hd, nil)), rev(4, 2*time.Second, doc("us", wl, nil)), rev(5, 3*time.Second, swapped)}
		stale, _, fence, swap, _ := lockAnalysis(hs, skew, nil)
		if stale != 0 || fence != time.Second || !swap.Equal(t0.Add(3*time.Second)) {
			t.Fatalf("stale %d fence %s swap %s", stale, fence, swap)
		}
	})
	t.Run("swap after expiry", func(t *testing.T) {
		hs := []observedRev{rev(4, 2*time.Second, doc("us", wl, nil)), rev(5, 6*time.Second, swapped)}
		stale, paused, fence, _, _ := lockAnalysis(hs, skew, map[kvrouting.Token]bool{"a": true})
		if stale != 1 || paused != 1 || fence != 3*time.Second {
			t.Fatalf("stale %d paused %d fence %s", stale, paused, fence)
		}
	})
	t.Run("lock stolen", func(t *testing.T) {
		other := kvrouting.Lock{Type: kvrouting.LockPre, Token: "b", Expiry: t0.Add(time.Minute)}
		hs := []observedRev{rev(2, time.Second, doc("us", pre, nil)), rev(3, 2*time.Second, doc("us", other, nil))}
		if stale, _, _, _, _ := lockAnalysis(hs, skew, nil); stale != 1 {
			t.Fatalf("stale %d", stale)
		}
	})
}

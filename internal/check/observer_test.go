package check

import (
	"testing"
	"time"

	"github.com/cutover/cutover/kvrouting"
)

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
	rev := func(n int, at time.Duration, d *kvrouting.Document) Revision {
		return Revision{Rev: uint64(n), Created: t0.Add(at), Doc: d}
	}
	t.Run("clean", func(t *testing.T) {
		hs := []Revision{rev(1, 0, doc("us", kvrouting.Lock{}, nil)), rev(2, time.Second, doc("us", pre, nil)),
			rev(3, 1500*time.Millisecond, doc("us", hd, nil)), rev(4, 2*time.Second, doc("us", wl, nil)), rev(5, 3*time.Second, swapped)}
		stale, _, fence, swap, _ := LockAnalysis(hs, skew, nil)
		if stale != 0 || fence != time.Second || !swap.Equal(t0.Add(3*time.Second)) {
			t.Fatalf("stale %d fence %s swap %s", stale, fence, swap)
		}
	})
	t.Run("swap after expiry", func(t *testing.T) {
		hs := []Revision{rev(4, 2*time.Second, doc("us", wl, nil)), rev(5, 6*time.Second, swapped)}
		stale, paused, fence, _, _ := LockAnalysis(hs, skew, map[kvrouting.Token]bool{"a": true})
		if stale != 1 || paused != 1 || fence != 3*time.Second {
			t.Fatalf("stale %d paused %d fence %s", stale, paused, fence)
		}
	})
	t.Run("lock stolen", func(t *testing.T) {
		other := kvrouting.Lock{Type: kvrouting.LockPre, Token: "b", Expiry: t0.Add(time.Minute)}
		hs := []Revision{rev(2, time.Second, doc("us", pre, nil)), rev(3, 2*time.Second, doc("us", other, nil))}
		if stale, _, _, _, _ := LockAnalysis(hs, skew, nil); stale != 1 {
			t.Fatalf("stale %d", stale)
		}
	})
}

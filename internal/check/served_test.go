package check

import (
	"testing"
	"time"

	"github.com/cutover/cutover/internal/workload"
	"github.com/cutover/cutover/kvrouting"
)

// TestServedWritesCoverEverySwap: a write accepted at a region is a
// dual-authority write unless that region was the primary at some instant
// of the write's call, by the committed routing history — after the first
// swap as after a later one, and from the swap's revision on (not from the
// engine's later Swapped event).
func TestServedWritesCoverEverySwap(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	rev := func(s float64, primary string) Revision {
		return Revision{Created: at(s), Doc: &kvrouting.Document{Primary: kvrouting.Location{Region: primary}}}
	}
	// us → eu at 10 s, eu → us at 20 s, us → eu at 30 s.
	hs := []Revision{rev(0, "us"), rev(5, "us"), rev(10, "eu"), rev(20, "us"), rev(25, "us"), rev(30, "eu")}
	w := func(region string, from, to float64) workload.Served {
		return workload.Served{Region: region, Start: at(from), End: at(to), What: "post"}
	}
	for _, tc := range []struct {
		name string
		w    workload.Served
		bad  bool
	}{
		{"at the primary", w("us", 1, 2), false},
		{"spanning the first swap, at the old primary", w("us", 9, 11), false},
		{"spanning the first swap, at the new primary", w("eu", 9, 11), false},
		{"at the old location just after the first swap", w("us", 10.5, 11), true},
		{"at the new location before the first swap", w("eu", 2, 3), true},
		{"at the old location after the move back", w("eu", 21, 22), true},
		{"at the primary after the move back", w("us", 21, 22), false},
		{"at the old location after the last swap", w("us", 31, 32), true},
		{"before the first revision, at its primary", w("us", -1, 0.5), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var inv Invariants
			servedWrites(&inv, "c", []workload.Served{tc.w}, hs)
			if got := inv.DualAuthorityWrites == 1; got != tc.bad {
				t.Fatalf("dual-authority %d, want bad=%v (samples %v)", inv.DualAuthorityWrites, tc.bad, inv.Samples)
			}
		})
	}
}

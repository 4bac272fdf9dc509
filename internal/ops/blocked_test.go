package ops

import (
	"strings"
	"testing"
)

// TestBlockedOf: the tenant report's distribution of write-blocked times
// and its histogram (bucket bounds inclusive, the last open).
func TestBlockedOf(t *testing.T) {
	b := blockedOf([]int64{40, 50, 51, 120, 900, 20000})
	if b.Migrations != 6 || b.P50 != 120 || b.P99 != 20000 || b.Max != 20000 {
		t.Fatalf("%+v", b)
	}
	want := map[string]int{"≤50ms": 2, "≤100ms": 1, "≤250ms": 1, "≤1s": 1, ">10s": 1}
	for _, h := range b.Histogram {
		if h.Count != want[h.Le] {
			t.Fatalf("bucket %s: %d, want %d (%+v)", h.Le, h.Count, want[h.Le], b.Histogram)
		}
	}
	if s := b.String(); !strings.Contains(s, "p50 120 ms, p99 20000 ms, max 20000 ms") || !strings.Contains(s, "≤50ms 2, ≤100ms 1, ≤250ms 1, ≤1s 1, >10s 1") {
		t.Fatalf("%s", s)
	}
	if e := blockedOf(nil); e.Migrations != 0 || len(e.Histogram) != 8 {
		t.Fatalf("empty: %+v", e)
	}
}

package client

import (
	"testing"
	"time"
)

func TestBackoffCaps(t *testing.T) {
	p := RetryPolicy{Initial: 20 * time.Millisecond, Max: time.Second}
	want := []time.Duration{20, 40, 80, 160, 320, 640, 1000, 1000}
	for n, w := range want {
		if got := p.backoff(n); got != w*time.Millisecond {
			t.Errorf("backoff(%d) = %s, want %s", n, got, w*time.Millisecond)
		}
	}
	if got := p.backoff(1 << 20); got != time.Second {
		t.Errorf("backoff(huge) = %s, want Max", got)
	}
}

func TestBackoffFullJitter(t *testing.T) {
	p := RetryPolicy{Initial: 20 * time.Millisecond, Max: time.Second, Jitter: true}
	for n := range 10 {
		limit := RetryPolicy{Initial: p.Initial, Max: p.Max}.backoff(n)
		var below bool
		for range 200 {
			d := p.backoff(n)
			if d < 0 || d > limit {
				t.Fatalf("backoff(%d) = %s outside [0, %s]", n, d, limit)
			}
			below = below || d < limit/2
		}
		if !below {
			t.Errorf("backoff(%d): 200 draws never below half the cap; not jittered", n)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"": 0, "3": 3 * time.Second, " 1 ": time.Second, "0": 0, "-4": 0, "soon": 0,
		"Mon, 02 Jan 2006 15:04:05 GMT": 0, // a date in the past
	} {
		if got := parseRetryAfter(in); got != want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", in, got, want)
		}
	}
}

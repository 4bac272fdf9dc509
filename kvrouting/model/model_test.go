package model

import (
	"strings"
	"testing"
)

// TestExploreCorrect: the protocol as kvrouting implements it keeps every
// invariant in every reachable state of the default scope.
func TestExploreCorrect(t *testing.T) {
	cfg := DefaultConfig()
	res := Explore(cfg)
	for _, v := range res.Violations {
		t.Errorf("%s", v)
	}
	t.Logf("scope: 2 orchestrators, clock 0..%d, ≤%d crash each, ≤%d client writes, 2 cache tiers (TTL = convergence delay = %d), leases pre %d / hard-delete %d / write %d: %d distinct states, 0 violations",
		cfg.MaxClock, cfg.MaxCrashes, cfg.MaxWrites, cfg.TTL, cfg.PreLease, cfg.HardDeleteLease, cfg.WriteLease, res.States)
	if res.States < 1000 {
		t.Fatalf("only %d states: the scope is not exercised", res.States)
	}
}

// TestExploreFindsBrokenVariants: each deliberately broken protocol is
// caught, with a counterexample trace naming the broken invariant.
func TestExploreFindsBrokenVariants(t *testing.T) {
	for _, tc := range []struct {
		v    Variant
		want string
	}{
		{SwapIgnoresToken, "stale-token mutation"},
		{NoFence, "write fence"},
		{FenceExpiresEarly, "write fence"},
	} {
		t.Run(tc.v.String(), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Variant = tc.v
			cfg.StopAtFirst = true
			cfg.MaxWrites = 1
			res := Explore(cfg)
			var found bool
			for _, v := range res.Violations {
				if strings.Contains(v.Invariant, tc.want) {
					found = true
					t.Logf("counterexample (%d states explored):\n%s", res.States, v)
				}
			}
			if !found {
				t.Fatalf("%s: no %q violation found in %d states (found %d others)", tc.v, tc.want, res.States, len(res.Violations))
			}
		})
	}
}

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
		cfg  func() Config
	}{
		{SwapIgnoresToken, "stale-token mutation", DefaultConfig},
		{NoFence, "write fence", DefaultConfig},
		{FenceExpiresEarly, "write fence", DefaultConfig},
		{NoSkewMargin, "mutual exclusion", SkewConfig},
		{NoFence, "write fence", func() Config { c := FenceConfig(); c.TTL = 1; return c }},
	} {
		t.Run(tc.v.String(), func(t *testing.T) {
			cfg := tc.cfg()
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

// TestExploreSkew: the skew scope (a client write through the cache tiers
// with a clock lagging within the margin, renewals) and the
// fence-convergence scope (no convergence wait, cache copies older than the
// pre-lock served under the write lock) keep every invariant. (The data —
// imports, late requests, cleanups, deletes — is the authority model's.)
func TestExploreSkew(t *testing.T) {
	for name, cfg := range map[string]Config{"skew": SkewConfig(), "fence convergence": FenceConfig()} {
		t.Run(name, func(t *testing.T) {
			res := Explore(cfg)
			for _, v := range res.Violations {
				t.Errorf("%s", v)
			}
			t.Logf("%s scope: %d distinct states, 0 violations", name, res.States)
			if res.States < 1000 {
				t.Fatalf("only %d states: the scope is not exercised", res.States)
			}
		})
	}
}

// TestCacheServingLockedIsMaskedByTheFence: a cache that serves copies
// under an active lock breaks no invariant while the source's write fence
// holds: the fence refuses the write the stale decision allowed. (With the
// fence gone too — NoFence — the write is lost; see above.)
func TestCacheServingLockedIsMaskedByTheFence(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Variant = CacheServesLocked
	cfg.MaxWrites = 1
	res := Explore(cfg)
	for _, v := range res.Violations {
		t.Errorf("%s", v)
	}
}

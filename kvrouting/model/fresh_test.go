package model

import (
	"os"
	"strings"
	"testing"
)

// TestExploreFreshness: with fence-driven convergence, caches of any age,
// migrations there and back (each may roll back, skip its post-swap fence
// or see it lapse), no acknowledged write is lost, no delete undone, and no
// read misses what was acknowledged before it started (issue 15 #5).
func TestExploreFreshness(t *testing.T) {
	cfg := DefaultFreshConfig()
	if os.Getenv("CUTOVER_MODEL_FULL") != "" {
		cfg = FullFreshConfig()
	}
	res := ExploreFreshness(cfg)
	for _, v := range res.Violations {
		t.Errorf("%s", v)
	}
	t.Logf("freshness scope: %d clients with caches of any age, ≤%d operations, ≤%d migrations: %d distinct states, 0 violations",
		freshClients, cfg.MaxOps, cfg.Migrations, res.States)
	if res.States < 1000 {
		t.Fatalf("only %d states: the scope is not exercised", res.States)
	}
}

// TestFreshnessMutationsCaught: each part of the protocol, removed, is
// missed by the checker in no case: it reports the invariant it protects.
func TestFreshnessMutationsCaught(t *testing.T) {
	for _, tc := range []struct {
		m    FreshMutation
		want string
	}{
		{NoReadCheck, "no stale read"},
		{NoStoreFences, "no lost write"},
		{NoWatermark, "no "},
	} {
		t.Run(tc.m.String(), func(t *testing.T) {
			cfg := DefaultFreshConfig()
			cfg.Mutation, cfg.StopAtFirst = tc.m, true
			res := ExploreFreshness(cfg)
			for _, v := range res.Violations {
				if strings.Contains(v.Invariant, tc.want) {
					t.Logf("counterexample (%d states explored):\n%s", res.States, v)
					return
				}
			}
			t.Fatalf("%s: no %q violation in %d states", tc.m, tc.want, res.States)
		})
	}
}

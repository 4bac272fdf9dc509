package model

import (
	"os"
	"strings"
	"testing"
)

// TestExploreAuthority: with the real contract.Join and contract.Admit,
// migrations there and back copying page by page (resetting the target),
// late, lost and repeated requests, expiring locks taken over, and caches
// of any age, no acknowledged write is lost, no delete undone, no read
// misses what was acknowledged before it started, no region keeps data
// where the resource never lives, and the primary refuses nothing routing
// allows once no migration is in flight.
func TestExploreAuthority(t *testing.T) {
	scopes := AuthorityScopes()
	if os.Getenv("CUTOVER_MODEL_FULL") != "" {
		scopes = FullAuthorityScopes()
	}
	for _, cfg := range scopes {
		res := ExploreAuthority(cfg)
		for _, v := range res.Violations {
			t.Errorf("%s", v)
		}
		t.Logf("authority scope: %d clients with caches of any age, ≤%d operations, ≤%d migrations, ≤%d late requests: %d distinct states, %d violations",
			aClients, cfg.MaxOps, cfg.Migrations, cfg.Late, res.States, len(res.Violations))
		if res.States < 10000 {
			t.Fatalf("only %d states: the scope is not exercised", res.States)
		}
	}
}

// TestAuthorityMutationsCaught: each rule of the contract, broken, is
// caught in the scopes `make test` checks, with a counterexample of the
// invariant it protects.
func TestAuthorityMutationsCaught(t *testing.T) {
	for _, tc := range []struct {
		m    AuthorityMutation
		want string
	}{
		{AcceptLower, "no "},
		{ImportUnchecked, "no "},
		{ResetWithoutAuthority, "no "},
		{WriteAtExporting, "no lost write"},
		{CleanupUnchecked, "no lost write"},
		{RollbackKeepsTarget, "no data where the resource never lives"},
		{NoReadCheck, "no stale read"},
	} {
		t.Run(tc.m.String(), func(t *testing.T) {
			states := 0
			for _, cfg := range AuthorityScopes() {
				cfg.Mutation, cfg.StopAtFirst = tc.m, true
				res := ExploreAuthority(cfg)
				states += res.States
				for _, v := range res.Violations {
					if strings.Contains(v.Invariant, tc.want) {
						t.Logf("counterexample (%d states explored):\n%s", res.States, v)
						return
					}
				}
			}
			t.Fatalf("%s: no %q violation in %d states", tc.m, tc.want, states)
		})
	}
}

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
		// A late unchecked cleanup empties a target mid-copy: with an
		// empty delta, validation with the copy's digests meets it first.
		{CleanupUnchecked, "no lost write|no change at the target after its copy's digests"},
		{RollbackKeepsTarget, "no data where the resource never lives"},
		{NoReadCheck, "no stale read"},
		{EmptyDeltaUnfenced, "no lost write"},
		{StaleCopyDigests, "no change at the target after its copy's digests"},
	} {
		t.Run(tc.m.String(), func(t *testing.T) {
			states := 0
			for _, cfg := range AuthorityScopes() {
				cfg.Mutation, cfg.StopAtFirst = tc.m, true
				res := ExploreAuthority(cfg)
				states += res.States
				for _, v := range res.Violations {
					for _, want := range strings.Split(tc.want, "|") {
						if strings.Contains(v.Invariant, want) {
							t.Logf("counterexample (%d states explored):\n%s", res.States, v)
							return
						}
					}
				}
			}
			t.Fatalf("%s: no %q violation in %d states", tc.m, tc.want, states)
		})
	}
}

// TestExploreReverse: with the reverse window — the new primary deleting
// as tombstones after a swap, a move back copying only what changed there
// since (no reset) when the old copy is the one validated at the swap and
// the window is open, a full copy otherwise — the same invariants hold.
func TestExploreReverse(t *testing.T) {
	incremental := false
	for _, cfg := range ReverseScopes() {
		res := ExploreAuthority(cfg)
		for _, v := range res.Violations {
			t.Errorf("%s", v)
		}
		t.Logf("reverse scope: ≤%d operations, ≤%d migrations, ≤%d late requests: %d distinct states, %d violations",
			cfg.MaxOps, cfg.Migrations, cfg.Late, res.States, len(res.Violations))
		incremental = incremental || res.Incremental > 0
	}
	if !incremental {
		t.Fatal("no move back copied incrementally: the scope is not exercised")
	}
}

// TestReverseMutationsCaught: an incremental copy that leaves out the
// tombstones, and one that starts from a later change sequence, are
// caught: a move back whose window was proven, under its hard-delete lock
// in force, fails validation (which then rolls it back: the invariant
// checked is that a proven incremental copy is exact, so that validation
// is the backstop, not the mechanism).
func TestReverseMutationsCaught(t *testing.T) {
	for _, m := range []AuthorityMutation{ReverseSkipsTombstones, ReverseLaterToken} {
		t.Run(m.String(), func(t *testing.T) {
			states := 0
			for _, cfg := range ReverseScopes() {
				cfg.Mutation, cfg.StopAtFirst = m, true
				res := ExploreAuthority(cfg)
				states += res.States
				if len(res.Violations) > 0 {
					t.Logf("counterexample (%d states explored):\n%s", res.States, res.Violations[0])
					return
				}
			}
			t.Fatalf("%s: no violation in %d states", m, states)
		})
	}
}

package contracttest

import (
	"slices"
	"testing"
	"time"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
)

// checkLocked checks that a user-path error is the 423 of a fence:
// CodeLocked with a positive Retry-After (paper 001 §4.4, Table 4).
func checkLocked(t *testing.T, what string, err error) {
	t.Helper()
	if codeOf(err) != contract.CodeLocked {
		t.Fatalf("%s under a write fence: %v, want code %s", what, err, contract.CodeLocked)
	}
	if ra := services.ToError(err).RetryAfter; ra <= 0 {
		t.Fatalf("%s under a write fence: Retry-After %s, want > 0", what, ra)
	}
}

// unchangedSince checks that the source has no change after tok and the
// digests are still before.
func (k *kit) unchangedSince(tok uint64, before []contract.SliceDigest) {
	k.t.Helper()
	if ids := idsOf(k.delta(tok, 0)); len(ids) != 0 {
		k.t.Fatalf("refused operations changed records %q", ids)
	}
	if after := k.digests(k.h.Source); !slices.Equal(after, before) {
		k.t.Fatalf("refused operations changed the digests:\nbefore %v\nafter  %v", before, after)
	}
}

// testWriteFence: under the write fence every update, new write and delete
// is refused with CodeLocked before storage changes (paper 001 (A4), Table
// 4; DESIGN.md "Two layers of enforcement").
func testWriteFence(t *testing.T, f Factory) {
	k := newKit(t, f, "wfence")
	ids := k.writeN("r", 3)
	_, tok := k.historical(0)
	before := k.digests(k.h.Source)
	k.fence(contract.FenceWrite, "kit-w")

	_, err := k.tryWrite("new", true)
	checkLocked(t, "new write", err)
	_, err = k.tryWrite(ids[0], false)
	checkLocked(t, "update", err)
	checkLocked(t, "delete", k.tryDelete(ids[1]))
	k.unchangedSince(tok, before)

	// Raising hard-delete to write with the same token is the lock
	// lifecycle's order; the reverse (a stale replay) must not reopen writes.
	if err := k.h.Source.SetFence(k.ctx, k.res, contract.FenceFor(contract.FenceHardDelete, "kit-w", time.Now().Add(time.Hour), 0)); err != nil {
		t.Fatalf("SetFence(hard-delete) with the write fence's token: %v", err)
	}
	_, err = k.tryWrite(ids[0], false)
	checkLocked(t, "update after a stale hard-delete SetFence", err)
	k.unchangedSince(tok, before)
}

// testFenceCleared: a fence is changed or cleared only with its token, and
// once cleared (rollback) writes and deletes resume.
func testFenceCleared(t *testing.T, f Factory) {
	k := newKit(t, f, "clear")
	ids := k.writeN("r", 3)
	k.fence(contract.FenceWrite, "kit-a")

	k.mustCode("ClearFence with another token", k.h.Source.ClearFence(k.ctx, k.res, "kit-b"), contract.CodeConflict)
	k.mustCode("SetFence with another token",
		k.h.Source.SetFence(k.ctx, k.res, contract.FenceFor(contract.FenceHardDelete, "kit-b", time.Now().Add(time.Hour), 0)),
		contract.CodeConflict)
	_, err := k.tryWrite(ids[0], false)
	checkLocked(t, "update after refused fence changes", err)

	if err := k.h.Source.ClearFence(k.ctx, k.res, "kit-a"); err != nil {
		t.Fatalf("ClearFence with the fence's token: %v", err)
	}
	k.write(ids[0], true)
	k.write("new", false)
	k.del(ids[1])
	if err := k.h.Source.ClearFence(k.ctx, k.res, "kit-a"); err != nil {
		t.Fatalf("ClearFence again: %v", err)
	}
	hist, _ := k.historical(0)
	k.importAll(hist)
	k.converged()
}

// testFenceExpires: a fence stops blocking at its expiry, so a crashed
// orchestrator cannot fence a resource forever (DESIGN.md "Two layers of
// enforcement").
func testFenceExpires(t *testing.T, f Factory) {
	k := newKit(t, f, "expiry")
	k.write("r000", false)
	const ttl = 400 * time.Millisecond
	set := time.Now()
	if err := k.h.Source.SetFence(k.ctx, k.res, contract.FenceFor(contract.FenceWrite, "kit-x", set.Add(ttl), 0)); err != nil {
		t.Fatalf("SetFence: %v", err)
	}
	_, err := k.tryWrite("r000", false)
	if time.Since(set) < ttl {
		checkLocked(t, "update before the fence expires", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := k.tryWrite("r000", false)
		if err == nil {
			break
		}
		if codeOf(err) != contract.CodeLocked || time.Now().After(deadline) {
			t.Fatalf("update %s after the fence's expiry: %v", time.Since(set), err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

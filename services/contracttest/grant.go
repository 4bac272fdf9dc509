package contracttest

import (
	"slices"
	"testing"
	"time"

	"github.com/cutover/cutover/services/contract"
)

// testImportGrant: a participant that implements contract.ImportGate
// applies a page carrying a Grant only while that grant is in force, and a
// revoked token stays retired (issue 14 #1). A participant without import
// grants is skipped: the orchestrator imports into it ungated.
func testImportGrant(t *testing.T, f Factory) {
	k := newKit(t, f, "grant")
	gate, ok := k.h.Target.(contract.ImportGate)
	if !ok {
		t.Skip("the target implements no contract.ImportGate: imports into it are ungated")
	}
	k.writeN("g", 5)
	hist, tok := k.historical(2)
	withGrant := func(pages []contract.Page, token string) []contract.Page {
		out := slices.Clone(pages)
		for i := range out {
			out[i].Grant = token
		}
		return out
	}
	empty := k.digests(k.h.Target)
	for _, p := range withGrant(hist, "kit-grant-1") {
		_, err := k.h.Target.Import(k.ctx, p)
		k.mustCode("Import without a grant", err, contract.CodeConflict)
	}
	if d := k.digests(k.h.Target); !slices.Equal(d, empty) {
		t.Fatalf("an import without a grant changed the target: %v", d)
	}
	if err := gate.GrantImport(k.ctx, k.res, "kit-grant-1", time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("GrantImport: %v", err)
	}
	for _, p := range withGrant(hist, "kit-grant-2") {
		_, err := k.h.Target.Import(k.ctx, p)
		k.mustCode("Import under another token's grant", err, contract.CodeConflict)
	}
	k.importAll(withGrant(hist, "kit-grant-1"))
	k.converged()
	if err := gate.RevokeImport(k.ctx, k.res, "kit-grant-1"); err != nil {
		t.Fatalf("RevokeImport: %v", err)
	}
	k.writeN("late", 2)
	before := k.digests(k.h.Target)
	for _, p := range withGrant(k.delta(tok, 0), "kit-grant-1") {
		_, err := k.h.Target.Import(k.ctx, p)
		k.mustCode("Import after the revoke", err, contract.CodeConflict)
	}
	if d := k.digests(k.h.Target); !slices.Equal(d, before) {
		t.Fatalf("an import after the revoke changed the target")
	}
	err := gate.GrantImport(k.ctx, k.res, "kit-grant-1", time.Now().Add(time.Hour))
	k.mustCode("GrantImport of a revoked token", err, contract.CodeConflict)
}

// testResetForCopy: a target that still holds an older copy of the
// resource (a move back within the cleanup window) keeps nothing the
// source no longer has once a copy starts with ResetForCopy under the
// attempt's grant; without the grant it deletes nothing (issue 14 #16).
func testResetForCopy(t *testing.T, f Factory) {
	k := newKit(t, f, "reset")
	gate, ok := k.h.Target.(contract.ImportGate)
	if !ok {
		t.Skip("the target implements no contract.ImportGate: imports into it are ungated")
	}
	// The target's older copy: everything, including "gone".
	k.writeN("r", 3)
	k.write("gone", false)
	old, _ := k.historical(0)
	k.importAll(old)
	k.converged()
	// At the source, "gone" is removed physically (no fence: the source
	// was the primary), so no tombstone will travel.
	k.del("gone")
	stale := k.digests(k.h.Target)
	_, err := gate.ResetForCopy(k.ctx, k.res, "kit-reset-1")
	k.mustCode("ResetForCopy without a grant", err, contract.CodeConflict)
	if d := k.digests(k.h.Target); !slices.Equal(d, stale) {
		t.Fatalf("ResetForCopy without a grant changed the target")
	}
	if err := gate.GrantImport(k.ctx, k.res, "kit-reset-1", time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("GrantImport: %v", err)
	}
	if n, err := gate.ResetForCopy(k.ctx, k.res, "kit-reset-1"); err != nil || n < 4 {
		t.Fatalf("ResetForCopy = %d, %v; want the 4 records of the older copy", n, err)
	}
	hist, _ := k.historical(2)
	for i := range hist {
		hist[i].Grant = "kit-reset-1"
	}
	k.importAll(hist)
	k.converged()
	if _, found := k.read("gone"); found {
		t.Fatal("a record the source no longer has survived the copy at the target")
	}
}

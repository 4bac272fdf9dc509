package conformance

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
)

// testAdmissionTable runs every row of the admission table
// (contract.AdmitCases) through the implementation's real operations, each
// on a resource of its own: the record is installed with Authorize, the
// operation sent with the row's stamp, and the verdict, the Retry-After of
// a write-fence refusal, the authority held afterwards and the records
// (unchanged by a refusal) checked. A row whose Untils are so close that
// the request outlived one is inconclusive and logged, not failed.
func testAdmissionTable(t T, f Factory) {
	h := f(t)
	cases, err := contract.AdmitCases(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, c0 := range cases {
		t.Run(fmt.Sprintf("line%d", c0.Line), func(t T) {
			k := &kit{t: t, h: h, ctx: t.Context(), res: h.resource(fmt.Sprintf("admit-%d", c0.Line))}
			k.teardown()
			k.admissionRow(c0.Line)
		})
	}
}

// admissionRow runs the table's row at line.
func (k *kit) admissionRow(line int) {
	t := k.t
	p, user := k.h.Source, k.h.SourceUser
	seeded := []byte("seed")
	if _, err := user.Write(k.res, "seed", seeded, nil, contract.Authority{}); err != nil {
		t.Fatalf("seeding %s: %v", k.res, err)
	}
	now := time.Now()
	cases, err := contract.AdmitCases(now)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(cases, func(c contract.AdmitCase) bool { return c.Line == line })
	c := cases[i]
	// margin: how long the row's Untils stay on the side the table says.
	margin := time.Duration(math.MaxInt64)
	for _, a := range []contract.Authority{c.Record, c.Stamp, c.Keep} {
		if a.Until != 0 {
			margin = min(margin, time.UnixMilli(a.Until).Sub(now).Abs())
		}
	}
	if c.Record.Stamped() {
		if _, err := p.Authorize(k.ctx, k.res, c.Record); err != nil {
			t.Fatalf("%s: installing the record %s: %v", c.Text, c.Record, err)
		}
	}
	var (
		opErr      error
		tombstoned bool
	)
	imported := contract.Record{ID: "imported", Kind: "k", Version: 1, CreatedAt: 1, UpdatedAt: 1, Data: []byte("imported")}
	switch c.Op {
	case contract.OpRead:
		_, _, opErr = user.Read(k.res, "seed", c.Stamp)
	case contract.OpUpdate:
		_, opErr = user.Write(k.res, "seed", []byte("updated"), nil, c.Stamp)
	case contract.OpCreate:
		_, opErr = user.Write(k.res, "created", []byte("created"), nil, c.Stamp)
	case contract.OpDelete:
		tombstoned, opErr = user.Delete(k.res, "seed", c.Stamp)
	case contract.OpExportHistorical:
		_, opErr = p.Export(k.ctx, contract.ExportRequest{Resource: k.res, Mode: contract.Historical, Authority: c.Stamp})
	case contract.OpExportDelta:
		_, opErr = p.Export(k.ctx, contract.ExportRequest{Resource: k.res, Mode: contract.Delta, Authority: c.Stamp})
	case contract.OpImport:
		_, opErr = p.Import(k.ctx, contract.ImportRequest{Resource: k.res, Authority: c.Stamp,
			Page: &contract.Page{Service: p.Service(), Resource: k.res, Mode: contract.Historical, Records: []contract.Record{imported}}})
	case contract.OpReset:
		_, opErr = p.Import(k.ctx, contract.ImportRequest{Resource: k.res, Authority: c.Stamp, Reset: true})
	case contract.OpDigests:
		_, opErr = p.Digests(k.ctx, k.res, c.Stamp)
	case contract.OpCleanup:
		_, opErr = p.Cleanup(k.ctx, k.res, c.Stamp)
	case contract.OpAuthorize:
		_, opErr = p.Authorize(k.ctx, k.res, c.Stamp)
	}
	if took := time.Since(now); took >= margin {
		t.Logf("%s: inconclusive, the request took %s and an Until was %s away", c.Text, took, margin)
		return
	}
	var mapped error // the user path's errors as the service boundary maps them
	if opErr != nil {
		mapped = services.ToError(opErr)
	}
	got := contract.VerdictOf(mapped, tombstoned)
	if got != c.Verdict {
		t.Fatalf("%s: %s (%v), want %s", c.Text, got, opErr, c.Verdict)
	}
	// Untils are whole milliseconds, rounded up: a millisecond more.
	if ra := contract.AsError(mapped); got == contract.Locked && (ra.RetryAfter <= 0 || ra.RetryAfter > c.RetryAfter+time.Millisecond) {
		t.Fatalf("%s: Retry-After %s, want in (0, %s]", c.Text, ra.RetryAfter, c.RetryAfter)
	}
	if got := k.held(p, k.res); got != c.Keep {
		t.Fatalf("%s: the participant holds %s afterwards, want %s", c.Text, got, c.Keep)
	}
	// What the records say: a refusal changed nothing, an allowed
	// operation did what it does.
	recs, err := p.ReadSlice(k.ctx, k.res, 0, math.MaxInt64)
	if err != nil {
		t.Fatalf("%s: ReadSlice: %v", c.Text, err)
	}
	byID := map[string]string{}
	for _, r := range recs {
		byID[r.ID] = string(r.Data)
	}
	allowed := c.Verdict == contract.Allow || c.Verdict == contract.Tombstone
	want := map[string]string{"seed": string(seeded)}
	if allowed {
		switch c.Op {
		case contract.OpUpdate:
			want["seed"] = "updated"
		case contract.OpCreate:
			want["created"] = "created"
		case contract.OpDelete, contract.OpCleanup:
			delete(want, "seed")
		case contract.OpReset:
			if c.Keep != c.Record { // a reset at the stamp held removes nothing
				delete(want, "seed")
			}
		case contract.OpImport:
			want["imported"] = "imported"
		}
	}
	if fmt.Sprint(byID) != fmt.Sprint(want) {
		t.Fatalf("%s: the participant holds %v afterwards, want %v", c.Text, byID, want)
	}
}

// checkLocked checks that a user-path error is the 423 of the write fence:
// CodeLocked, lock "fence write", a positive Retry-After (paper 001 §4.4,
// Table 4).
func checkLocked(t T, what string, err error) {
	t.Helper()
	e := services.ToError(err)
	if e == nil || e.Code != contract.CodeLocked || e.Lock != contract.LockWriteFence {
		t.Fatalf("%s under the write fence: %v, want code %s lock %q", what, err, contract.CodeLocked, contract.LockWriteFence)
	}
	if e.RetryAfter <= 0 || e.RetryAfter > contract.MaxRetryAfter {
		t.Fatalf("%s under the write fence: Retry-After %s, want in (0, %s]", what, e.RetryAfter, contract.MaxRetryAfter)
	}
}

// unchangedSince checks that the source has no change after tok and the
// digests are still before; the source is told it exports (the write
// fence) first if it does not.
func (k *kit) unchangedSince(tok uint64, before []contract.SliceDigest) {
	k.t.Helper()
	if k.src.RoleOf() != contract.RoleExporting {
		k.writeLock()
	}
	if ids := idsOf(k.delta(tok, 0)); len(ids) != 0 {
		k.t.Fatalf("refused operations changed records %q", ids)
	}
	if after := k.digests(k.h.Source); !slices.Equal(after, before) {
		k.t.Fatalf("refused operations changed the digests:\nbefore %v\nafter  %v", before, after)
	}
}

// testWriteFence: under the write fence every update, new write and delete
// is refused with CodeLocked before storage changes (paper 001 (A4), Table
// 4; DESIGN.md "Two layers of enforcement"), whether the request was
// stamped by the write lock, by the hard-delete lock before it (refused as
// moved: resolve again), or not at all; and an authority of an earlier
// revision (a stale replay of the hard-delete lock) does not lift it.
func testWriteFence(t T, f Factory) {
	k := newKit(t, f, "wfence")
	ids := k.writeN("r", 3)
	k.hardDelete()
	hd := k.src
	_, tok := k.historical(0)
	before := k.digests(k.h.Source)
	k.writeLock()

	_, err := k.tryWrite("new", true)
	checkLocked(t, "new write", err)
	_, err = k.tryWrite(ids[0], false)
	checkLocked(t, "update", err)
	checkLocked(t, "delete", k.tryDelete(ids[1]))
	_, err = k.h.SourceUser.Write(k.res, ids[0], []byte("x"), nil, k.src)
	checkLocked(t, "update routed by the write lock", err)
	_, err = k.h.SourceUser.Write(k.res, ids[0], []byte("x"), nil, hd)
	if e := services.ToError(err); e == nil || e.Lock != contract.LockMoved {
		t.Fatalf("update routed by the hard-delete lock under the write fence: %v, want lock %q", err, contract.LockMoved)
	}
	_, err = k.h.Source.Authorize(k.ctx, k.res, hd)
	k.mustCode("Authorize of the hard-delete lock after the write lock", err, contract.CodeConflict)
	_, err = k.tryWrite(ids[0], false)
	checkLocked(t, "update after a stale authority", err)
	k.unchangedSince(tok, before)
}

// testWriteFenceLapses: the write fence ends at its Until without anyone
// saying so (paper 001 Proposition 4: a crashed orchestrator cannot fence
// writes longer than the lock), and then the source is the primary.
func testWriteFenceLapses(t T, f Factory) {
	k := newKit(t, f, "lapse")
	k.writeN("r", 2)
	k.rev++
	k.src = contract.Authority{Rev: k.rev, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(400 * time.Millisecond))}
	k.authorize(k.h.Source, k.src)
	_, err := k.tryWrite("r000", false)
	if err == nil && time.Now().Before(time.UnixMilli(k.src.Until)) {
		t.Fatalf("update under the write fence: no error")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := k.tryWrite("r000", false)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("update 30 s after the write fence's Until: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if time.Now().Before(time.UnixMilli(k.src.Until)) {
		t.Fatalf("the write fence let an update through before its Until")
	}
	if _, err := k.h.Source.Export(k.ctx, contract.ExportRequest{Resource: k.res, Mode: contract.Delta, Authority: k.src}); err == nil {
		t.Fatalf("a delta export under a lapsed write fence was served")
	} else {
		k.mustCode("delta export under a lapsed write fence", err, contract.CodeConflict)
	}
}

// testResetForCopy: a target that holds an older copy (a move back within
// the cleanup window) is emptied by the reset that starts an attempt's
// copy, so it keeps nothing the source no longer has; a reset under an
// older authority than the target holds removes nothing, nor does one at
// the authority it holds (a second driver's reset, landing after pages of
// the same revision).
func testResetForCopy(t T, f Factory) {
	k := newKit(t, f, "reset")
	ids := k.writeN("r", 4)
	k.hardDelete()
	hist, _ := k.historical(0)
	k.importAll(hist)
	old := k.tgt
	// The copy moved on (the target is not the resource's location now:
	// a rollback, or the resource left it) and a later attempt is about to
	// copy again; the record r000 is gone at the source meanwhile,
	// physically.
	k.authorize(k.h.Target, k.next(contract.RoleSecondary))
	k.authorize(k.h.Source, k.next(contract.RolePrimary))
	k.src = contract.Authority{}
	k.del(ids[0])
	k.hardDelete()
	// A stale reset (the earlier attempt's) removes nothing.
	_, err := k.h.Target.Import(k.ctx, contract.ImportRequest{Resource: k.res, Authority: old, Reset: true})
	k.mustCode("reset under an older authority", err, contract.CodeConflict)
	if d := k.digests(k.h.Target); len(d) == 0 {
		t.Fatalf("a refused reset emptied the target")
	}
	res, err := k.h.Target.Import(k.ctx, contract.ImportRequest{Resource: k.res, Authority: k.tgt, Reset: true})
	if err != nil {
		t.Fatalf("reset: %v", err)
	}
	if res.Removed < 4 {
		t.Fatalf("reset removed %d records, want the 4 the target held", res.Removed)
	}
	if d := k.digests(k.h.Target); len(d) != 0 {
		t.Fatalf("target digests after the reset: %v", d)
	}
	hist, _ = k.historical(0)
	k.importAll(hist)
	// The same reset again, as a second driver of the step would send it
	// after the pages above.
	res, err = k.h.Target.Import(k.ctx, contract.ImportRequest{Resource: k.res, Authority: k.tgt, Reset: true})
	if err != nil {
		t.Fatalf("a second reset at the authority held: %v", err)
	}
	if res.Removed != 0 {
		t.Fatalf("a second reset at the authority held removed %d records, want 0", res.Removed)
	}
	k.converged()
	if _, found := k.read(ids[0]); found {
		t.Fatalf("the reset target still serves %q, deleted at the source", ids[0])
	}
}

// testLateImport: once the target holds a newer authority — the swap made
// it the primary, a rollback a secondary, a later attempt's copy started —
// a page of the attempt that has ended changes nothing, whatever it
// carries (no resurrection, no data where the resource never lives).
func testLateImport(t T, f Factory) {
	k := newKit(t, f, "late")
	k.writeN("r", 3)
	k.hardDelete()
	hist, _ := k.historical(0)
	k.importAll(hist)
	late := hist[0]
	late.Records = slices.Clone(late.Records)
	for i := range late.Records {
		late.Records[i].Version += 100
		late.Records[i].Data = []byte("late")
	}
	for _, role := range []contract.Role{contract.RolePrimary, contract.RoleSecondary, contract.RoleImporting} {
		stale := k.tgt
		now := k.next(role)
		k.authorize(k.h.Target, now)
		before := k.digests(k.h.Target)
		_, err := k.h.Target.Import(k.ctx, contract.ImportRequest{Resource: k.res, Authority: stale, Page: &late})
		k.mustCode(fmt.Sprintf("an import of an ended attempt at a target now %s", now), err, contract.CodeConflict)
		if after := k.digests(k.h.Target); !slices.Equal(after, before) {
			t.Fatalf("a refused late import at a %s changed the target", role)
		}
		k.tgt = contract.Authority{Rev: now.Rev, Role: contract.RoleImporting}
		if role != contract.RoleImporting {
			k.tgt = k.next(contract.RoleImporting)
		}
	}
}

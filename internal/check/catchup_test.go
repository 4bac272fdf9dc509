package check_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/internal/check"
	"github.com/cutover/cutover/internal/workload"
	"github.com/cutover/cutover/kvrouting"
)

// A watch that stops delivering (its server was killed; it is recreated
// only after missed heartbeats) must not leave the lock analysis with a
// history that ends before a swap: CatchUp adds the revisions the bucket
// keeps, and says so when the bucket no longer keeps them all.
func TestObserverCatchesUpFromTheBucket(t *testing.T) {
	ctx, sys, c := startSystem(t)
	led := workload.NewLedger()
	if err := (workload.Seeder{Client: c, Ledger: led}).All(ctx, []workload.Conv{{ID: "late", Size: 1}, {ID: "gone", Size: 1}}, nil); err != nil {
		t.Fatal(err)
	}
	obs, err := check.Watch(ctx, sys.JS)
	if err != nil {
		t.Fatal(err)
	}
	late := kvrouting.Resource{Kind: chat.KindConversation, ID: "late"}
	gone := kvrouting.Resource{Kind: chat.KindConversation, ID: "gone"}
	for _, r := range []kvrouting.Resource{late, gone} {
		d, err := sys.Locker.Get(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if err := obs.CatchUp(ctx, r, d.Revision, 0); err != nil {
			t.Fatalf("%s before anything was missed: %v", r, err)
		}
	}
	obs.Stop() // the watch delivers nothing more

	// late: a pre-lock and its release, two revisions the watch missed.
	g, err := sys.Locker.PreLock(ctx, late, sys.Target, "m-late")
	if err != nil {
		t.Fatal(err)
	}
	d, err := sys.Locker.Release(ctx, late, g.Token, g.Doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.CatchUp(ctx, late, d.Revision, 0); err != nil {
		t.Fatal(err)
	}
	hs := obs.History(late.String())
	if n := len(hs); n < 3 || hs[n-2].Rev != g.Doc.Revision || hs[n-1].Rev != d.Revision ||
		hs[n-2].Doc.Primary.Lock.Type != kvrouting.LockPre || hs[n-2].Created.IsZero() {
		t.Fatalf("history after the catch-up: %+v, want it to end with the pre-lock (rev %d) and the release (rev %d)", hs, g.Doc.Revision, d.Revision)
	}

	// gone: more revisions than the bucket keeps per key: the ones the
	// watch missed are partly gone, and CatchUp says so.
	st, err := sys.Locker.Store().KV().Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range int(st.History())/2 + 1 {
		g, err := sys.Locker.PreLock(ctx, gone, sys.Target, fmt.Sprintf("m-gone-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if d, err = sys.Locker.Release(ctx, gone, g.Token, g.Doc); err != nil {
			t.Fatal(err)
		}
	}
	if err := obs.CatchUp(ctx, gone, d.Revision, 0); !errors.Is(err, check.ErrBehind) {
		t.Fatalf("CatchUp past the bucket's history: %v, want ErrBehind", err)
	}
}

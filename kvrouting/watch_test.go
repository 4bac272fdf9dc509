package kvrouting

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	cnats "github.com/cutover/cutover/nats"
)

func nextChange(t *testing.T, w *Watcher) LockChange {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := w.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every transition kind, in order, with the token never in the typed
// change (only in Doc); a rollback's release, a force release and a
// delete included.
func TestWatchKinds(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	w, err := e.store.Watch(ctx, "conv")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	res := mustRegister(t, e, "k", "us")
	g, err := e.lk.PreLock(ctx, res, "eu", "m1")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	d, err := e.lk.EscalateHardDelete(ctx, res, g.Token, g.Doc)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	if d, err = e.lk.Renew(ctx, res, g.Token, d); err != nil {
		t.Fatal(err)
	}
	if _, err = e.lk.Release(ctx, res, g.Token, d); err != nil {
		t.Fatal(err)
	}
	g2, err := e.lk.PreLock(ctx, res, "eu", "m2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.lk.ForceRelease(ctx, res, []string{"ann", "bob"}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.KV().Delete(ctx, res.Key()); err != nil {
		t.Fatal(err)
	}
	want := []ChangeKind{Registered, PreLocked, Escalated, Renewed, Released, PreLocked, ForceReleased, Deleted}
	for i, k := range want {
		c := nextChange(t, w)
		if c.Kind != k || c.Resource != res {
			t.Fatalf("change %d: %s of %s, want %s (%+v)", i, c.Kind, c.Resource, k, c.Doc)
		}
		if c.Kind == PreLocked && (c.Primary.Lock != LockPre || c.Secondary.Region != "eu" || c.Target != "eu") {
			t.Fatalf("pre-lock change %+v", c)
		}
		if c.Kind == PreLocked && c.MigrationID != []string{"m1", "m2"}[min(i/5, 1)] {
			t.Fatalf("pre-lock %d: migration %q", i, c.MigrationID)
		}
		if s := fmt.Sprintf("%v %v %v", c.Primary, c.Secondary, c.Kind); strings.Contains(s, string(g.Token)) || strings.Contains(s, string(g2.Token)) {
			t.Fatal("a token in the typed change")
		}
	}
}

// A slow consumer gets every change, in order (back-pressure, no drops);
// a watch resumes from a revision; a revision the stream no longer keeps
// is ErrHistoryGone.
func TestWatchBackPressureAndResume(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	w, err := e.store.Watch(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const n = 200
	for i := range n {
		mustRegister(t, e, fmt.Sprintf("bp%03d", i), "us")
	}
	var last uint64
	for i := range n {
		c := nextChange(t, w)
		if c.Resource.ID != fmt.Sprintf("bp%03d", i) || c.Kind != Registered || c.Revision <= last {
			t.Fatalf("change %d: %+v (after revision %d)", i, c, last)
		}
		last = c.Revision
	}
	// Resume after the 100th.
	r, err := e.store.Watch(ctx, "", WithStartRevision(last-99))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// (A first sight of a document with no lock and no migration history
	// reads as its registration.)
	if c := nextChange(t, r); c.Resource.ID != "bp100" || c.Kind != Registered {
		t.Fatalf("resumed at %+v, want bp100", c)
	}
	if _, err := e.store.Watch(ctx, "", WithStartRevision(0)); err != nil {
		t.Fatal(err) // 0: from now
	}
	// Purge the stream's beginning: resuming there is ErrHistoryGone.
	str, err := e.js.Stream(ctx, cnats.RoutingHistoryStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := str.Purge(ctx, jetstream.WithPurgeKeep(10)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Watch(ctx, "", WithStartRevision(1)); !errors.Is(err, ErrHistoryGone) {
		t.Fatalf("resume from a purged revision: %v, want ErrHistoryGone", err)
	}
	if _, err := e.store.Watch(ctx, "bad filter!"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad filter: %v", err)
	}
}

// A durable watch resumes after a restart at the first change it had not
// acknowledged: a change is acknowledged when the next one is asked for,
// so the one being handled at the crash comes again (at least once).
func TestWatchDurable(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	w, err := e.store.Watch(ctx, "conv", WithDurable("svc-a"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"d1", "d2", "d3"} {
		mustRegister(t, e, id, "us")
	}
	if c := nextChange(t, w); c.Resource.ID != "d1" {
		t.Fatalf("first %s", c.Resource)
	}
	if c := nextChange(t, w); c.Resource.ID != "d2" { // acknowledges d1
		t.Fatalf("second %s", c.Resource)
	}
	w.Close() // "crash" while handling d2
	w2, err := e.store.Watch(ctx, "conv", WithDurable("svc-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	got := []string{nextChange(t, w2).Resource.ID, nextChange(t, w2).Resource.ID}
	if got[0] != "d2" || got[1] != "d3" {
		t.Fatalf("after the restart: %v, want [d2 d3]", got)
	}
}

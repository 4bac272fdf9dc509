package check_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/internal/check"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/internal/workload"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// The checker fails on what it exists to catch: a store that lost an
// acknowledged write or edit, a delete that came back, a lock left on a
// primary, a resource not at the target; and it counts, without failing,
// a message no client sent and a write whose reply never came.
func TestCheckCatchesViolations(t *testing.T) {
	ctx, sys, c := startSystem(t)
	led := workload.NewLedger()
	convs := []workload.Conv{{ID: "ok", Size: 3}, {ID: "bad", Size: 6}}
	if err := (workload.Seeder{Client: c, Ledger: led}).All(ctx, convs, nil); err != nil {
		t.Fatal(err)
	}
	obs, err := check.Watch(ctx, sys.JS)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Stop()
	cfg := check.Config{Ledger: led, Convs: []string{"ok", "bad"}, Reader: c, Routing: sys.Locker.Get, Observer: obs,
		ClockSkew: sys.Config.ClockSkew, WriteLease: sys.Config.Locks.WriteLease, Stamps: check.RegionStamps(sys.Regions)}

	rep, err := check.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if bad := rep.Invariants.Failures(); len(bad) != 0 {
		t.Fatalf("a clean run fails: %v %v", bad, rep.Invariants.Samples)
	}

	// Behind the ledger's back: an acknowledged message edited and one
	// deleted (both lost writes), an acknowledged delete present again
	// (resurrected), a message no client sent, an uncertain edit applied.
	mustOK(t)(c.EditMessage(ctx, "bad", workload.SeedID(0), "not what was acknowledged"))
	mustOK(t)(c.DeleteMessage(ctx, "bad", workload.SeedID(1)))
	led.AckedDelete("bad", workload.SeedID(2))
	mustOK(t)(c.PostMessage(ctx, "bad", client.NewMessage{ID: "phantom", Text: "no client sent this"}))
	led.Uncertain("bad", workload.SeedID(3), "maybe", false)
	mustOK(t)(c.EditMessage(ctx, "bad", workload.SeedID(3), "maybe"))
	rep, err = check.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	inv := rep.Invariants
	if inv.LostWrites != 2 || inv.Resurrected != 1 || inv.Unacknowledged != 1 || inv.Uncertain != 1 {
		t.Fatalf("got %+v", inv)
	}

	// A run that expects every resource at a target region.
	cfg.Ledger, cfg.Convs, cfg.Source, cfg.Target = workload.NewLedger(), []string{"ok"}, sys.Source, sys.Target
	rep, err = check.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Invariants.NotAtTarget != 1 {
		t.Fatalf("not at target: %+v", rep.Invariants)
	}
	if bad := rep.Invariants.Failures(); !slices.ContainsFunc(bad, func(s string) bool { return strings.Contains(s, "not at the target") }) {
		t.Fatalf("failures %v", bad)
	}
}

func mustOK(t *testing.T) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// One vocabulary: demo, chaos and the cluster test write the same keys,
// with chaos's old names beside the unified ones.
func TestInvariantsJSON(t *testing.T) {
	b, err := json.Marshal(check.Invariants{Resurrected: 2, DualAuthorityWrites: 3, MaxWriteFenceMs: 12, WriteLockExpiryMs: 10})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{
		"lost_writes": 0, "resurrected": 2, "resurrected_deletes": 2, "dual_authority_writes": 3,
		"writes_at_non_authoritative_location": 3, "partial_cutovers": 0, "orphaned_locks": 0, "not_at_target": 0,
		"migrations_not_completed_or_cleanly_rolled_back": 0, "stale_token_ops": 0, "paused_holder_ops_after_expiry": 0,
		"max_write_fence_ms": 12, "write_lock_expiry_ms": 10, "unacknowledged_present": 0, "unacknowledged_applied": 0,
		"fenced_primaries": 0, "target_leftovers": 0, "stale_reads": 0,
	} {
		if got, ok := m[k]; !ok || got != want {
			t.Errorf("%s: %v (present %v), want %v", k, got, ok, want)
		}
	}
	bad := check.Invariants{Resurrected: 2, DualAuthorityWrites: 3, MaxWriteFenceMs: 12, WriteLockExpiryMs: 10}.Failures()
	if len(bad) != 3 {
		t.Fatalf("failures %v", bad)
	}
}

// The checker fails on a fence left in force at a primary and on records
// left in a region that is neither the primary nor an old primary within
// its cleanup window (issue 14 #10), and both are 0 on a clean run.
func TestCheckCatchesFencedPrimaryAndLeftovers(t *testing.T) {
	ctx, sys, c := startSystem(t)
	obs, err := check.Watch(ctx, sys.JS) // before the resources exist: their whole history
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Stop()
	led := workload.NewLedger()
	convs := []workload.Conv{{ID: "fenced", Size: 2}, {ID: "leak", Size: 2}}
	if err := (workload.Seeder{Client: c, Ledger: led}).All(ctx, convs, nil); err != nil {
		t.Fatal(err)
	}
	cfg := check.Config{Ledger: led, Convs: []string{"fenced", "leak"}, Reader: c, Routing: sys.Locker.Get, Observer: obs,
		ClockSkew: sys.Config.ClockSkew, WriteLease: sys.Config.Locks.WriteLease, Stamps: check.RegionStamps(sys.Regions),
		Authorities: check.RegionAuthorities(sys.Regions), Regions: sys.Config.Regions, CleanupWindow: time.Minute}
	rep, err := check.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if inv := rep.Invariants; inv.FencedPrimaries != 0 || inv.TargetLeftovers != 0 || len(inv.Failures()) != 0 {
		t.Fatalf("a clean run: %+v", inv)
	}
	storeAt := func(region string) *store.Store {
		for _, p := range sys.Regions[region].ParticipantsFor(chat.KindConversation) {
			if sp, ok := p.(interface{ Store() *store.Store }); ok && sp.Store() != nil {
				return sp.Store()
			}
		}
		t.Fatalf("no store at %s", region)
		return nil
	}
	// Mutations behind the system's back: an authority stranded at the
	// primary (one that refuses what routing allows); a record imported
	// where the resource never was the primary.
	fenced, err := sys.Locker.Get(ctx, kvrouting.Resource{Kind: "conv", ID: "fenced"})
	if err != nil {
		t.Fatal(err)
	}
	stranded := contract.Authority{Rev: fenced.Revision, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}
	if _, err := storeAt(sys.Source).Repair("conv/fenced", stranded); err != nil {
		t.Fatal(err)
	}
	if _, _, err := storeAt(sys.Target).Import("conv/leak", contract.Authority{Rev: 1, Role: contract.RoleImporting}, false, []store.Record{{ID: "late", Kind: "message", Version: 1, CreatedAt: 1, Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	rep, err = check.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	inv := rep.Invariants
	if inv.FencedPrimaries != 1 || inv.TargetLeftovers != 1 {
		t.Fatalf("fenced primaries %d, leftovers %d, want 1 and 1: %v", inv.FencedPrimaries, inv.TargetLeftovers, inv.Samples)
	}
	if bad := inv.Failures(); len(bad) != 2 {
		t.Fatalf("failures %v", bad)
	}
}

// A removed reaction (a physical delete) that is present again counts as
// resurrected, an acknowledged one that is gone as lost; reactions whose
// last change has no known outcome may be either (issue 14 #10).
func TestCheckCatchesReactionResurrection(t *testing.T) {
	ctx, sys, c := startSystem(t)
	led := workload.NewLedger()
	if err := (workload.Seeder{Client: c, Ledger: led}).All(ctx, []workload.Conv{{ID: "r", Size: 2}}, nil); err != nil {
		t.Fatal(err)
	}
	msg := workload.SeedID(0)
	for _, e := range []string{"tada", "eyes", "rocket"} {
		if err := c.React(ctx, "r", msg, e); err != nil {
			t.Fatal(err)
		}
	}
	key := func(e string) workload.ReactionKey {
		return workload.ReactionKey{Message: msg, User: "alice", Emoji: e}
	}
	led.AckedReaction("r", key("tada"), true)
	led.AckedReaction("r", key("eyes"), true)
	led.UncertainReaction("r", key("rocket"))
	cfg := check.Config{Ledger: led, Convs: []string{"r"}, Reader: c, Routing: sys.Locker.Get}
	rep, err := check.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if bad := rep.Invariants.Failures(); len(bad) != 0 {
		t.Fatalf("a clean run fails: %v %v", bad, rep.Invariants.Samples)
	}
	// The ledger saw "tada" removed, yet it is there; "eyes" acknowledged,
	// yet removed behind its back.
	led.AckedReaction("r", key("tada"), false)
	if err := c.Unreact(ctx, "r", msg, "eyes"); err != nil {
		t.Fatal(err)
	}
	rep, err = check.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if inv := rep.Invariants; inv.Resurrected != 1 || inv.LostWrites != 1 {
		t.Fatalf("resurrected %d lost %d, want 1 and 1: %v", inv.Resurrected, inv.LostWrites, inv.Samples)
	}
}

// startSystem starts an in-memory system without workers and a client of
// alice's on its API, both closed when t ends.
func startSystem(t *testing.T) (context.Context, *system.System, *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	sys, err := system.Start(ctx, system.Config{InMemory: true, Workers: -1, NoProjector: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Close() })
	c, err := client.New(sys.APIURL, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return ctx, sys, c
}

// A read by a message's writer must show its own acknowledged operations
// (read your writes) and never a message it deleted; a write of unknown
// outcome may or may not show (issue 14 #10: reads are kept and checked).
func TestCheckCatchesStaleReads(t *testing.T) {
	ctx, sys, c := startSystem(t)
	led := workload.NewLedger()
	if err := (workload.Seeder{Client: c, Ledger: led}).All(ctx, []workload.Conv{{ID: "s", Size: 1}}, nil); err != nil {
		t.Fatal(err)
	}
	post := func(id, text string) {
		mustOK(t)(c.PostMessage(ctx, "s", client.NewMessage{ID: id, Text: text}))
		led.Acked("s", id, text)
	}
	post("x", "a")
	led.ReadByWriter("s", "x", true, "a")
	mustOK(t)(c.EditMessage(ctx, "s", "x", "b"))
	led.Acked("s", "x", "b")
	led.ReadByWriter("s", "x", true, "b")
	led.Uncertain("s", "x", "c", false)
	led.ReadByWriter("s", "x", true, "c") // a write of unknown outcome may show
	led.ReadByWriter("s", "x", true, "b") // ... or not
	post("y", "gone")
	mustOK(t)(c.DeleteMessage(ctx, "s", "y"))
	led.AckedDelete("s", "y")
	led.ReadByWriter("s", "y", false, "")
	cfg := check.Config{Ledger: led, Convs: []string{"s"}, Reader: c, Routing: sys.Locker.Get}
	rep, err := check.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if bad := rep.Invariants.Failures(); len(bad) != 0 {
		t.Fatalf("a clean run fails: %v %v", bad, rep.Invariants.Samples)
	}
	// Mutations: the writer reads its old text after its acknowledged
	// edit, and finds the message it deleted.
	led.ReadByWriter("s", "x", true, "a")
	led.ReadByWriter("s", "y", true, "gone")
	rep, err = check.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if inv := rep.Invariants; inv.StaleReads != 2 || inv.LostWrites != 0 || inv.Resurrected != 0 {
		t.Fatalf("stale reads %d (lost %d, resurrected %d), want 2: %v", inv.StaleReads, inv.LostWrites, inv.Resurrected, inv.Samples)
	}
}

package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/app/api"
	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/app/chat/messages"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// TestStaleRouting: a request that decided "allow" on a stale routing read
// (a cache tier past the lock change) is refused by the store as routed by
// an older revision than the authority it holds ("moved"), resolves again
// from the leader and meets the lock: deletes become tombstones, writes
// get 423 under the write lock; and the write fence ends with its lock
// (DESIGN.md "Two layers of enforcement").
func TestStaleRouting(t *testing.T) {
	e := newEnv(t, envOptions{tierTTL: time.Hour})
	ctx := context.Background()
	conv := "stale"
	res := chat.ConvResource(conv)
	base := "/v1/conversations/" + conv + "/messages"
	e.createConv(conv, "alice")
	for _, id := range []string{"m1", "m2", "m3"} {
		e.post(conv, "alice", id, "text "+id) // the first post caches the unlocked document
	}

	unlocked, err := e.locker.Get(ctx, convRes(conv))
	if err != nil {
		t.Fatal(err)
	}
	tok, doc := e.lockTo(convRes(conv), regionB, "hard-delete")
	stale := func() {
		t.Helper()
		rs, err := e.rv.Resolve(ctx, convRes(conv))
		if err != nil {
			t.Fatal(err)
		}
		if rs.Source != kvrouting.FromCache || rs.Doc.Primary.Lock.Type != kvrouting.LockNone {
			t.Fatalf("resolver gives %s lock from %s; the test needs a stale unlocked cache entry", rs.Doc.Primary.Lock.Type, rs.Source)
		}
	}
	stale()

	// Tombstone deletes at the source: the stale "allow" delete becomes a
	// tombstone.
	e.authorize(res, regionA, doc)
	r := e.must(e.do(req{method: "DELETE", path: base + "/m1", auth: user("alice")}), 204)
	if r.header.Get("X-Cutover-Delete") != "tombstone" {
		t.Fatalf("stale delete under the hard-delete lock: X-Cutover-Delete %q", r.header.Get("X-Cutover-Delete"))
	}
	if rec, ok := e.storedRecord(regionA, "messages", res, "m1"); !ok || !rec.Deleted {
		t.Fatalf("m1 after a fenced delete: %+v (found %v)", rec, ok)
	}

	// The write fence: writes are refused, nothing changes. (The stale
	// cache entry went with the delete's resolving again; the store
	// refuses a write decided on it as moved, one decided on the write
	// lock with the write fence.)
	wdoc, err := e.locker.EscalateWrite(ctx, convRes(conv), tok, doc)
	if err != nil {
		t.Fatalf("EscalateWrite: %v", err)
	}
	e.authorize(res, regionA, wdoc)
	for _, p := range e.regions[regionA].ParticipantsFor(chat.KindConversation) {
		st := p.(interface{ Store() *store.Store }).Store()
		for _, c := range []struct {
			routed contract.Authority
			lock   string
		}{{unlocked.AuthorityAt(regionA, skew), contract.LockMoved}, {wdoc.AuthorityAt(regionA, skew), contract.LockWriteFence}} {
			_, err := st.PutAt(res, store.Record{ID: "direct", Kind: "message", Data: []byte("x")}, true, c.routed)
			if e := contract.AsError(err); e == nil || e.Lock != c.lock {
				t.Fatalf("%s: a write routed as %s under the write fence: %v, want lock %q", p.Service(), c.routed, err, c.lock)
			}
		}
	}
	before := e.messages(conv, "alice", "")
	eb := checkErrorShape(t, e.must(e.do(req{method: "POST", path: base, auth: user("alice"), body: map[string]string{"id": "m4", "text": "x"}}), 423))
	if eb.Error.Lock != kvrouting.ReasonWriteLock {
		t.Fatalf("423 names lock %q, want the write lock the request met once resolved again", eb.Error.Lock)
	}
	e.must(e.do(req{method: "PATCH", path: base + "/m2", auth: user("alice"), body: map[string]string{"text": "edited"}}), 423)
	e.must(e.do(req{method: "DELETE", path: base + "/m3", auth: user("alice")}), 423)
	e.must(e.do(req{method: "PUT", path: base + "/m2/reactions/ok", auth: user("alice")}), 423)
	e.must(e.do(req{method: "PUT", path: "/v1/conversations/" + conv + "/read", auth: user("alice"), body: map[string]string{"message_id": "m2"}}), 423)
	after := e.messages(conv, "alice", "")
	if len(before) != 2 || len(after) != 2 || after[0].Text != before[0].Text || after[1].Text != "text m3" {
		t.Fatalf("refused writes changed messages:\nbefore %+v\nafter  %+v", before, after)
	}

	// The write fence ends with its lock: past the write lock's expiry
	// (plus skew) the stale route's writes go through again, resolved
	// again to the lapsed lock's document.
	e.clock.Advance(wdoc.Primary.Lock.Expiry.Sub(e.clock.Now()) + skew + time.Second)
	e.post(conv, "alice", "m4", "after the fence expired")
	e.must(e.do(req{method: "DELETE", path: base + "/m3", auth: user("alice")}), 204)
}

// TestMoveBackIsNotRefusedByThePreviousAuthority: a conversation moved
// A → B leaves A's stores a secondary at the swap's revision; moved back
// B → A, its users at A are served at once, before anyone tells A's stores
// of the move back: their requests, routed by the move back's revision,
// bring it. A write decided on the routing from before the move away is
// still refused as moved.
func TestMoveBackIsNotRefusedByThePreviousAuthority(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	e.createConv("back", "ann")
	e.post("back", "ann", "m1", "before the moves")
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: "back"}
	before, err := e.locker.Get(ctx, res)
	if err != nil {
		t.Fatal(err)
	}

	// A → B, and A's stores told, as the orchestrator tells them.
	tok, doc := e.lockTo(res, regionB, "write")
	away, err := e.locker.Swap(ctx, res, tok, doc)
	if err != nil {
		t.Fatal(err)
	}
	e.authorize("conv/back", regionA, away)
	// Pinned to A while B is primary: refused (by the routing decision).
	e.must(e.do(req{method: "POST", path: "/v1/conversations/back/messages", auth: user("ann"), region: regionA,
		body: map[string]any{"id": "m2", "text": "at the old location"}}), 423)

	// B → A: A's stores still say secondary, and the users' requests
	// bring the move back.
	tok, doc = e.lockTo(res, regionA, "write")
	if _, err := e.locker.Swap(ctx, res, tok, doc); err != nil {
		t.Fatal(err)
	}
	e.post("back", "ann", "m3", "after the move back")
	e.must(e.do(req{method: "DELETE", path: "/v1/conversations/back/messages/m1", auth: user("ann")}), 204)

	// A writer deciding on the routing from before the move away is still
	// refused (a stale router).
	for _, p := range e.regions[regionA].ParticipantsFor(chat.KindConversation) {
		sp, ok := p.(interface{ Store() *store.Store })
		if !ok || sp.Store() == nil {
			continue
		}
		_, err := sp.Store().PutAt("conv/back", store.Record{ID: "m4", Kind: "message", Data: []byte("stale")}, true, before.AuthorityAt(regionA, skew))
		if e := contract.AsError(err); e == nil || e.Lock != contract.LockMoved {
			t.Fatalf("%s: a write decided before the move away: %v", p.Service(), err)
		}
	}
}

// TestStaleRouterReResolves: an API whose routing cache is an hour stale
// sends a write to the old location after a migration; the old location's
// stores, secondaries since the swap, refuse it ("moved"), the server reads
// the routing from the leader into its caches and runs the write again at
// the new primary: the client sees 201 from the new region, not a 423 for
// the cache's TTL. A write pinned to the old location is still refused.
func TestStaleRouterReResolves(t *testing.T) {
	e := newEnv(t, envOptions{tierTTL: time.Hour})
	ctx := context.Background()
	e.createConv("rr", "ann")
	e.post("rr", "ann", "m1", "before the move") // the cache now holds the unlocked document at A

	res := kvrouting.Resource{Kind: chat.KindConversation, ID: "rr"}
	tok, doc := e.lockTo(res, regionB, "write")
	e.copyAll("conv/rr", regionA, regionB, contract.Historical, nil, 0)
	swapped, err := e.locker.Swap(ctx, res, tok, doc)
	if err != nil {
		t.Fatal(err)
	}
	e.authorize("conv/rr", regionA, swapped)

	before := e.api.ReResolved()
	r := e.must(e.do(req{method: "POST", path: "/v1/conversations/rr/messages", auth: user("ann"),
		body: map[string]any{"id": "m2", "text": "after the move, through a stale cache"}}), 201)
	if got := r.header.Get(api.ServedByHeader); got != regionB {
		t.Fatalf("served by %q, want the new primary %s", got, regionB)
	}
	if n := e.api.ReResolved() - before; n != 1 {
		t.Fatalf("%d re-resolutions, want 1", n)
	}
	if _, ok := e.storedRecord(regionA, "messages", "conv/rr", "m2"); ok {
		t.Fatal("the write landed at the old location")
	}
	// The cache is fresh now: the next write goes straight to B.
	e.post("rr", "ann", "m3", "next")
	if n := e.api.ReResolved() - before; n != 1 {
		t.Fatalf("%d re-resolutions after a fresh cache, want 1", n)
	}
	// Pinned to the old location: refused, re-resolution or not.
	e.must(e.do(req{method: "POST", path: "/v1/conversations/rr/messages", auth: user("ann"), region: regionA,
		body: map[string]any{"id": "m4", "text": "pinned"}}), 423)
}

// TestNoStaleReadAfterTheSwap: an API whose routing cache is an hour stale
// reads a conversation after it moved; the old location's stores hold an
// authority newer than that routing (the swap's), so the read is refused
// there, the server resolves again and reads at the new primary: a message
// acknowledged there after the swap is in the answer. During Phase 3 the
// same stale read re-resolves and is served by the source.
func TestNoStaleReadAfterTheSwap(t *testing.T) {
	e := newEnv(t, envOptions{tierTTL: time.Hour})
	ctx := context.Background()
	e.createConv("sr", "ann")
	e.post("sr", "ann", "m1", "before the move")
	if got := e.messages("sr", "ann", ""); len(got) != 1 {
		t.Fatalf("%d messages", len(got))
	}
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: "sr"}
	tok, doc := e.lockTo(res, regionB, "write")
	e.authorize("conv/sr", regionA, doc)
	e.copyAll("conv/sr", regionA, regionB, contract.Historical, nil, 0)
	swapped, err := e.locker.Swap(ctx, res, tok, doc)
	if err != nil {
		t.Fatal(err)
	}
	e.authorize("conv/sr", regionA, swapped)
	// A message acknowledged at the new primary after the swap.
	if _, _, err := e.regions[regionB].Messages().Post(ctx, kvrouting.Decision{Primary: regionB, Authority: swapped.AuthorityAt(regionB, skew)}, "sr", messages.Message{ID: "m2", Author: "ann", Text: "after the swap"}); err != nil {
		t.Fatal(err)
	}
	got := e.messages("sr", "ann", "")
	if len(got) != 2 || got[1].ID != "m2" {
		t.Fatalf("a read after the swap missed the write acknowledged at the new primary: %+v", got)
	}
	// Pinned to the old location, the read is of that copy, as it is.
	if got := e.messages("sr", "ann", regionA); len(got) != 1 {
		t.Fatalf("pinned read of the old copy: %+v", got)
	}

	// Phase 3 of another conversation: a stale read is refused at the
	// source too, re-resolved (through to the leader: the document is
	// locked) and served by the source, still the primary.
	e.createConv("sp", "ann")
	e.post("sp", "ann", "m1", "x")
	e.messages("sp", "ann", "") // cached, unlocked
	_, doc = e.lockTo(kvrouting.Resource{Kind: chat.KindConversation, ID: "sp"}, regionB, "write")
	e.authorize("conv/sp", regionA, doc)
	before := e.api.ReResolved()
	r := e.must(e.do(req{method: "GET", path: "/v1/conversations/sp/messages", auth: user("ann")}), 200)
	if got := r.header.Get(api.ServedByHeader); got != regionA || e.api.ReResolved()-before != 1 {
		t.Fatalf("phase 3 read served by %q after %d re-resolutions", got, e.api.ReResolved()-before)
	}
}

// TestTwoViewsOfTheRoutingReResolve: the front resolver (region A's, a day
// stale) sends a read to B, where the resource was; B's own resolver knows
// it moved back to A. The read resolves again and A serves it, with the
// message acknowledged there since. (The route refuses a region whose own
// view names another primary as "moved"; this scenario is also caught by
// the stores' checks, so the test does not fail without that rule — chaos
// seed 11 found a stale read served at such a region.)
func TestTwoViewsOfTheRoutingReResolve(t *testing.T) {
	e := newEnv(t, envOptions{frontTTL: 48 * time.Hour})
	ctx := context.Background()
	e.createConv("tv", "ann")
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: "tv"}
	move := func(from, to string) {
		t.Helper()
		tok, doc := e.lockTo(res, to, "write")
		e.copyAll("conv/tv", from, to, contract.Historical, nil, 0)
		if _, err := e.locker.Swap(ctx, res, tok, doc); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * skew)
	}
	move(regionA, regionB)
	// The front view now caches "primary B" for a day.
	if r := e.must(e.do(req{method: "GET", path: "/v1/conversations/tv/messages", auth: user("ann")}), 200); r.header.Get(api.ServedByHeader) != regionB {
		t.Fatalf("read after the move served by %s", r.header.Get(api.ServedByHeader))
	}
	move(regionB, regionA)
	// A message acknowledged at A after the move back (pinned: the front
	// view would send it to B, which refuses and re-resolves anyway).
	r := e.must(e.do(req{method: "POST", path: "/v1/conversations/tv/messages", auth: user("ann"), region: regionA,
		body: map[string]any{"id": "after", "text": "after the move back"}}), 201)
	if got := r.header.Get(api.ServedByHeader); got != regionA {
		t.Fatalf("write served by %s", got)
	}
	// B's post-swap lock (the secondary lease) lapses: nothing in B's
	// own view refuses a read there any more.
	e.clock.Advance(25 * time.Hour)
	r = e.must(e.do(req{method: "GET", path: "/v1/conversations/tv/messages", auth: user("ann")}), 200)
	if got := r.header.Get(api.ServedByHeader); got != regionA {
		t.Fatalf("read served by %s, want the primary %s", got, regionA)
	}
	if !strings.Contains(string(r.body), `"after"`) {
		t.Fatalf("the read misses the message acknowledged before it: %s", r.body)
	}
}

// TestMediaAfterTheSwapReResolves: with routing cached for an hour from
// before conversations and their media moved, a media download (routed by
// the media's own resource, then by the owning conversation: both stale)
// and an upload (routed by the conversation) are refused as moved at the
// old location; the server reads the routing of what each request routed
// by from the leader and runs it again at the new primary: 200 and 201
// from the new region within one request, never a 423 for the cache's TTL.
func TestMediaAfterTheSwapReResolves(t *testing.T) {
	e := newEnv(t, envOptions{tierTTL: time.Hour})
	ctx := context.Background()
	png := map[string]string{"Content-Type": "image/png"}
	var moved []kvrouting.Resource
	media := map[string]string{}
	for _, conv := range []string{"down", "up"} {
		e.createConv(conv, "ann")
		var up struct{ ID string }
		e.must(e.do(req{method: "POST", path: "/v1/conversations/" + conv + "/media", auth: user("ann"), body: []byte("before"), header: png}), 201).decode(t, &up)
		e.must(e.do(req{method: "GET", path: "/v1/media/" + up.ID, auth: user("ann")}), 200) // both documents cached at A
		media[conv] = up.ID
		moved = append(moved, convRes(conv), kvrouting.Resource{Kind: chat.KindMedia, ID: up.ID})
	}
	for _, res := range moved {
		tok, doc := e.lockTo(res, regionB, "write")
		e.copyAll(res.String(), regionA, regionB, contract.Historical, nil, 0)
		swapped, err := e.locker.Swap(ctx, res, tok, doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range e.regions[regionA].ParticipantsFor(res.Kind) {
			if _, err := p.Authorize(ctx, res.String(), swapped.AuthorityAt(regionA, skew)); err != nil {
				t.Fatal(err)
			}
		}
	}

	before := e.api.ReResolved()
	r := e.must(e.do(req{method: "GET", path: "/v1/media/" + media["down"], auth: user("ann")}), 200)
	if got := r.header.Get(api.ServedByHeader); got != regionB || string(r.body) != "before" {
		t.Fatalf("download after the move: served by %q, %q", got, r.body)
	}
	r = e.must(e.do(req{method: "POST", path: "/v1/conversations/up/media", auth: user("ann"), body: []byte("after"), header: png}), 201)
	if got := r.header.Get(api.ServedByHeader); got != regionB {
		t.Fatalf("upload after the move served by %q, want the new primary %s", got, regionB)
	}
	var after struct{ ID string }
	r.decode(t, &after)
	if doc, err := e.locker.Get(ctx, kvrouting.Resource{Kind: chat.KindMedia, ID: after.ID}); err != nil || doc.Primary.Region != regionB {
		t.Fatalf("media uploaded after the move registered at %+v (%v), want %s", doc, err, regionB)
	}
	if n := e.api.ReResolved() - before; n != 2 {
		t.Fatalf("%d re-resolutions, want one per request", n)
	}
	// Pinned to the old location, a download is still refused.
	e.must(e.do(req{method: "GET", path: "/v1/media/" + media["up"], auth: user("ann"), region: regionA}), 423)
}

package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/cutover/cutover/app/api"
	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/internal/testutil"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// postAsync posts message id to conv in the background; the response (or
// the transport error) arrives on the channel.
func (e *env) postAsync(conv, id string) <-chan resp {
	out := make(chan resp, 1)
	b, _ := json.Marshal(map[string]any{"id": id, "text": "parked"})
	go func() {
		hr, _ := http.NewRequest("POST", e.srv.URL+"/v1/conversations/"+conv+"/messages", bytes.NewReader(b))
		hr.Header.Set("Authorization", "Bearer "+user("ann"))
		res, err := http.DefaultClient.Do(hr)
		if err != nil {
			out <- resp{status: -1, body: []byte(err.Error())}
			return
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		out <- resp{status: res.StatusCode, header: res.Header, body: body}
	}()
	return out
}

func queuedMs(t *testing.T, r resp) int64 {
	t.Helper()
	v := r.header.Get(api.QueuedHeader)
	if v == "" {
		t.Fatalf("no %s header on a parked write: %s", api.QueuedHeader, r)
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		t.Fatalf("%s: %q", api.QueuedHeader, v)
	}
	return ms
}

// A write that meets a write lock is parked, woken by the swap (the
// routing document's change, through the KV watcher), and applied at the
// new primary: the client sees 201, never a 423 (issue 15 #4).
func TestQueuedWriteRidesOutTheWriteLock(t *testing.T) {
	e := newEnv(t, envOptions{queueWrites: time.Hour})
	ctx := context.Background()
	e.createConv("q", "ann")
	e.post("q", "ann", "m1", "before")
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: "q"}
	tok, doc := e.lockTo(res, regionB, "write")

	got := e.postAsync("q", "m2")
	testutil.WaitFor(t, "the write to be parked", func() bool { return e.api.QueueStats().Queued == 1 })
	select {
	case r := <-got:
		t.Fatalf("answered under the write lock: %s", r)
	default:
	}
	e.copyAll("conv/q", regionA, regionB, contract.Historical, nil, 0)
	if _, err := e.locker.Swap(ctx, res, tok, doc); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.status != http.StatusCreated {
		t.Fatalf("parked write: %s, want 201", r)
	}
	if sb := r.header.Get(api.ServedByHeader); sb != regionB {
		t.Fatalf("served by %q, want the new primary %s", sb, regionB)
	}
	queuedMs(t, r)
	if _, ok := e.storedRecord(regionB, "messages", "conv/q", "m2"); !ok {
		t.Fatal("the parked write is not at the new primary")
	}
	if _, ok := e.storedRecord(regionA, "messages", "conv/q", "m2"); ok {
		t.Fatal("the parked write landed at the old location")
	}
	if st := e.api.QueueStats(); st.Applied != 1 || st.Timeouts != 0 || st.Overflows != 0 {
		t.Fatalf("queue stats %+v", st)
	}
	// A write with nothing in its way is not parked and has no header.
	r = e.must(e.do(req{method: "POST", path: "/v1/conversations/q/messages", auth: user("ann"),
		body: map[string]any{"id": "m3", "text": "free"}}), 201)
	if v := r.header.Get(api.QueuedHeader); v != "" {
		t.Fatalf("%s %q on a write that did not wait", api.QueuedHeader, v)
	}
}

// A rollback (the lock released, the source still primary) wakes the
// parked write too; it is applied at the source.
func TestQueuedWriteAppliedAfterARollback(t *testing.T) {
	e := newEnv(t, envOptions{queueWrites: time.Hour})
	e.createConv("rb", "ann")
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: "rb"}
	tok, doc := e.lockTo(res, regionB, "write")
	got := e.postAsync("rb", "m1")
	testutil.WaitFor(t, "the write to be parked", func() bool { return e.api.QueueStats().Queued == 1 })
	if _, err := e.locker.Release(context.Background(), res, tok, doc); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.status != http.StatusCreated || r.header.Get(api.ServedByHeader) != regionA {
		t.Fatalf("parked write after the rollback: %s served by %q", r, r.header.Get(api.ServedByHeader))
	}
	queuedMs(t, r)
}

// A write lock that outlasts QueueWrites: the 423 goes out, with its
// Retry-After and the wait in the header; a full queue answers at once.
func TestQueueTimeoutAndOverflow(t *testing.T) {
	e := newEnv(t, envOptions{queueWrites: 50 * time.Millisecond, queueMax: 1})
	e.createConv("to", "ann")
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: "to"}
	e.lockTo(res, regionB, "write")

	r := e.must(e.do(req{method: "POST", path: "/v1/conversations/to/messages", auth: user("ann"),
		body: map[string]any{"id": "m1", "text": "times out"}}), 423)
	if r.header.Get("Retry-After") == "" {
		t.Fatalf("no Retry-After on the timed-out write: %s", r)
	}
	queuedMs(t, r)
	if st := e.api.QueueStats(); st.Queued != 1 || st.Timeouts != 1 {
		t.Fatalf("queue stats after a timeout %+v", st)
	}

	// Overflow: QueueMax 1, one write parked (an hour-long queue), the
	// next is refused at once.
	e2 := newEnv(t, envOptions{queueWrites: time.Hour, queueMax: 1})
	e2.createConv("of", "ann")
	tok, doc := e2.lockTo(kvrouting.Resource{Kind: chat.KindConversation, ID: "of"}, regionB, "write")
	first := e2.postAsync("of", "m1")
	testutil.WaitFor(t, "the first write to be parked", func() bool { return e2.api.QueueStats().Queued == 1 })
	r = e2.must(e2.do(req{method: "POST", path: "/v1/conversations/of/messages", auth: user("ann"),
		body: map[string]any{"id": "m2", "text": "overflow"}}), 423)
	if v := r.header.Get(api.QueuedHeader); v != "" {
		t.Fatalf("%s %q on a write that found the queue full", api.QueuedHeader, v)
	}
	if st := e2.api.QueueStats(); st.Overflows != 1 {
		t.Fatalf("queue stats after an overflow %+v", st)
	}
	if _, err := e2.locker.Release(context.Background(), kvrouting.Resource{Kind: chat.KindConversation, ID: "of"}, tok, doc); err != nil {
		t.Fatal(err)
	}
	if r := <-first; r.status != http.StatusCreated {
		t.Fatalf("the parked write after the release: %s", r)
	}
}

func TestQueueWritesMustNotBeNegative(t *testing.T) {
	e := newEnv(t, envOptions{})
	_, err := api.New(api.Config{Regions: e.regions, Resolver: e.rv, Locker: e.locker, DefaultRegion: regionA,
		Auth: api.DevAuth{}, QueueWrites: -time.Second})
	if err == nil {
		t.Fatal("a negative QueueWrites was accepted")
	}
}

// A write parked behind a write lock whose migration then stops (the
// orchestrator gone: nothing changes the routing document) runs when the
// lock and the source's fence end, not after the whole queue wait: the
// parked write is woken by the refusal's own hint too, not only by
// routing changes.
func TestParkedWriteRunsWhenTheWriteLockExpires(t *testing.T) {
	e := newEnv(t, envOptions{queueWrites: 30 * time.Second})
	e.createConv("ex", "ann")
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: "ex"}
	_, doc := e.lockTo(res, regionB, "write")
	e.authorize("conv/ex", regionA, doc) // the source's write fence
	got := e.postAsync("ex", "m1")
	testutil.WaitFor(t, "the write to be parked", func() bool { return e.api.QueueStats().Queued == 1 })
	e.clock.Advance(time.Hour) // the write lock's lease, the fence's Until: over
	r := <-got
	if r.status != http.StatusCreated || r.header.Get(api.ServedByHeader) != regionA {
		t.Fatalf("parked write after the write lock expired: %s served by %q", r, r.header.Get(api.ServedByHeader))
	}
	if st := e.api.QueueStats(); st.Applied != 1 || st.Timeouts != 0 {
		t.Fatalf("queue stats %+v", st)
	}
}

// A rollback releases the routing lock before it clears the source's write
// fence: the parked write woken by the release meets the fence, and is
// admitted anyway — it carries the release's revision, newer than the
// fence's, and a store joins the newer authority (contract.Join).
func TestParkedWriteAfterAReleaseBeforeTheFenceClears(t *testing.T) {
	e := newEnv(t, envOptions{queueWrites: 30 * time.Second})
	e.createConv("rf", "ann")
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: "rf"}
	tok, doc := e.lockTo(res, regionB, "write")
	e.authorize("conv/rf", regionA, doc)
	got := e.postAsync("rf", "m1")
	testutil.WaitFor(t, "the write to be parked", func() bool { return e.api.QueueStats().Queued == 1 })
	if _, err := e.locker.Release(context.Background(), res, tok, doc); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.status != http.StatusCreated || r.header.Get(api.ServedByHeader) != regionA {
		t.Fatalf("parked write after the release, the fence not cleared: %s served by %q", r, r.header.Get(api.ServedByHeader))
	}
}

// The 423 of a write that waited out the queue says when to retry as of
// its answer, not as of when it parked: a lock already older than the
// expected Phase 3 gives the minimum hint.
func TestParkedRefusalHasAFreshRetryAfter(t *testing.T) {
	e := newEnv(t, envOptions{queueWrites: 2 * time.Second})
	e.createConv("ra", "ann")
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: "ra"}
	e.lockTo(res, regionB, "write")
	got := e.postAsync("ra", "m1")
	testutil.WaitFor(t, "the write to be parked", func() bool { return e.api.QueueStats().Queued == 1 })
	e.clock.Advance(2400 * time.Millisecond) // the lock is 2.4 s old; its lease is a minute
	r := <-got
	if r.status != http.StatusLocked {
		t.Fatalf("parked write under a held lock: %s", r)
	}
	var eb errBody
	r.decode(t, &eb)
	if want := kvrouting.MinRetryHint.Milliseconds(); eb.Error.RetryAfterMS == nil || *eb.Error.RetryAfterMS != want {
		t.Fatalf("after the wait: %s, want retry_after_ms %d (the hint now)", r, want)
	}
}

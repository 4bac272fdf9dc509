package api_test

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/services/contract"
)

// TestResurrection runs the scenario of paper 001 §4.3 end to end across two
// regions: a message copied to the target, deleted at the source while the
// migration runs, must stay deleted at the target after cutover. It runs
// with the authorities the orchestrator tells the source at each lock
// (both enforcement layers), and without them (the routing lock and the
// copy's own stamps alone), which must produce the tombstone by themselves.
func TestResurrection(t *testing.T) {
	for _, fenced := range []bool{true, false} {
		name := map[bool]string{true: "fenced", false: "routing-only"}[fenced]
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			ctx := context.Background()
			conv := "res-" + name
			res := chat.ConvResource(conv)
			base := "/v1/conversations/" + conv + "/messages"
			e.createConv(conv, "alice", "bob")
			for _, id := range []string{"m1", "m2", "m3", "m4", "m5"} {
				e.post(conv, "alice", id, "text "+id)
			}
			e.must(e.do(req{method: "PUT", path: base + "/m2/reactions/wave", auth: user("bob")}), 200)
			e.must(e.do(req{method: "PUT", path: "/v1/conversations/" + conv + "/read", auth: user("bob"), body: map[string]string{"message_id": "m2"}}), 200)

			// Phase 1-2: pre-lock, hard-delete lock (+ its authority at the
			// source), historical copy in small pages.
			tok, doc := e.lockTo(convRes(conv), regionB, "hard-delete")
			if fenced {
				e.authorize(res, regionA, doc)
			}
			tokens := e.copyAll(res, regionA, regionB, contract.Historical, nil, 2)

			// 1. M was copied. 2. The user deletes M at the source while the
			// migration continues. Other traffic goes on.
			r := e.must(e.do(req{method: "DELETE", path: base + "/m2", auth: user("alice")}), 204)
			if r.header.Get("X-Cutover-Delete") != "tombstone" {
				t.Fatalf("delete during the historical copy: X-Cutover-Delete %q, want tombstone", r.header.Get("X-Cutover-Delete"))
			}
			e.must(e.do(req{method: "GET", path: base + "/m2", auth: user("alice")}), 404)
			e.must(e.do(req{method: "PATCH", path: base + "/m1", auth: user("alice"), body: map[string]string{"text": "m1 edited"}}), 200)
			e.post(conv, "bob", "m6", "posted during the copy")

			// Phase 3: write lock (+ its authority), writes refused, delta
			// catch-up.
			wdoc, err := e.locker.EscalateWrite(ctx, convRes(conv), tok, doc)
			if err != nil {
				t.Fatalf("EscalateWrite: %v", err)
			}
			if fenced {
				e.authorize(res, regionA, wdoc)
			}
			e.must(e.do(req{method: "POST", path: base, auth: user("bob"), body: map[string]string{"id": "m7", "text": "during the write lock"}}), 423)
			e.must(e.do(req{method: "DELETE", path: base + "/m3", auth: user("alice")}), 423)
			e.copyAll(res, regionA, regionB, contract.Delta, tokens, 2)

			// Pre-cutover validation through the API: both regions' digests agree.
			type digest struct {
				Slice int64  `json:"slice"`
				Count uint64 `json:"count"`
				Hash  string `json:"hash"`
			}
			digests := func(region string) map[string][]digest {
				r := e.must(e.do(req{method: "GET", path: "/v1/internal/regions/" + region + "/conversations/" + conv + "/digests", auth: "svc:validator:" + svcSecret}), 200)
				var d struct {
					Services map[string][]digest `json:"services"`
				}
				r.decode(t, &d)
				if len(d.Services) != 4 || len(d.Services["messages"]) == 0 {
					t.Fatalf("digests %s, want 4 services with messages", r)
				}
				return d.Services
			}
			if a, b := digests(regionA), digests(regionB); !reflect.DeepEqual(a, b) {
				t.Fatalf("digests differ after the delta:\n%s: %v\n%s: %v", regionA, a, regionB, b)
			}

			// Phase 4: the swap. Reads now go to region-b.
			if _, err := e.locker.Swap(ctx, convRes(conv), tok, wdoc); err != nil {
				t.Fatalf("Swap: %v", err)
			}
			var c conversation
			e.must(e.do(req{method: "GET", path: "/v1/conversations/" + conv, auth: user("bob")}), 200).decode(t, &c)
			if c.Region != regionB {
				t.Fatalf("after the swap the conversation is served by %s", c.Region)
			}
			// 5. M does not reappear.
			e.must(e.do(req{method: "GET", path: base + "/m2", auth: user("alice")}), 404)
			e.must(e.do(req{method: "GET", path: base + "/m2/reactions", auth: user("bob")}), 404)
			if got, want := ids(e.messages(conv, "alice", "")), []string{"m1", "m3", "m4", "m5", "m6"}; !slices.Equal(got, want) {
				t.Fatalf("messages at the target: %q, want %q", got, want)
			}
			var m message
			e.must(e.do(req{method: "GET", path: base + "/m1", auth: user("alice")}), 200).decode(t, &m)
			if m.Text != "m1 edited" {
				t.Fatalf("edit during the copy lost: %+v", m)
			}
			// The tombstone itself is at the target, stripped.
			if rec, ok := e.storedRecord(regionB, "messages", res, "m2"); !ok || !rec.Deleted || rec.Data != nil {
				t.Fatalf("target record of m2: %+v (found %v), want a tombstone", rec, ok)
			}
			// A retry of the original post does not resurrect it either.
			e.must(e.do(req{method: "POST", path: base, auth: user("alice"), body: map[string]string{"id": "m2", "text": "text m2"}}), 409)
			// Writes resume at the target; the old source is a locked secondary.
			e.post(conv, "bob", "m7", "after the cutover")
			e.must(e.do(req{method: "POST", path: base, auth: user("bob"), region: regionA, body: map[string]string{"id": "m8", "text": "x"}}), 423)
			var read struct {
				Read map[string]string `json:"read"`
			}
			e.must(e.do(req{method: "GET", path: "/v1/conversations/" + conv + "/read", auth: user("bob")}), 200).decode(t, &read)
			if read.Read["bob"] != "m2" {
				t.Fatalf("read state at the target: %v", read.Read)
			}
		})
	}
}

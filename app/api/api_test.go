package api_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cutover/cutover/app/api"
	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/kvrouting"
)

func TestIdempotentPost(t *testing.T) {
	e := newEnv(t, envOptions{})
	conv := "idem"
	e.createConv(conv, "alice", "bob")
	base := "/v1/conversations/" + conv + "/messages"
	body := map[string]any{"id": "k1", "text": "hello", "media": []string{}}

	var first message
	e.must(e.do(req{method: "POST", path: base, auth: user("alice"), body: body}), 201).decode(t, &first)
	for i := range 4 {
		var m message
		e.must(e.do(req{method: "POST", path: base, auth: user("alice"), body: body}), 200).decode(t, &m)
		if m.ID != "k1" || m.Conversation != conv || m.Author != "alice" || m.Text != "hello" || m.CreatedAt != first.CreatedAt || m.Media == nil || len(m.Media) != 0 {
			t.Fatalf("retry %d returned %+v, want %+v", i, m, first)
		}
	}
	// Concurrent retries of a new id: exactly one creates.
	var wg sync.WaitGroup
	statuses := make([]int, 5)
	for i := range statuses {
		wg.Go(func() {
			statuses[i] = e.do(req{method: "POST", path: base, auth: user("bob"), body: map[string]string{"id": "k2", "text": "race"}}).status
		})
	}
	wg.Wait()
	slices.Sort(statuses)
	if !slices.Equal(statuses, []int{200, 200, 200, 200, 201}) {
		t.Fatalf("concurrent retries: statuses %v, want one 201 and four 200", statuses)
	}
	if got := ids(e.messages(conv, "alice", "")); !slices.Equal(got, []string{"k1", "k2"}) {
		t.Fatalf("messages %q, want k1 and k2 once each", got)
	}
	// Same id, other content or other author: conflict.
	e.must(e.do(req{method: "POST", path: base, auth: user("alice"), body: map[string]string{"id": "k1", "text": "changed"}}), 409)
	e.must(e.do(req{method: "POST", path: base, auth: user("bob"), body: map[string]string{"id": "k1", "text": "hello"}}), 409)
	// A deleted id is never reused.
	e.must(e.do(req{method: "DELETE", path: base + "/k1", auth: user("alice")}), 204)
	e.must(e.do(req{method: "POST", path: base, auth: user("alice"), body: body}), 409)
	if got := ids(e.messages(conv, "alice", "")); !slices.Equal(got, []string{"k2"}) {
		t.Fatalf("messages %q, want k2", got)
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t, envOptions{})
	conv := "auth"
	e.createConv(conv, "alice", "bob")
	e.post(conv, "alice", "m1", "hi")
	base := "/v1/conversations/" + conv
	svc := "svc:validator:" + svcSecret

	for _, tc := range []struct {
		name, auth string
		header     map[string]string
	}{
		{"no token", "", nil},
		{"basic scheme", "", map[string]string{"Authorization": "Basic YWxpY2U6eA=="}},
		{"empty bearer", "", map[string]string{"Authorization": "Bearer "}},
		{"unknown token kind", "alice", nil},
		{"empty user", "user:", nil},
		{"control char user", "user:a\tb", nil},
		{"wrong service secret", "svc:validator:nope", nil},
		{"unknown service", "svc:other:" + svcSecret, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			r := e.must(e.do(req{method: "GET", path: base, auth: tc.auth, header: tc.header}), 401)
			if r.header.Get("WWW-Authenticate") == "" {
				t.Fatalf("401 without WWW-Authenticate")
			}
			e.must(e.do(req{method: "POST", path: base + "/messages", auth: tc.auth, header: tc.header, body: map[string]string{"id": "x", "text": "x"}}), 401)
		})
	}
	e.t = t

	// Non-participants: the answer of a conversation that does not exist
	// (404, same body) for reads and writes; nothing is written.
	absent := e.must(e.do(req{method: "GET", path: "/v1/conversations/nope", auth: user("mallory")}), 404)
	hidden := e.must(e.do(req{method: "GET", path: base, auth: user("mallory")}), 404)
	if strings.ReplaceAll(string(absent.body), "nope", conv) != string(hidden.body) {
		t.Fatalf("a hidden conversation answers %s, an absent one %s", hidden.body, absent.body)
	}
	e.must(e.do(req{method: "GET", path: base + "/messages", auth: user("mallory")}), 404)
	e.must(e.do(req{method: "GET", path: base + "/messages/m1", auth: user("mallory")}), 404)
	e.must(e.do(req{method: "POST", path: base + "/messages", auth: user("mallory"), body: map[string]string{"id": "m2", "text": "x"}}), 404)
	e.must(e.do(req{method: "POST", path: base + "/members", auth: user("mallory"), body: map[string]string{"user": "mallory"}}), 404)
	e.must(e.do(req{method: "PUT", path: base + "/read", auth: user("mallory"), body: map[string]string{"message_id": "m1"}}), 404)
	e.must(e.do(req{method: "PUT", path: base + "/messages/m1/reactions/x", auth: user("mallory")}), 404)
	// A service identity is no participant either.
	e.must(e.do(req{method: "GET", path: base, auth: svc}), 404)
	// Only the author edits or deletes.
	e.must(e.do(req{method: "PATCH", path: base + "/messages/m1", auth: user("bob"), body: map[string]string{"text": "hijack"}}), 403)
	e.must(e.do(req{method: "DELETE", path: base + "/messages/m1", auth: user("bob")}), 403)
	var m message
	e.must(e.do(req{method: "GET", path: base + "/messages/m1", auth: user("bob")}), 200).decode(t, &m)
	if m.Text != "hi" || len(e.messages(conv, "alice", "")) != 1 {
		t.Fatalf("refused requests changed state: %+v", m)
	}
	// Validation routes take a service identity only.
	internal := "/v1/internal/regions/" + regionA + "/conversations/" + conv + "/digests"
	e.must(e.do(req{method: "GET", path: internal, auth: user("alice")}), 403)
	e.must(e.do(req{method: "GET", path: internal, auth: "svc:validator:bad"}), 401)
	e.must(e.do(req{method: "GET", path: internal, auth: svc}), 200)
	// Routing documents: any authenticated identity.
	e.must(e.do(req{method: "GET", path: "/v1/routing/conv/" + conv, auth: svc}), 200)
	e.must(e.do(req{method: "GET", path: "/v1/routing/conv/" + conv, auth: user("mallory")}), 200)
	e.must(e.do(req{method: "GET", path: "/v1/routing/conv/" + conv}), 401)
}

func TestBadInput(t *testing.T) {
	e := newEnv(t, envOptions{maxBody: 64 << 10})
	conv := "bad"
	e.createConv(conv, "alice", "bob")
	e.post(conv, "alice", "m1", "hi")
	base := "/v1/conversations/" + conv
	long := strings.Repeat("x", 129)

	snapshot := func() string {
		var b bytes.Buffer
		for _, m := range e.messages(conv, "alice", "") {
			fmt.Fprintf(&b, "%s|%s|%s;", m.ID, m.Text, m.EditedAt)
		}
		r := e.must(e.do(req{method: "GET", path: base + "/members", auth: user("alice")}), 200)
		b.Write(r.body)
		r = e.must(e.do(req{method: "GET", path: base + "/read", auth: user("alice")}), 200)
		b.Write(r.body)
		r = e.must(e.do(req{method: "GET", path: base + "/messages/m1/reactions", auth: user("alice")}), 200)
		b.Write(r.body)
		return b.String()
	}
	before := snapshot()

	for _, tc := range []struct {
		name   string
		r      req
		status int
	}{
		{"malformed JSON", req{method: "POST", path: base + "/messages", body: `{"id": "m2", "text":`}, 400},
		{"not an object", req{method: "POST", path: base + "/messages", body: `["m2"]`}, 400},
		{"unknown field", req{method: "POST", path: base + "/messages", body: `{"id":"m2","text":"x","colour":"red"}`}, 400},
		{"trailing data", req{method: "POST", path: base + "/messages", body: `{"id":"m2","text":"x"} {}`}, 400},
		{"empty body", req{method: "POST", path: base + "/messages", body: ``}, 400},
		{"oversize body", req{method: "POST", path: base + "/messages", body: `{"id":"m2","text":"` + strings.Repeat("a", 70<<10) + `"}`}, 413},
		{"missing message id", req{method: "POST", path: base + "/messages", body: `{"text":"x"}`}, 400},
		{"long message id", req{method: "POST", path: base + "/messages", body: map[string]string{"id": long, "text": "x"}}, 400},
		{"control char message id", req{method: "POST", path: base + "/messages", body: map[string]string{"id": "a\tb", "text": "x"}}, 400},
		{"empty message", req{method: "POST", path: base + "/messages", body: map[string]string{"id": "m2"}}, 400},
		{"unknown media", req{method: "POST", path: base + "/messages", body: map[string]any{"id": "m2", "text": "x", "media": []string{"nope"}}}, 400},
		{"unknown conversation", req{method: "POST", path: "/v1/conversations/nope/messages", body: map[string]string{"id": "m2", "text": "x"}}, 404},
		{"unknown conversation read", req{method: "GET", path: "/v1/conversations/nope"}, 404},
		{"long conversation id", req{method: "GET", path: "/v1/conversations/" + long}, 400},
		{"control char conversation id", req{method: "GET", path: "/v1/conversations/a%01b"}, 400},
		{"unknown message", req{method: "GET", path: base + "/messages/nope"}, 404},
		{"edit unknown message", req{method: "PATCH", path: base + "/messages/nope", body: map[string]string{"text": "x"}}, 404},
		{"delete unknown message", req{method: "DELETE", path: base + "/messages/nope"}, 404},
		{"limit zero", req{method: "GET", path: base + "/messages?limit=0"}, 400},
		{"limit too big", req{method: "GET", path: base + "/messages?limit=201"}, 400},
		{"limit not a number", req{method: "GET", path: base + "/messages?limit=ten"}, 400},
		{"bad cursor", req{method: "GET", path: base + "/messages?after=!!"}, 400},
		{"short cursor", req{method: "GET", path: base + "/messages?after=AAAA"}, 400},
		{"add member bad id", req{method: "POST", path: base + "/members", body: map[string]string{"user": ""}}, 400},
		{"react to unknown message", req{method: "PUT", path: base + "/messages/nope/reactions/ok"}, 404},
		{"long emoji", req{method: "PUT", path: base + "/messages/m1/reactions/" + strings.Repeat("e", 65)}, 400},
		{"read unknown message", req{method: "PUT", path: base + "/read", body: map[string]string{"message_id": "nope"}}, 404},
		{"read without message", req{method: "PUT", path: base + "/read", body: map[string]string{}}, 400},
		{"media too large", req{method: "POST", path: base + "/media", body: bytes.Repeat([]byte("x"), 65<<10), header: map[string]string{"Content-Type": "image/png"}}, 413},
		{"media bad content type", req{method: "POST", path: base + "/media", body: "x", header: map[string]string{"Content-Type": "not a type"}}, 400},
		{"empty media", req{method: "POST", path: base + "/media", body: "", header: map[string]string{"Content-Type": "image/png"}}, 400},
		{"unknown media read", req{method: "GET", path: "/v1/media/nope"}, 404},
		{"bad routing kind", req{method: "GET", path: "/v1/routing/CONV/x"}, 400},
		{"unknown routing doc", req{method: "GET", path: "/v1/routing/conv/nope"}, 404},
		{"unknown route", req{method: "GET", path: "/v1/nothing"}, 404},
		{"wrong method", req{method: "PUT", path: base + "/messages"}, 405},
		{"slice bad from", req{method: "GET", path: "/v1/internal/regions/" + regionA + "/conversations/" + conv + "/slice?from=x", auth: "svc:validator:" + svcSecret}, 400},
		{"slice unknown service", req{method: "GET", path: "/v1/internal/regions/" + regionA + "/conversations/" + conv + "/slice?service=media", auth: "svc:validator:" + svcSecret}, 400},
		{"unknown region", req{method: "GET", path: "/v1/internal/regions/mars/conversations/" + conv + "/digests", auth: "svc:validator:" + svcSecret}, 404},
		{"pinned unknown region", req{method: "GET", path: base, region: "mars"}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			if tc.r.auth == "" {
				tc.r.auth = user("alice")
			}
			r := e.do(tc.r)
			if r.status != tc.status {
				t.Fatalf("status %s, want %d", r, tc.status)
			}
			checkErrorShape(t, r)
			if tc.status == 405 && r.header.Get("Allow") == "" {
				t.Fatalf("405 without Allow")
			}
		})
	}
	e.t = t
	if after := snapshot(); after != before {
		t.Fatalf("bad requests changed state:\nbefore %s\nafter  %s", before, after)
	}

	// Bad creates register no routing document.
	for _, body := range []any{
		map[string]any{"id": "", "title": "x"},
		map[string]any{"id": long, "title": "x"},
		map[string]any{"id": "c-bad", "title": strings.Repeat("t", 1025)},
		map[string]any{"id": "c-bad", "title": "x", "members": []string{""}},
		map[string]any{"id": "c-bad", "title": "x", "extra": 1},
		`{"id":"c-bad","title":"x"`,
	} {
		r := e.do(req{method: "POST", path: "/v1/conversations", auth: user("alice"), body: body})
		if r.status != 400 {
			t.Fatalf("create %v: %s, want 400", body, r)
		}
		checkErrorShape(t, r)
	}
	if _, err := e.locker.Get(context.Background(), kvrouting.Resource{Kind: chat.KindConversation, ID: "c-bad"}); err == nil {
		t.Fatalf("a refused create registered a routing document")
	}
	// An existing id is a conflict; the conversation is unchanged.
	e.must(e.do(req{method: "POST", path: "/v1/conversations", auth: user("mallory"), body: map[string]any{"id": conv, "title": "mine"}}), 409)
	var c conversation
	e.must(e.do(req{method: "GET", path: base, auth: user("alice")}), 200).decode(t, &c)
	if c.Title != "t "+conv || c.CreatedBy != "alice" {
		t.Fatalf("conversation after a conflicting create: %+v", c)
	}
}

func TestConversationsAndMembers(t *testing.T) {
	e := newEnv(t, envOptions{})
	var c conversation
	e.must(e.do(req{method: "POST", path: "/v1/conversations", auth: user("alice"), body: map[string]any{"title": "lunch", "members": []string{"bob", "alice", "bob"}}}), 201).decode(t, &c)
	if c.ID == "" || c.Title != "lunch" || c.CreatedBy != "alice" || c.Region != regionA || !slices.Equal(c.Members, []string{"alice", "bob"}) {
		t.Fatalf("created %+v", c)
	}
	base := "/v1/conversations/" + c.ID
	var got conversation
	e.must(e.do(req{method: "GET", path: base, auth: user("bob")}), 200).decode(t, &got)
	if got.ID != c.ID || !slices.Equal(got.Members, c.Members) || got.Region != regionA {
		t.Fatalf("GET %+v, want %+v", got, c)
	}
	var ms struct {
		Members []string `json:"members"`
	}
	e.must(e.do(req{method: "POST", path: base + "/members", auth: user("bob"), body: map[string]string{"user": "carol"}}), 200).decode(t, &ms)
	e.must(e.do(req{method: "POST", path: base + "/members", auth: user("bob"), body: map[string]string{"user": "carol"}}), 200).decode(t, &ms)
	if !slices.Equal(ms.Members, []string{"alice", "bob", "carol"}) {
		t.Fatalf("members %v", ms.Members)
	}
	e.must(e.do(req{method: "GET", path: base + "/members", auth: user("carol")}), 200).decode(t, &ms)
	if len(ms.Members) != 3 {
		t.Fatalf("members %v", ms.Members)
	}

	// Routing document: token redacted.
	if _, doc := e.lockTo(convRes(c.ID), regionB, "pre"); doc == nil {
		t.Fatal("no document")
	}
	var rd struct {
		Resource string `json:"resource"`
		Primary  struct {
			Region string `json:"region"`
			Lock   struct {
				Type, Token, Expiry string
			} `json:"lock"`
		} `json:"primary"`
		Secondary struct {
			Region string `json:"region"`
		} `json:"secondary"`
	}
	r := e.must(e.do(req{method: "GET", path: "/v1/routing/conv/" + c.ID, auth: user("zed")}), 200)
	r.decode(t, &rd)
	full, _ := e.locker.Get(context.Background(), convRes(c.ID))
	if rd.Resource != "conv/"+c.ID || rd.Primary.Region != regionA || rd.Primary.Lock.Type != "pre" || rd.Secondary.Region != regionB || rd.Primary.Lock.Expiry == "" {
		t.Fatalf("routing document %s", r)
	}
	if bytes.Contains(r.body, []byte(full.Primary.Lock.Token)) || !strings.HasSuffix(rd.Primary.Lock.Token, "…") {
		t.Fatalf("routing document leaks the token: %s", r)
	}

	e.must(e.do(req{method: "GET", path: "/healthz"}), 200)
}

func TestMessagesPaging(t *testing.T) {
	e := newEnv(t, envOptions{})
	conv := "paging"
	e.createConv(conv, "alice")
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("z%02d", 7-i) // ids in reverse order: listing follows post time
		e.post(conv, "alice", id, "n")
		want = append(want, id)
	}
	var got []string
	after, pages := "", 0
	for {
		var p page
		e.must(e.do(req{method: "GET", path: "/v1/conversations/" + conv + "/messages?limit=3&after=" + after, auth: user("alice")}), 200).decode(t, &p)
		got = append(got, ids(p.Messages)...)
		pages++
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	if !slices.Equal(got, want) || pages != 3 {
		t.Fatalf("paged %q in %d pages, want %q in 3", got, pages, want)
	}
	var p page
	e.must(e.do(req{method: "GET", path: "/v1/conversations/" + conv + "/messages", auth: user("alice")}), 200).decode(t, &p)
	if len(p.Messages) != 7 || p.Next != "" {
		t.Fatalf("default page: %d messages, next %q", len(p.Messages), p.Next)
	}
}

func TestMediaAndReads(t *testing.T) {
	e := newEnv(t, envOptions{})
	conv := "media"
	e.createConv(conv, "alice", "bob")
	e.createConv("other", "mallory")
	png := []byte("\x89PNG fake image bytes")
	var mj struct {
		ID, Conversation string
		ContentType      string `json:"content_type"`
		Size             int
	}
	e.must(e.do(req{method: "POST", path: "/v1/conversations/" + conv + "/media", auth: user("alice"), body: png, header: map[string]string{"Content-Type": "image/png"}}), 201).decode(t, &mj)
	if mj.ID == "" || mj.Conversation != conv || mj.ContentType != "image/png" || mj.Size != len(png) {
		t.Fatalf("upload: %+v", mj)
	}
	r := e.must(e.do(req{method: "GET", path: "/v1/media/" + mj.ID, auth: user("bob")}), 200)
	if !bytes.Equal(r.body, png) || r.header.Get("Content-Type") != "image/png" {
		t.Fatalf("media read: %q %q", r.header.Get("Content-Type"), r.body)
	}
	// A non-participant learns nothing, not even the owning conversation.
	var eb errBody
	e.must(e.do(req{method: "GET", path: "/v1/media/" + mj.ID, auth: user("mallory")}), 404).decode(t, &eb)
	if eb.Error.Message != fmt.Sprintf("media %q not found", mj.ID) {
		t.Fatalf("media answer to a non-participant: %q", eb.Error.Message)
	}
	// The media has its own routing document, in the conversation's region.
	e.must(e.do(req{method: "GET", path: "/v1/routing/media/" + mj.ID, auth: user("bob")}), 200)

	// A message references it; export reports it as a dependent.
	var m message
	e.must(e.do(req{method: "POST", path: "/v1/conversations/" + conv + "/messages", auth: user("alice"), body: map[string]any{"id": "m1", "text": "look", "media": []string{mj.ID}}}), 201).decode(t, &m)
	if !slices.Equal(m.Media, []string{mj.ID}) {
		t.Fatalf("message media %v", m.Media)
	}
	pg, err := e.exportFirst(regionA, "messages", chat.ConvResource(conv))
	if err != nil || !slices.Equal(pg.Dependents, []string{"media/" + mj.ID}) {
		t.Fatalf("export dependents %v, %v", pg.Dependents, err)
	}
	// Someone else's media cannot be referenced.
	var other struct{ ID string }
	e.must(e.do(req{method: "POST", path: "/v1/conversations/other/media", auth: user("mallory"), body: "x", header: map[string]string{"Content-Type": "text/plain"}}), 201).decode(t, &other)
	e.must(e.do(req{method: "POST", path: "/v1/conversations/" + conv + "/messages", auth: user("alice"), body: map[string]any{"id": "m2", "text": "x", "media": []string{other.ID}}}), 400)

	// Read state.
	e.post(conv, "bob", "m3", "hi")
	var rj struct {
		User      string `json:"user"`
		MessageID string `json:"message_id"`
	}
	e.must(e.do(req{method: "PUT", path: "/v1/conversations/" + conv + "/read", auth: user("bob"), body: map[string]string{"message_id": "m1"}}), 200).decode(t, &rj)
	e.must(e.do(req{method: "PUT", path: "/v1/conversations/" + conv + "/read", auth: user("bob"), body: map[string]string{"message_id": "m3"}}), 200).decode(t, &rj)
	if rj.User != "bob" || rj.MessageID != "m3" {
		t.Fatalf("mark read: %+v", rj)
	}
	e.must(e.do(req{method: "PUT", path: "/v1/conversations/" + conv + "/read", auth: user("alice"), body: map[string]string{"message_id": "m1"}}), 200)
	var read struct {
		Read map[string]string `json:"read"`
	}
	e.must(e.do(req{method: "GET", path: "/v1/conversations/" + conv + "/read", auth: user("alice")}), 200).decode(t, &read)
	if len(read.Read) != 2 || read.Read["bob"] != "m3" || read.Read["alice"] != "m1" {
		t.Fatalf("read state %v", read.Read)
	}

	// Validation slice read: records with versions and content hashes.
	var sl struct {
		Services map[string][]struct {
			ID      string `json:"id"`
			Version uint64 `json:"version"`
			Hash    string `json:"hash"`
		} `json:"services"`
	}
	e.must(e.do(req{method: "GET", path: "/v1/internal/regions/" + regionA + "/conversations/" + conv + "/slice?service=readstate", auth: "svc:validator:" + svcSecret}), 200).decode(t, &sl)
	rs := sl.Services["readstate"]
	if len(sl.Services) != 1 || len(rs) != 2 || rs[0].Hash == "" || rs[0].Version+rs[1].Version != 3 {
		t.Fatalf("slice %+v", sl)
	}
	mediaDigests, err := api.InternalDigestsPath(regionA, chat.MediaResource(mj.ID))
	if err != nil || mediaDigests != "/v1/internal/regions/"+regionA+"/media/"+mj.ID+"/digests" {
		t.Fatalf("InternalDigestsPath(media) = %q, %v", mediaDigests, err)
	}
	e.must(e.do(req{method: "GET", path: mediaDigests, auth: "svc:validator:" + svcSecret}), 200)
	convDigests, err := api.InternalDigestsPath(regionA, chat.ConvResource(conv))
	if err != nil {
		t.Fatal(err)
	}
	var dj struct {
		Services map[string][]struct {
			Count uint64 `json:"count"`
		} `json:"services"`
	}
	e.must(e.do(req{method: "GET", path: convDigests, auth: "svc:validator:" + svcSecret}), 200).decode(t, &dj)
	if len(dj.Services) != len(chat.ServicesFor(chat.KindConversation)) {
		t.Fatalf("conversation digests of %d services, want every one: %v", len(dj.Services), dj.Services)
	}
	dj.Services = nil
	e.must(e.do(req{method: "GET", path: convDigests + "?service=readstate", auth: "svc:validator:" + svcSecret}), 200).decode(t, &dj)
	if rd := dj.Services["readstate"]; len(dj.Services) != 1 || len(rd) == 0 || rd[0].Count == 0 {
		t.Fatalf("digests?service=readstate: %v, want readstate's alone", dj.Services)
	}
	e.must(e.do(req{method: "GET", path: convDigests + "?service=media", auth: "svc:validator:" + svcSecret}), 400)
	if _, err := api.InternalDigestsPath(regionA, "tenant/acme"); err == nil {
		t.Fatal("InternalDigestsPath(tenant/acme): no error")
	}

}

// TestServedByNamesTheServingRegion: every response on a conversation names
// the region that served it — the primary, or the pinned region, also when
// that region refuses the write with 423 — and a side lookup (the media a
// message refers to) does not replace it.
func TestServedByNamesTheServingRegion(t *testing.T) {
	e := newEnv(t, envOptions{})
	r := e.must(e.do(req{method: "POST", path: "/v1/conversations", auth: user("ann"), body: map[string]any{"id": "c1", "title": "t"}}), 201)
	if got := r.header.Get(api.ServedByHeader); got != regionA {
		t.Fatalf("create served by %q, want %q", got, regionA)
	}
	r = e.must(e.do(req{method: "POST", path: "/v1/conversations/c1/messages", auth: user("ann"), body: map[string]any{"id": "m1", "text": "hi"}}), 201)
	if got := r.header.Get(api.ServedByHeader); got != regionA {
		t.Fatalf("post served by %q, want %q", got, regionA)
	}
	r = e.must(e.do(req{method: "POST", path: "/v1/conversations/c1/messages", auth: user("ann"), region: regionB, body: map[string]any{"id": "m2", "text": "hi"}}), 423)
	if got := r.header.Get(api.ServedByHeader); got != regionB {
		t.Fatalf("pinned write served by %q, want %q", got, regionB)
	}
	r = e.must(e.do(req{method: "PUT", path: "/v1/conversations/c1/messages/m1/reactions/tada", auth: user("ann")}), 200)
	if got := r.header.Get(api.ServedByHeader); got != regionA {
		t.Fatalf("reaction served by %q, want %q", got, regionA)
	}
	r = e.must(e.do(req{method: "GET", path: "/v1/conversations/nope/messages", auth: user("ann")}), 404)
	if got := r.header.Get(api.ServedByHeader); got != "" {
		t.Fatalf("an unknown conversation names a region: %q", got)
	}
}

// TestHonestRetryAfter: a plain HTTP client is told how long to wait for
// what is actually in its way (issue 15 #6): under a write lock the expected
// rest of Phase 3 (a second at most, not the minute-long lease), less as the
// lock ages; at the old location after the swap, 0 — the resource has moved.
func TestHonestRetryAfter(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createConv("ra", "ann")
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: "ra"}
	tok, doc := e.lockTo(res, regionB, "write")
	post := func(id, region string) resp {
		return e.do(req{method: "POST", path: "/v1/conversations/ra/messages", auth: user("ann"), region: region,
			body: map[string]any{"id": id, "text": "x"}})
	}
	retry := func(r resp) (string, int64, string) {
		t.Helper()
		var eb errBody
		e.must(r, 423).decode(t, &eb)
		return r.header.Get("Retry-After"), *eb.Error.RetryAfterMS, eb.Error.Message
	}
	if ra, ms, _ := retry(post("m1", "")); ra != "1" || ms > kvrouting.ExpectedWriteLock.Milliseconds() || ms < 900 {
		t.Fatalf("fresh write lock: Retry-After %s, retry_after_ms %d; want 1 and %d (not the %s lease)", ra, ms, kvrouting.ExpectedWriteLock.Milliseconds(), time.Minute)
	}
	e.clock.Advance(5 * time.Second)
	if ra, ms, _ := retry(post("m2", "")); ra != "0" || ms != kvrouting.MinRetryHint.Milliseconds() {
		t.Fatalf("write lock held 5 s: Retry-After %s, retry_after_ms %d", ra, ms)
	}
	if _, err := e.locker.Swap(context.Background(), res, tok, doc); err != nil {
		t.Fatal(err)
	}
	if ra, ms, msg := retry(post("m3", regionA)); ra != "0" || ms != 0 || !strings.Contains(msg, "moved") {
		t.Fatalf("old location after the swap: Retry-After %s, retry_after_ms %d, %q", ra, ms, msg)
	}
}

// TestHiddenWhenLocked: under a write lock a participant's write is
// refused with 423, and a non-participant's gets the answer of a
// conversation that does not exist, so the lock does not reveal it.
func TestHiddenWhenLocked(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createConv("locked", "ann")
	e.lockTo(kvrouting.Resource{Kind: chat.KindConversation, ID: "locked"}, regionB, "write")
	post := func(who string) resp {
		return e.do(req{method: "POST", path: "/v1/conversations/locked/messages", auth: user(who), body: map[string]any{"id": "m1", "text": "x"}})
	}
	e.must(post("ann"), 423)
	var hidden, absent errBody
	e.must(post("mallory"), 404).decode(t, &hidden)
	e.must(e.do(req{method: "POST", path: "/v1/conversations/nope/messages", auth: user("mallory"), body: map[string]any{"id": "m1", "text": "x"}}), 404).decode(t, &absent)
	if hidden.Error.Code != absent.Error.Code || strings.ReplaceAll(absent.Error.Message, "nope", "locked") != hidden.Error.Message {
		t.Fatalf("hidden %+v, absent %+v", hidden.Error, absent.Error)
	}
	e.must(e.do(req{method: "GET", path: "/v1/conversations/locked", auth: user("mallory")}), 404)
}

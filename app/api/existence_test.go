package api_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestNonMemberCannotTellAConversationExists: to a user who is not on its
// roster, every route on a conversation that exists answers exactly as on
// one that does not — 404 "conversation <id> not found", never 403 — and
// a media object of it as one that does not exist. The routing endpoint
// is the documented exception (docs/api.md, Authentication): it answers any
// authenticated identity, so it says whether a resource has a routing
// document at all.
func TestNonMemberCannotTellAConversationExists(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createConv("secret", "alice", "bob")
	e.post("secret", "alice", "m1", "hi")
	var media struct{ ID string }
	e.must(e.do(req{method: "POST", path: "/v1/conversations/secret/media", auth: user("alice"), body: "x",
		header: map[string]string{"Content-Type": "text/plain"}}), 201).decode(t, &media)

	// answer is what mallory gets for r on conversation conv, with conv
	// replaced by a placeholder.
	answer := func(r req, conv string) string {
		t.Helper()
		r.path = strings.ReplaceAll(r.path, "{id}", conv)
		r.auth = user("mallory")
		got := e.do(r)
		eb := checkErrorShape(t, got)
		return fmt.Sprintf("%d %s %s", got.status, eb.Error.Code, strings.ReplaceAll(eb.Error.Message, conv, "<id>"))
	}
	for _, r := range []req{
		{method: "GET", path: "/v1/conversations/{id}"},
		{method: "GET", path: "/v1/conversations/{id}/members"},
		{method: "POST", path: "/v1/conversations/{id}/members", body: map[string]string{"user": "mallory"}},
		{method: "GET", path: "/v1/conversations/{id}/messages"},
		{method: "POST", path: "/v1/conversations/{id}/messages", body: map[string]string{"id": "m2", "text": "x"}},
		{method: "GET", path: "/v1/conversations/{id}/messages/m1"},
		{method: "PATCH", path: "/v1/conversations/{id}/messages/m1", body: map[string]string{"text": "x"}},
		{method: "DELETE", path: "/v1/conversations/{id}/messages/m1"},
		{method: "GET", path: "/v1/conversations/{id}/messages/m1/reactions"},
		{method: "PUT", path: "/v1/conversations/{id}/messages/m1/reactions/ok"},
		{method: "DELETE", path: "/v1/conversations/{id}/messages/m1/reactions/ok"},
		{method: "PUT", path: "/v1/conversations/{id}/read", body: map[string]string{"message_id": "m1"}},
		{method: "GET", path: "/v1/conversations/{id}/read"},
		{method: "POST", path: "/v1/conversations/{id}/media", body: "x", header: map[string]string{"Content-Type": "text/plain"}},
	} {
		t.Run(r.method+" "+r.path, func(t *testing.T) {
			e.t = t
			exists, missing := answer(r, "secret"), answer(r, "nosuch")
			if exists != missing || !strings.HasPrefix(exists, "404 not_found ") {
				t.Fatalf("a non-member: %q for the conversation that exists, %q for one that does not; want one 404", exists, missing)
			}
		})
	}
	e.t = t
	if exists, missing := answer(req{method: "GET", path: "/v1/media/{id}"}, media.ID), answer(req{method: "GET", path: "/v1/media/{id}"}, "m_nosuch"); exists != missing || !strings.HasPrefix(exists, "404 ") {
		t.Fatalf("a non-member's media: %q, for none %q", exists, missing)
	}
	// The exception, as documented: any identity reads routing documents.
	e.must(e.do(req{method: "GET", path: "/v1/routing/conv/secret", auth: user("mallory")}), 200)
	e.must(e.do(req{method: "GET", path: "/v1/routing/conv/nosuch", auth: user("mallory")}), 404)
}

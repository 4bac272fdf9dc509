package api_test

import (
	"regexp"
	"strings"
	"testing"
)

// packagePrefix matches "<package>: " for the module's Go packages (and
// the libraries under them) whose errors start so: a client must never
// read one.
var packagePrefix = regexp.MustCompile(`\b(kvrouting|store|contract|participant|services|httproute|api|chat|core|pgstore|contractnats|lockrecord|eventlog|orchestrator|projector|pebble|nats|jetstream):`)

// TestErrorsNameNoPackage: what a client reads of an error (its bad input
// on the routing endpoint and a few other handlers) never carries an
// internal Go package prefix such as "kvrouting: invalid argument".
func TestErrorsNameNoPackage(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createConv("c1", "alice", "bob")
	e.post("c1", "alice", "m1", "hi")
	long := strings.Repeat("x", 300)
	svc := "svc:validator:" + svcSecret
	for _, tc := range []struct {
		r      req
		status int
		want   string // a substring of the message, if set
	}{
		{req{method: "GET", path: "/v1/routing/conv/" + long}, 400, "invalid resource id: longer than 200 bytes"},
		{req{method: "GET", path: "/v1/routing/" + long + "/x"}, 400, "invalid resource kind: longer than 32 bytes"},
		{req{method: "GET", path: "/v1/routing/CONV/x"}, 400, `invalid resource kind "CONV"`},
		{req{method: "GET", path: "/v1/routing/conv/a%01b"}, 400, "control character U+0001"},
		{req{method: "GET", path: "/v1/routing/conv/a%7Fb"}, 400, "control character U+007F"},
		{req{method: "GET", path: "/v1/routing/conv/nope"}, 404, ""},
		{req{method: "GET", path: "/v1/routing/conv/x", auth: "user:" + long}, 401, ""},
		{req{method: "GET", path: "/v1/conversations/" + long}, 400, ""},
		{req{method: "GET", path: "/v1/conversations/a%01b"}, 400, ""},
		{req{method: "GET", path: "/v1/conversations/nope"}, 404, ""},
		{req{method: "GET", path: "/v1/conversations/c1/messages?after=AAAA"}, 400, ""},
		{req{method: "GET", path: "/v1/conversations/c1/messages/" + long}, 400, ""},
		{req{method: "PUT", path: "/v1/conversations/c1/messages/m1/reactions/a%01b"}, 400, ""},
		{req{method: "GET", path: "/v1/media/" + long}, 400, ""},
		{req{method: "POST", path: "/v1/conversations", body: map[string]any{"id": "a\u202eb", "title": "t"}}, 400, "character U+202E;"},
		{req{method: "POST", path: "/v1/conversations", body: map[string]any{"id": "aü", "title": "t"}}, 400, "character 'ü' (U+00FC);"},
		{req{method: "POST", path: "/v1/conversations", body: `{"id":`}, 400, ""},
		{req{method: "GET", path: "/v1/internal/regions/" + regionA + "/conversations/" + long + "/digests", auth: svc}, 400, ""},
	} {
		name := tc.r.method + " " + tc.r.path
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			e.t = t
			if tc.r.auth == "" {
				tc.r.auth = user("alice")
			}
			r := e.do(tc.r)
			if r.status != tc.status {
				t.Fatalf("status %s, want %d", r, tc.status)
			}
			eb := checkErrorShape(t, r)
			if m := packagePrefix.Find(r.body); m != nil {
				t.Errorf("the body names the Go package %q: %s", m, r)
			}
			if tc.want != "" && !strings.Contains(eb.Error.Message, tc.want) {
				t.Errorf("message %q, want it to contain %q", eb.Error.Message, tc.want)
			}
		})
	}
}

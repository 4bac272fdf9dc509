package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// raw sends one request with path written as is (no cleaning by the
// client) and never follows a redirect.
func (e *env) raw(method, path string, header map[string]string, body string) resp {
	e.t.Helper()
	hr, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatalf("NewRequest %s %q: %v", method, path, err)
	}
	for k, v := range header {
		hr.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(hr)
	if err != nil {
		e.t.Fatalf("%s %q: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("reading body: %v", err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// TestIDAlphabet: the ids a client chooses (conversation ids on create,
// message ids on post) are [A-Za-z0-9._-]{1,128} other than "." and "..":
// others would be unreachable by their URL (path cleaning) or need
// escaping in every path. They are refused with 400 before anything is
// written (issue 14, item 12).
func TestIDAlphabet(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createConv("ids", "alice")
	long := strings.Repeat("x", 128)
	for _, id := range []string{".", "..", "a/b", "a?b", "a#b", "a b", "a%2Fb", "a:b", "é", "a\\b", long + "x"} {
		t.Run("conversation "+id, func(t *testing.T) {
			e.t = t
			e.must(e.do(req{method: "POST", path: "/v1/conversations", auth: user("alice"),
				body: map[string]any{"id": id, "title": "t"}}), 400)
			if _, err := e.locker.Get(context.Background(), convRes(id)); err == nil {
				t.Fatalf("a refused create of %q registered a routing document", id)
			}
		})
		t.Run("message "+id, func(t *testing.T) {
			e.t = t
			e.must(e.do(req{method: "POST", path: "/v1/conversations/ids/messages", auth: user("alice"),
				body: map[string]any{"id": id, "text": "x"}}), 400)
		})
	}
	e.t = t
	if got := e.messages("ids", "alice", ""); len(got) != 0 {
		t.Fatalf("refused posts wrote %v", ids(got))
	}
	// The whole alphabet is accepted and every id is reachable by its URL.
	for _, id := range []string{"A.z_0-9", "...", ".a", "a.", "-", "_", long} {
		e.createConv(id, "alice")
		e.must(e.do(req{method: "GET", path: "/v1/conversations/" + id, auth: user("alice")}), 200)
		e.post(id, "alice", id, "x")
		e.must(e.do(req{method: "GET", path: "/v1/conversations/" + id + "/messages/" + id, auth: user("alice")}), 200)
	}
}

// TestNoRedirects: no path is ever answered with a redirect (the mux's
// path cleaning answered 307 with an HTML body); a path that is not
// canonical is 400, an unknown route 404 and a wrong method 405 with its
// own code, all in the JSON error shape (issue 14, item 12).
func TestNoRedirects(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createConv("c1", "alice")
	e.post("c1", "alice", "m1", "x")
	auth := map[string]string{"Authorization": "Bearer " + user("alice")}
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/conversations/..", 400},
		{"GET", "/v1/conversations/.", 400},
		{"GET", "/v1/conversations/c1/../c1", 400},
		{"GET", "/v1/conversations/c1/./members", 400},
		{"GET", "//v1/conversations/c1", 400},
		{"GET", "/v1//conversations/c1", 400},
		{"GET", "/v1/conversations/c1/messages/..", 400},
		{"DELETE", "/v1/conversations/c1/messages/m1/..", 400},
		{"POST", "/v1/conversations/c1/messages/../messages", 400},
		{"GET", "/v1/conversations/c1/messages/m1/reactions/..", 400},
		{"GET", "/healthz/..", 400},
		{"GET", "/v1/conversations/c1/", 404},
		{"GET", "/v1/conversations/", 404},
		{"GET", "/v1", 404},
		{"PUT", "/v1/conversations/c1/messages", 405},
		{"DELETE", "/v1/conversations/c1", 405},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			e.t = t
			r := e.raw(tc.method, tc.path, auth, "")
			if r.status != tc.status {
				t.Fatalf("status %s (Location %q), want %d", r, r.header.Get("Location"), tc.status)
			}
			eb := checkErrorShape(t, r)
			if tc.status == 405 && (eb.Error.Code != "method_not_allowed" || r.header.Get("Allow") == "") {
				t.Fatalf("405 with code %q and Allow %q", eb.Error.Code, r.header.Get("Allow"))
			}
			if loc := r.header.Get("Location"); loc != "" {
				t.Fatalf("Location %q on a %d", loc, r.status)
			}
		})
	}
}

// TestJSONBodies: a JSON body is UTF-8 or refused (encoding/json replaced
// invalid bytes and unpaired surrogate escapes with U+FFFD and stored
// that); a JSON route refuses a Content-Type that is not JSON with 415; no
// Content-Type is taken as JSON (issue 14, item 13).
func TestJSONBodies(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createConv("j", "alice", "bob")
	e.post("j", "alice", "m1", "x")
	base := "/v1/conversations/j"
	routes := []struct{ method, path, body string }{
		{"POST", "/v1/conversations", `{"id":"j2","title":%s}`},
		{"POST", base + "/members", `{"user":%s}`},
		{"POST", base + "/messages", `{"id":"m2","text":%s}`},
		{"PATCH", base + "/messages/m1", `{"text":%s}`},
		{"PUT", base + "/read", `{"message_id":%s}`},
	}
	before := e.do(req{method: "GET", path: base + "/messages", auth: user("alice")}).body
	for _, rt := range routes {
		for _, bad := range []string{"\"\xff\xfe\"", "\"a\xc3\"", `"\ud800"`, `"\udc00x"`, `"\ud800\u0041"`, `"\ud83d\\udc4d"`} {
			t.Run(rt.method+" "+rt.path+" "+bad, func(t *testing.T) {
				e.t = t
				e.must(e.do(req{method: rt.method, path: rt.path, auth: user("alice"), body: strings.Replace(rt.body, "%s", bad, 1)}), 400)
			})
		}
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
			"application/json; charset=iso-8859-1", "application/jsonx", "json", "application/json;;"} {
			t.Run(rt.method+" "+rt.path+" "+ct, func(t *testing.T) {
				e.t = t
				e.must(e.do(req{method: rt.method, path: rt.path, auth: user("alice"), body: strings.Replace(rt.body, "%s", `"ok"`, 1),
					header: map[string]string{"Content-Type": ct}}), 415)
			})
		}
	}
	e.t = t
	if after := e.do(req{method: "GET", path: base + "/messages", auth: user("alice")}).body; string(after) != string(before) {
		t.Fatalf("refused bodies changed the messages:\nbefore %s\nafter  %s", before, after)
	}
	if _, err := e.locker.Get(context.Background(), convRes("j2")); err == nil {
		t.Fatal("a refused create registered a routing document")
	}
	// Valid UTF-8, literal or escaped (a surrogate pair), is stored as is;
	// JSON Content-Types in any spelling, or none, are taken.
	text := `"h\u00e9llo \ud83d\udc4d 👍 \ufffd"`
	for i, ct := range []string{"", "application/json", "Application/JSON; charset=UTF-8", "application/json;charset=utf-8"} {
		id := "u" + string(rune('0'+i))
		var m message
		e.must(e.do(req{method: "POST", path: base + "/messages", auth: user("alice"), body: `{"id":"` + id + `","text":` + text + `}`,
			header: map[string]string{"Content-Type": ct}}), 201).decode(t, &m)
		if want := "héllo 👍 👍 \uFFFD"; m.Text != want {
			t.Fatalf("stored %q, want %q", m.Text, want)
		}
	}
}

// TestServiceOnly: the handler the API puts in front of /metrics takes a
// service identity (401 without credentials, 403 for a user) and GET or
// HEAD only, with the API's JSON errors (issue 14, item 14).
func TestServiceOnly(t *testing.T) {
	e := newEnv(t, envOptions{})
	h := e.api.ServiceOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "metric 1\n")
	}))
	for _, tc := range []struct {
		method, auth string
		status       int
	}{
		{"GET", "", 401},
		{"GET", "Bearer user:alice", 403},
		{"GET", "Bearer svc:validator:wrong", 401},
		{"GET", "Bearer svc:other:" + svcSecret, 401},
		{"POST", "Bearer svc:validator:" + svcSecret, 405},
		{"GET", "Bearer svc:validator:" + svcSecret, 200},
		{"HEAD", "Bearer svc:validator:" + svcSecret, 200},
	} {
		r := httptest.NewRequest(tc.method, "/metrics", nil)
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		out := resp{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
		if out.status != tc.status {
			t.Fatalf("%s %q: %s, want %d", tc.method, tc.auth, out, tc.status)
		}
		if tc.status >= 400 {
			checkErrorShape(t, out)
		} else if tc.method == "GET" && string(out.body) != "metric 1\n" {
			t.Fatalf("GET: %s", out)
		}
	}
}

// TestNullBody: a JSON route takes an object; `null` decoded into nothing
// and created a conversation with a generated id (issue 14, item 17).
func TestNullBody(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createConv("n", "alice")
	e.post("n", "alice", "m1", "x")
	before := e.do(req{method: "GET", path: "/v1/conversations/n/messages", auth: user("alice")}).body
	for _, rt := range []struct{ method, path string }{
		{"POST", "/v1/conversations"},
		{"POST", "/v1/conversations/n/members"},
		{"POST", "/v1/conversations/n/messages"},
		{"PATCH", "/v1/conversations/n/messages/m1"},
		{"PUT", "/v1/conversations/n/read"},
	} {
		for _, body := range []string{"null", " \n\tnull \n", `"x"`, "1", "true", "[]"} {
			t.Run(rt.method+" "+rt.path+" "+body, func(t *testing.T) {
				e.t = t
				e.must(e.do(req{method: rt.method, path: rt.path, auth: user("alice"), body: body}), 400)
			})
		}
	}
	e.t = t
	if after := e.do(req{method: "GET", path: "/v1/conversations/n/messages", auth: user("alice")}).body; string(after) != string(before) {
		t.Fatalf("refused bodies changed the messages:\nbefore %s\nafter  %s", before, after)
	}
	r := e.must(e.do(req{method: "GET", path: "/v1/conversations/n/members", auth: user("alice")}), 200)
	if string(bytes.TrimSpace(r.body)) != `{"members":["alice"]}` {
		t.Fatalf("members after refused bodies: %s", r)
	}
}

// TestMediaServedAsAttachment: user media is served as a download in a
// sandbox, never as a page of the API's origin: an HTML upload must not
// run script there (issue 14, item 17).
func TestMediaServedAsAttachment(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.createConv("md", "alice", "bob")
	for _, ct := range []string{"text/html", "image/svg+xml", "image/png"} {
		var up struct{ ID string }
		e.must(e.do(req{method: "POST", path: "/v1/conversations/md/media", auth: user("alice"),
			body: "<script>alert(document.cookie)</script>", header: map[string]string{"Content-Type": ct}}), 201).decode(t, &up)
		r := e.must(e.do(req{method: "GET", path: "/v1/media/" + up.ID, auth: user("bob")}), 200)
		h := r.header
		if cd := h.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") {
			t.Errorf("%s: Content-Disposition %q, want attachment", ct, cd)
		}
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "sandbox") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("%s: Content-Security-Policy %q, want a sandbox with default-src 'none'", ct, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Type") != ct {
			t.Errorf("%s: headers %v", ct, h)
		}
	}
}

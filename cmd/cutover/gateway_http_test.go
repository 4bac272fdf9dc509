package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/cutover/cutover/app/api"
)

// TestGatewayHTTPEdges: what the API's listener answers before or beside
// the API handler keeps the API's promises (issue 14, items 12, 14, 17).
func TestGatewayHTTPEdges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the system")
	}
	s := startSystem(t)
	alice := http.Header{"Authorization": {"Bearer user:alice"}}

	// Path cleaning: never a redirect, always the JSON error shape.
	for _, p := range []string{"/v1/conversations/..", "/v1/conversations/x/../x", "//v1/conversations/x", "/metrics/../v1/conversations/x"} {
		st, h, body := rawGet(t, s.api+p, alice)
		if st != http.StatusBadRequest || !jsonError(h, body) {
			t.Errorf("GET %s: %d %q (Location %q), want 400 in the JSON error shape", p, st, body, h.Get("Location"))
		}
	}

	// /metrics takes a service identity, like the validation routes.
	for _, tc := range []struct {
		name   string
		h      http.Header
		status int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"user", alice, http.StatusForbidden},
		{"bad secret", http.Header{"Authorization": {"Bearer svc:validator:nope"}}, http.StatusUnauthorized},
	} {
		st, h, body := rawGet(t, s.api+"/metrics", tc.h)
		if st != tc.status || !jsonError(h, body) || strings.Contains(body, "cutover_") {
			t.Errorf("/metrics, %s: %d %q, want %d in the JSON error shape", tc.name, st, body, tc.status)
		}
	}
	if st, _, body := rawGet(t, s.api+"/metrics", metricsAuth); st != http.StatusOK || !strings.Contains(body, "cutover_http_responses_total") {
		t.Errorf("/metrics with the service identity: %d %.200q", st, body)
	}

	// Headers are capped at api.MaxHeaderBytes (net/http allows 4 KiB of
	// slack): the server refuses more with 431 before the API runs (in
	// plain text, as documented).
	big := alice.Clone()
	big.Set("X-Padding", strings.Repeat("p", api.MaxHeaderBytes+8<<10))
	if st, _, body := rawGet(t, s.api+"/v1/conversations/x", big); st != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a header of %d bytes: %d %.100q, want 431", api.MaxHeaderBytes+8<<10, st, body)
	}
	ok := alice.Clone()
	ok.Set("X-Padding", strings.Repeat("p", api.MaxHeaderBytes/2))
	if st, h, body := rawGet(t, s.api+"/v1/conversations/x", ok); st != http.StatusNotFound || !jsonError(h, body) {
		t.Errorf("a header of %d bytes: %d %q, want the API's 404", api.MaxHeaderBytes/2, st, body)
	}
	// A header the HTTP layer cannot parse (a NUL byte) is its own 400.
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.api, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\x00b\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a NUL byte in a header: %v %v, want 400", resp, err)
	}
}

// metricsAuth is what a scrape of the API's /metrics sends: the
// validator's service identity with the tests' secret.
var metricsAuth = http.Header{"Authorization": {"Bearer svc:validator:" + testServiceSecret}}

// rawGet sends a GET with the path as written and never follows a redirect.
func rawGet(t *testing.T, url string, h http.Header) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// jsonError reports whether a response is the API's JSON error shape.
func jsonError(h http.Header, body string) bool {
	var eb struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	return strings.HasPrefix(h.Get("Content-Type"), "application/json") &&
		json.Unmarshal([]byte(body), &eb) == nil && eb.Error.Code != "" && eb.Error.Message != ""
}

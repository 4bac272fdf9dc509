package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/app/api"
	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/internal/testutil"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/cutover/cutover/services/store"
)

// FuzzHandlers serves fuzzed requests (method, path and query, Authorization
// header, region pin header, body) through one api.Server over a real
// embedded NATS server and two in-memory chat regions, built once for the
// whole run. Fixture conversations: "c1" (alice and bob, messages m1 and m2,
// a reaction), "c2" (alice, under a write lock toward region-b, so its
// writes are 423) and "c3" (alice, pre-locked). Invariants:
//
//   - no handler panics (the server's recover would turn one into a 500 and
//     log "api: panic");
//   - no 5xx other than 503, and never a redirect (3xx);
//   - a JSON route never accepts a body that is not UTF-8 (encoding/json
//     would store U+FFFD in its place) or not an object (null decoded
//     into nothing);
//   - what a request creates is readable at its URL: the id of a 201 to
//     POST /v1/conversations or .../messages is answered by a GET;
//   - every 4xx and 503 has the JSON error shape {"error":{"code","message"}}
//     with the code of its status (checkErrorShape);
//   - a rejected (4xx) request changes nothing: not the routing bucket (its
//     stream's last sequence) and not the change sequence of any service's
//     records of the fixture resources or of the resources the request
//     names.
//
// The committed corpus (testdata/fuzz/FuzzHandlers) has one valid request
// per route and malformed variants; `go test` runs it.
func FuzzHandlers(f *testing.F) {
	fe := newFuzzEnv(f)
	for _, s := range handlerSeeds() {
		f.Add(s.method, s.path, s.auth, s.pin, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, path, auth, pin string, body []byte) {
		fe.check(t, method, path, auth, pin, body)
	})
}

type handlerSeed struct{ method, path, auth, pin, body string }

func handlerSeeds() []handlerSeed {
	alice, bob := "Bearer user:alice", "Bearer user:bob"
	svc := "Bearer svc:validator:" + svcSecret
	return []handlerSeed{
		{"GET", "/healthz", "", "", ""},
		{"POST", "/v1/conversations", alice, "", `{"id":"n1","title":"t","members":["bob"]}`},
		{"GET", "/v1/conversations/c1", alice, "", ""},
		{"POST", "/v1/conversations/c1/members", alice, "", `{"user":"carol"}`},
		{"GET", "/v1/conversations/c1/members", bob, "", ""},
		{"POST", "/v1/conversations/c1/messages", alice, "", `{"id":"k1","text":"hello","media":[]}`},
		{"GET", "/v1/conversations/c1/messages?limit=1&after=", alice, "", ""},
		{"GET", "/v1/conversations/c1/messages/m1", bob, "", ""},
		{"PATCH", "/v1/conversations/c1/messages/m1", alice, "", `{"text":"edited"}`},
		{"DELETE", "/v1/conversations/c1/messages/m2", bob, "", ""},
		{"GET", "/v1/conversations/c1/messages/m1/reactions", alice, "", ""},
		{"PUT", "/v1/conversations/c1/messages/m1/reactions/%F0%9F%91%8D", alice, "", ""},
		{"DELETE", "/v1/conversations/c1/messages/m1/reactions/%F0%9F%91%8D", bob, "", ""},
		{"PUT", "/v1/conversations/c1/read", bob, "", `{"message_id":"m1"}`},
		{"GET", "/v1/conversations/c1/read", bob, "", ""},
		{"POST", "/v1/conversations/c1/media", alice, "", "\x89PNG\r\n"},
		{"GET", "/v1/media/m_000000000000", alice, "", ""},
		{"GET", "/v1/routing/conv/c2", alice, "", ""},
		{"GET", "/v1/internal/regions/region-a/conversations/c1/digests", svc, "", ""},
		{"GET", "/v1/internal/regions/region-a/conversations/c1/slice?from=0&to=9223372036854775807", svc, "", ""},
		{"GET", "/v1/internal/regions/region-b/media/m_1/slice?from=x", svc, "", ""},
		// Refused by locks and pins: 423 and 400, nothing written.
		{"POST", "/v1/conversations/c2/messages", alice, "", `{"id":"k9","text":"locked"}`},
		{"DELETE", "/v1/conversations/c2/messages/m1", alice, "", ""},
		{"POST", "/v1/conversations/c3/messages", alice, "", `{"id":"k8","text":"pre"}`},
		{"POST", "/v1/conversations/c1/messages", alice, regionB, `{"id":"k7","text":"stale region"}`},
		{"GET", "/v1/conversations/c1", alice, "region-zz", ""},
		// Malformed bodies.
		{"POST", "/v1/conversations/c1/messages", alice, "", ``},
		{"POST", "/v1/conversations/c1/messages", alice, "", `{"text":`},
		{"POST", "/v1/conversations/c1/messages", alice, "", `{"text":"a"} {"text":"b"}`},
		{"POST", "/v1/conversations/c1/messages", alice, "", `{"text":"a","admin":true}`},
		{"POST", "/v1/conversations/c1/messages", alice, "", `{"text":5,"media":"x"}`},
		{"POST", "/v1/conversations/c1/messages", alice, "", `{"id":"","text":"x","media":["media/../../x"]}`},
		{"POST", "/v1/conversations/c1/messages", alice, "", `["text"]`},
		{"POST", "/v1/conversations/c1/messages", alice, "", "{\"text\":\"\xff\xfe\"}"},
		{"POST", "/v1/conversations/c1/messages", alice, "", "{\"id\":\"k5\",\"text\":\"\xff\xfe\"}"},
		{"POST", "/v1/conversations/c1/messages", alice, "", `{"id":"k6","text":"\ud800"}`},
		{"PATCH", "/v1/conversations/c1/messages/m1", alice, "", "{\"text\":\"\xc3\"}"},
		{"POST", "/v1/conversations", alice, "", "{\"title\":\"\xff\"}"},
		{"POST", "/v1/conversations", alice, "", `{"id":"a/b","title":"t"}`},
		{"POST", "/v1/conversations", alice, "", `{"id":"c1","title":"again"}`},
		{"POST", "/v1/conversations", alice, "", `{"id":"n2","members":["\u0001"]}`},
		{"POST", "/v1/conversations", alice, "", `{"id":"` + strings.Repeat("x", 300) + `"}`},
		{"POST", "/v1/conversations", alice, "", `{"id":null,"title":null,"members":null}`},
		{"POST", "/v1/conversations", alice, "", `null`},
		{"PUT", "/v1/conversations/c1/read", bob, "", ` null`},
		{"PATCH", "/v1/conversations/c1/messages/m1", bob, "", `{"text":"not mine"}`},
		{"PUT", "/v1/conversations/c1/read", bob, "", `{"message_id":""}`},
		{"POST", "/v1/conversations/c1/members", alice, "", `{"user":123}`},
		{"PUT", "/v1/conversations/c1/messages/m1/reactions/" + strings.Repeat("%F0%9F%91%8D", 40), alice, "", ""},
		// Bad paths, queries and methods.
		{"GET", "/v1/conversations/c1/messages?limit=-1", alice, "", ""},
		{"GET", "/v1/conversations/c1/messages?limit=99999999999999999999&after=%ff", alice, "", ""},
		{"GET", "/v1/conversations/a%2Fb/messages", alice, "", ""},
		{"GET", "/v1/conversations/%00", alice, "", ""},
		{"GET", "/v1/conversations/c1/../c2", alice, "", ""},
		{"GET", "//v1//conversations/c1", alice, "", ""},
		{"GET", "/v1/conversations/..", alice, "", ""},
		{"GET", "/v1/conversations/c1/messages/.", alice, "", ""},
		{"POST", "/v1/conversations", alice, "", `{"id":"..","title":"dots"}`},
		{"POST", "/v1/conversations", alice, "", `{"id":"a b?c#d","title":"t"}`},
		{"POST", "/v1/conversations/c1/messages", alice, "", `{"id":".","text":"dot"}`},
		{"GET", "/v1/routing/nope/x", alice, "", ""},
		{"GET", "/v1/routing/conv/" + strings.Repeat("y", 2000), alice, "", ""},
		{"BREW", "/v1/conversations/c1", alice, "", ""},
		{"DELETE", "/v1/conversations/c1", alice, "", ""},
		{"HEAD", "/v1/conversations/c1/messages", alice, "", ""},
		{"OPTIONS", "/v1/conversations", alice, "", ""},
		{"GET", "/nowhere", "", "", ""},
		// Bad credentials.
		{"GET", "/v1/conversations/c1", "", "", ""},
		{"GET", "/v1/conversations/c1", "Basic YWxpY2U6eA==", "", ""},
		{"GET", "/v1/conversations/c1", "Bearer ", "", ""},
		{"GET", "/v1/conversations/c1", "Bearer user:", "", ""},
		{"GET", "/v1/conversations/c1", "Bearer user:carol", "", ""},
		{"GET", "/v1/conversations/c1", "bearer   user:alice  ", "", ""},
		{"GET", "/v1/internal/regions/region-a/conversations/c1/digests", "Bearer svc:validator:wrong", "", ""},
		{"GET", "/v1/internal/regions/region-a/conversations/c1/digests", alice, "", ""},
		{"POST", "/v1/conversations", svc, "", `{"title":"service"}`},
	}
}

// fuzzEnv is the server under test and what check needs to watch it.
type fuzzEnv struct {
	srv     *api.Server
	regions map[string]*chat.Region
	js      jetstream.JetStream
	logs    *recordingHandler
}

func newFuzzEnv(tb testing.TB) *fuzzEnv {
	tb.Helper()
	ctx := context.Background()
	ns := natstest.RunServer(tb)
	nc, js := natstest.MustConnect(tb, ns.ClientURL())
	if _, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{}); err != nil {
		tb.Fatalf("ProvisionRouting: %v", err)
	}
	rs, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		tb.Fatalf("kvrouting.NewStore: %v", err)
	}
	c := testutil.NewTickingClock(time.Microsecond) // distinct creation times, as in newEnv
	lk, err := kvrouting.NewLocker(rs, kvrouting.LockConfig{
		PreLockLease: time.Hour, HardDeleteLease: 10 * time.Minute, WriteLease: time.Hour,
		MaxLease: 3 * time.Hour, SecondaryLease: 24 * time.Hour, ClockSkew: skew, Clock: c.Now, FenceConvergence: true,
	})
	if err != nil {
		tb.Fatalf("NewLocker: %v", err)
	}
	rv, err := kvrouting.NewResolver(rs, kvrouting.ResolverConfig{
		Tiers: []*kvrouting.Tier{kvrouting.NewTier("fuzz", time.Nanosecond, 0)}, ClockSkew: skew, Clock: c.Now,
	})
	if err != nil {
		tb.Fatalf("NewResolver: %v", err)
	}
	fe := &fuzzEnv{regions: map[string]*chat.Region{}, js: js, logs: &recordingHandler{}}
	for _, name := range []string{regionA, regionB} {
		r, err := chat.OpenRegion(chat.RegionOptions{Name: name, InMemory: true, Clock: c.Now})
		if err != nil {
			tb.Fatalf("OpenRegion: %v", err)
		}
		tb.Cleanup(func() { _ = r.Close() })
		fe.regions[name] = r
	}
	if fe.srv, err = api.New(api.Config{
		Regions: fe.regions, Resolver: rv, Locker: lk, DefaultRegion: regionA,
		Auth:           api.DevAuth{ServiceSecrets: map[string]string{"validator": svcSecret}},
		AllowRegionPin: true, MaxBodyBytes: 4 << 10,
		Logger: slog.New(fe.logs),
	}); err != nil {
		tb.Fatalf("api.New: %v", err)
	}

	setup := func(method, path, as, body string, want int) {
		tb.Helper()
		if st, b := fe.serve(method, path, "Bearer user:"+as, "", []byte(body)); st != want {
			tb.Fatalf("fixture %s %s: %d %s, want %d", method, path, st, b, want)
		}
	}
	setup("POST", "/v1/conversations", "alice", `{"id":"c1","title":"one","members":["bob"]}`, 201)
	setup("POST", "/v1/conversations/c1/messages", "alice", `{"id":"m1","text":"hello"}`, 201)
	setup("POST", "/v1/conversations/c1/messages", "bob", `{"id":"m2","text":"hi"}`, 201)
	setup("PUT", "/v1/conversations/c1/messages/m1/reactions/%F0%9F%91%8D", "bob", "", 200)
	for _, id := range []string{"c2", "c3"} {
		setup("POST", "/v1/conversations", "alice", `{"id":"`+id+`","title":"locked"}`, 201)
		setup("POST", "/v1/conversations/"+id+"/messages", "alice", `{"id":"m1","text":"before the lock"}`, 201)
	}
	res := func(id string) kvrouting.Resource { return kvrouting.Resource{Kind: chat.KindConversation, ID: id} }
	if _, err := lk.PreLock(ctx, res("c3"), regionB, "mig-c3"); err != nil {
		tb.Fatalf("PreLock c3: %v", err)
	}
	g, err := lk.PreLock(ctx, res("c2"), regionB, "mig-c2")
	if err != nil {
		tb.Fatalf("PreLock c2: %v", err)
	}
	c.Advance(2*skew + time.Millisecond) // past not-before + skew
	doc, err := lk.EscalateHardDelete(ctx, res("c2"), g.Token, g.Doc)
	if err != nil {
		tb.Fatalf("EscalateHardDelete c2: %v", err)
	}
	if _, err := lk.EscalateWrite(ctx, res("c2"), g.Token, doc); err != nil {
		tb.Fatalf("EscalateWrite c2: %v", err)
	}
	setup("POST", "/v1/conversations/c2/messages", "alice", `{"id":"k0","text":"refused"}`, 423)
	return fe
}

// serve runs one request through the handler; it needs no valid input.
func (fe *fuzzEnv) serve(method, path, auth, pin string, body []byte) (int, []byte) {
	r := httptest.NewRequest(method, path, bytes.NewReader(body))
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	if pin != "" {
		r.Header.Set(api.RegionHeader, pin)
	}
	w := httptest.NewRecorder()
	fe.srv.ServeHTTP(w, r)
	return w.Code, w.Body.Bytes()
}

// check serves one fuzzed request and asserts the invariants of
// FuzzHandlers. Inputs that no HTTP server would hand to a handler (an
// invalid method, URL or header value) are skipped.
func (fe *fuzzEnv) check(t *testing.T, method, path, auth, pin string, body []byte) {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	if !validHeaderValue(auth) || !validHeaderValue(pin) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, method, "http://api.test"+path, bytes.NewReader(body))
	if err != nil {
		return
	}
	r.RequestURI = path
	// A server's header parser trims surrounding blanks.
	if auth = strings.Trim(auth, " \t"); auth != "" {
		r.Header.Set("Authorization", auth)
	}
	if pin = strings.Trim(pin, " \t"); pin != "" {
		r.Header.Set(api.RegionHeader, pin)
	}
	watch := fe.watched(r, body)
	before := fe.snapshot(t, watch)
	fe.logs.reset()

	w := httptest.NewRecorder()
	fe.srv.ServeHTTP(w, r)
	res := w.Result()
	got, _ := io.ReadAll(res.Body)
	out := resp{status: res.StatusCode, header: res.Header, body: got}

	logs := fe.logs.take()
	for _, l := range logs {
		if strings.HasPrefix(l, "api: panic") {
			t.Fatalf("PANIC in a handler: %s %q -> %s\nlog: %s", method, path, out, l)
		}
	}
	if out.status >= 500 && out.status != http.StatusServiceUnavailable {
		t.Fatalf("%s %q (auth %q, pin %q, body %q) -> %s\nlogs: %q", method, path, auth, pin, body, out, logs)
	}
	if out.status >= 300 && out.status < 400 {
		t.Fatalf("redirect: %s %q -> %s (Location %q)", method, path, out, out.header.Get("Location"))
	}
	if out.status < 300 && jsonRoute(r) {
		if !utf8.Valid(body) {
			t.Fatalf("%s %q took a body that is not UTF-8 (%q) -> %s", method, path, body, out)
		}
		if t0 := bytes.TrimLeft(body, " \t\r\n"); len(t0) == 0 || t0[0] != '{' {
			t.Fatalf("%s %q took a body that is not a JSON object (%q) -> %s", method, path, body, out)
		}
	}
	if out.status == http.StatusCreated {
		fe.checkReachable(t, r, auth, out)
	}
	if out.status < 400 {
		return
	}
	checkErrorShape(t, out)
	if out.status >= 500 {
		return // unavailable: the write may or may not have happened
	}
	if after := fe.snapshot(t, watch); !maps.Equal(before, after) {
		t.Fatalf("rejected request changed state: %s %q (auth %q, pin %q, body %q) -> %s\nbefore %v\nafter  %v",
			method, path, auth, pin, body, out, before, after)
	}
}

// jsonRoute reports whether r goes to a route that reads a JSON body: a
// POST, PATCH or PUT other than a media upload or a reaction.
func jsonRoute(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPatch, http.MethodPut:
		return !strings.HasSuffix(r.URL.Path, "/media") && !strings.Contains(r.URL.Path, "/reactions/")
	}
	return false
}

// checkReachable asserts that the conversation or message a 201 created is
// answered by a GET of its URL, as the same caller.
func (fe *fuzzEnv) checkReachable(t *testing.T, r *http.Request, auth string, out resp) {
	t.Helper()
	var created struct {
		ID string `json:"id"`
	}
	if r.Method != http.MethodPost || json.Unmarshal(out.body, &created) != nil || created.ID == "" {
		return
	}
	var get string
	switch p := r.URL.EscapedPath(); {
	case p == "/v1/conversations":
		get = p + "/" + url.PathEscape(created.ID)
	case strings.HasPrefix(p, "/v1/conversations/") && strings.HasSuffix(p, "/messages"):
		get = p + "/" + url.PathEscape(created.ID)
	default:
		return
	}
	if st, b := fe.serve("GET", get, auth, "", nil); st != http.StatusOK {
		t.Fatalf("%s %s created %q, but GET %s -> %d %s", r.Method, r.URL.EscapedPath(), created.ID, get, st, b)
	}
}

// watched returns the resources whose change sequences check compares: the
// fixture conversations, and every conversation or media id that the
// request's path or body names.
func (fe *fuzzEnv) watched(r *http.Request, body []byte) []string {
	res := []string{chat.ConvResource("c1"), chat.ConvResource("c2"), chat.ConvResource("c3")}
	segs := strings.Split(r.URL.EscapedPath(), "/")
	for i := 0; i+1 < len(segs); i++ {
		id, err := url.PathUnescape(segs[i+1])
		if err != nil || id == "" {
			continue
		}
		switch segs[i] {
		case "conversations":
			res = append(res, chat.ConvResource(id))
		case "media":
			res = append(res, chat.MediaResource(id))
		}
	}
	var named struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(body, &named) == nil {
		if id, ok := named.ID.(string); ok && id != "" {
			res = append(res, chat.ConvResource(id))
		}
	}
	slices.Sort(res)
	return slices.Compact(res)
}

// snapshot returns, for every region, service and watched resource, the
// resource's change sequence (the sync token a historical export issues),
// or the error reading it; and the routing bucket's last stream sequence.
func (fe *fuzzEnv) snapshot(t *testing.T, watch []string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]string{}
	st, err := fe.js.Stream(ctx, "KV_"+cnats.RoutingBucket)
	if err != nil {
		t.Fatalf("routing stream: %v", err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatalf("routing stream info: %v", err)
	}
	out["routing"] = fmt.Sprint(info.State.LastSeq)
	for name, reg := range fe.regions {
		for _, p := range reg.Participants() {
			for _, res := range watch {
				tok, err := p.(interface{ Store() *store.Store }).Store().SyncToken(res)
				v := fmt.Sprint(tok)
				if err != nil {
					v = "error: " + err.Error()
				}
				out[name+"/"+p.Service()+"/"+res] = v
			}
		}
	}
	return out
}

// validHeaderValue reports whether a server would accept v as a header
// field value (no control characters other than tab).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// recordingHandler is a slog.Handler that keeps the server's log lines, so
// check can tell a recovered panic from another 500.
type recordingHandler struct {
	mu    sync.Mutex
	lines []string
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	var sb strings.Builder
	sb.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
		return true
	})
	h.mu.Lock()
	h.lines = append(h.lines, sb.String())
	h.mu.Unlock()
	return nil
}

func (h *recordingHandler) reset() { h.mu.Lock(); h.lines = nil; h.mu.Unlock() }

func (h *recordingHandler) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := h.lines
	h.lines = nil
	return l
}

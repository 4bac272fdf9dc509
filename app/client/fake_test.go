package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/internal/testutil"
)

// fakeAPI is a small in-memory stand-in for services/api, implementing just
// enough of the routes to exercise the client. The real server does not
// exist yet; end-to-end tests against it belong to the lead.
type fakeAPI struct {
	// fault, if set (setFault), sees every request first; returning true
	// means it answered the request (fault injection).
	fault atomic.Pointer[faultFunc]
	// tombstones makes deletes answer X-Cutover-Delete: tombstone.
	tombstones atomic.Bool

	requests atomic.Int64

	mu struct {
		sync.Mutex
		seq       int
		convs     map[string]*client.Conversation
		msgs      map[string][]*client.Message // per conversation, in post order
		deleted   map[string]bool              // conv/msg ids deleted
		reactions map[string][]client.Reaction // per conv/msg
		read      map[string]map[string]string // per conv: user → msg
		media     map[string]fakeMedia
	}
}

type faultFunc func(w http.ResponseWriter, r *http.Request) bool

func (f *fakeAPI) setFault(fn faultFunc) { f.fault.Store(&fn) }

type fakeMedia struct {
	client.Media
	data []byte
}

func newFakeAPI(t testing.TB) (*fakeAPI, *httptest.Server) {
	t.Helper()
	f := &fakeAPI{}
	f.mu.convs = map[string]*client.Conversation{}
	f.mu.msgs = map[string][]*client.Message{}
	f.mu.deleted = map[string]bool{}
	f.mu.reactions = map[string][]client.Reaction{}
	f.mu.read = map[string]map[string]string{}
	f.mu.media = map[string]fakeMedia{}
	srv := httptest.NewServer(f.handler())
	t.Cleanup(srv.Close)
	return f, srv
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": msg}})
}

// writeLocked answers 423 the way the server does: a body with the lock and
// retry_after_ms, and Retry-After in whole seconds.
func writeLocked(w http.ResponseWriter, lock string, retryAfter time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(retryAfter/time.Second))))
	writeJSON(w, http.StatusLocked, map[string]any{"error": map[string]any{
		"code": "locked", "message": "resource is being migrated", "lock": lock,
		"retry_after_ms": retryAfter.Milliseconds(),
	}})
}

func (f *fakeAPI) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/conversations", f.createConversation)
	mux.HandleFunc("GET /v1/conversations/{id}", f.getConversation)
	mux.HandleFunc("POST /v1/conversations/{id}/members", f.addMember)
	mux.HandleFunc("GET /v1/conversations/{id}/members", f.members)
	mux.HandleFunc("POST /v1/conversations/{id}/messages", f.postMessage)
	mux.HandleFunc("GET /v1/conversations/{id}/messages", f.listMessages)
	mux.HandleFunc("GET /v1/conversations/{id}/messages/{mid}", f.getMessage)
	mux.HandleFunc("PATCH /v1/conversations/{id}/messages/{mid}", f.editMessage)
	mux.HandleFunc("DELETE /v1/conversations/{id}/messages/{mid}", f.deleteMessage)
	mux.HandleFunc("PUT /v1/conversations/{id}/messages/{mid}/reactions/{emoji}", f.react)
	mux.HandleFunc("DELETE /v1/conversations/{id}/messages/{mid}/reactions/{emoji}", f.react)
	mux.HandleFunc("GET /v1/conversations/{id}/messages/{mid}/reactions", f.reactions)
	mux.HandleFunc("PUT /v1/conversations/{id}/read", f.markRead)
	mux.HandleFunc("GET /v1/conversations/{id}/read", f.readState)
	mux.HandleFunc("POST /v1/conversations/{id}/media", f.upload)
	mux.HandleFunc("GET /v1/media/{id}", f.getMedia)
	mux.HandleFunc("GET /v1/routing/{kind}/{id}", f.routing)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		if fp := f.fault.Load(); fp != nil && (*fp)(w, r) {
			return
		}
		user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer user:")
		if !ok || user == "" {
			writeError(w, http.StatusUnauthorized, "unauthorized", "no dev token")
			return
		}
		r.Header.Set("X-Test-User", user)
		mux.ServeHTTP(w, r)
	})
}

func userOf(r *http.Request) string { return r.Header.Get("X-Test-User") }

// conv returns the conversation if the caller is a member; it answers the
// error itself otherwise. Call with f.mu held.
func (f *fakeAPI) conv(w http.ResponseWriter, r *http.Request) *client.Conversation {
	c := f.mu.convs[r.PathValue("id")]
	if c == nil {
		writeError(w, http.StatusNotFound, "not_found", "no such conversation")
		return nil
	}
	for _, m := range c.Members {
		if m == userOf(r) {
			return c
		}
	}
	writeError(w, http.StatusForbidden, "forbidden", "not a member")
	return nil
}

func (f *fakeAPI) createConversation(w http.ResponseWriter, r *http.Request) {
	var in client.NewConversation
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if in.ID == "" {
		for in.ID == "" || f.mu.convs[in.ID] != nil {
			f.mu.seq++
			in.ID = fmt.Sprintf("c%d", f.mu.seq)
		}
	}
	if f.mu.convs[in.ID] != nil {
		writeError(w, http.StatusConflict, "conflict", "conversation exists")
		return
	}
	c := &client.Conversation{ID: in.ID, Title: in.Title, Members: append([]string{userOf(r)}, in.Members...),
		CreatedBy: userOf(r), CreatedAt: time.Now().UTC(), Region: "eu"}
	f.mu.convs[c.ID] = c
	writeJSON(w, http.StatusCreated, c)
}

func (f *fakeAPI) getConversation(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.conv(w, r); c != nil {
		writeJSON(w, http.StatusOK, c)
	}
}

func (f *fakeAPI) addMember(w http.ResponseWriter, r *http.Request) {
	var in struct{ User string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.User == "" {
		writeError(w, http.StatusBadRequest, "invalid", "user required")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.conv(w, r); c != nil {
		c.Members = append(c.Members, in.User)
		writeJSON(w, http.StatusOK, map[string]any{"members": c.Members})
	}
}

func (f *fakeAPI) members(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.conv(w, r); c != nil {
		writeJSON(w, http.StatusOK, map[string]any{"members": c.Members})
	}
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (f *fakeAPI) postMessage(w http.ResponseWriter, r *http.Request) {
	var in client.NewMessage
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.ID == "" {
		writeError(w, http.StatusBadRequest, "invalid", "id required")
		return
	}
	status, m := f.storeMessage(w, r, in)
	if m != nil {
		writeJSON(w, status, m)
	}
}

// storeMessage stores a post idempotently: 201 for a new id, 200 for the
// same id and content again, 409 otherwise. Its error answers are written
// to w; on success the caller writes the message.
func (f *fakeAPI) storeMessage(w http.ResponseWriter, r *http.Request, in client.NewMessage) (int, *client.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.conv(w, r)
	if c == nil {
		return 0, nil
	}
	key := c.ID + "/" + in.ID
	if f.mu.deleted[key] {
		writeError(w, http.StatusConflict, "conflict", "message id was deleted")
		return 0, nil
	}
	for _, m := range f.mu.msgs[c.ID] {
		if m.ID == in.ID {
			if m.Text == in.Text && sameStrings(m.Media, in.Media) && m.Author == userOf(r) {
				return http.StatusOK, m
			}
			writeError(w, http.StatusConflict, "conflict", "message id used for other content")
			return 0, nil
		}
	}
	m := &client.Message{ID: in.ID, Conversation: c.ID, Author: userOf(r), Text: in.Text,
		Media: in.Media, CreatedAt: time.Now().UTC()}
	f.mu.msgs[c.ID] = append(f.mu.msgs[c.ID], m)
	return http.StatusCreated, m
}

func (f *fakeAPI) listMessages(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, "invalid", "bad limit")
			return
		}
		limit = n
	}
	after := r.URL.Query().Get("after")
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.conv(w, r)
	if c == nil {
		return
	}
	all := f.mu.msgs[c.ID]
	start := 0
	if after != "" {
		start = len(all)
		for i, m := range all {
			if m.ID == after {
				start = i + 1
			}
		}
	}
	page := all[start:min(len(all), start+limit)]
	next := ""
	if start+len(page) < len(all) {
		next = page[len(page)-1].ID
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": page, "next": next})
}

// message finds a live message; it answers the error itself otherwise.
// Call with f.mu held.
func (f *fakeAPI) message(w http.ResponseWriter, r *http.Request) (int, *client.Message) {
	c := f.conv(w, r)
	if c == nil {
		return 0, nil
	}
	for i, m := range f.mu.msgs[c.ID] {
		if m.ID == r.PathValue("mid") {
			return i, m
		}
	}
	writeError(w, http.StatusNotFound, "not_found", "no such message")
	return 0, nil
}

func (f *fakeAPI) getMessage(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, m := f.message(w, r); m != nil {
		writeJSON(w, http.StatusOK, m)
	}
}

func (f *fakeAPI) editMessage(w http.ResponseWriter, r *http.Request) {
	var in struct{ Text string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, m := f.message(w, r); m != nil {
		if m.Author != userOf(r) {
			writeError(w, http.StatusForbidden, "forbidden", "not the author")
			return
		}
		m.Text, m.EditedAt = in.Text, time.Now().UTC()
		writeJSON(w, http.StatusOK, m)
	}
}

func (f *fakeAPI) deleteMessage(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, m := f.message(w, r)
	if m == nil {
		return
	}
	all := f.mu.msgs[m.Conversation]
	f.mu.msgs[m.Conversation] = append(all[:i:i], all[i+1:]...)
	f.mu.deleted[m.Conversation+"/"+m.ID] = true
	mode := "hard"
	if f.tombstones.Load() {
		mode = "tombstone"
	}
	w.Header().Set("X-Cutover-Delete", mode)
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeAPI) react(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, m := f.message(w, r)
	if m == nil {
		return
	}
	key := m.Conversation + "/" + m.ID
	rx := client.Reaction{User: userOf(r), Emoji: r.PathValue("emoji")}
	var kept []client.Reaction
	for _, x := range f.mu.reactions[key] {
		if x != rx {
			kept = append(kept, x)
		}
	}
	if r.Method == http.MethodPut {
		kept = append(kept, rx)
	}
	f.mu.reactions[key] = kept
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeAPI) reactions(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, m := f.message(w, r); m != nil {
		rx := f.mu.reactions[m.Conversation+"/"+m.ID]
		if rx == nil {
			rx = []client.Reaction{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"reactions": rx})
	}
}

func (f *fakeAPI) markRead(w http.ResponseWriter, r *http.Request) {
	var in struct {
		MessageID string `json:"message_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.MessageID == "" {
		writeError(w, http.StatusBadRequest, "invalid", "message_id required")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.conv(w, r); c != nil {
		if f.mu.read[c.ID] == nil {
			f.mu.read[c.ID] = map[string]string{}
		}
		f.mu.read[c.ID][userOf(r)] = in.MessageID
		w.WriteHeader(http.StatusNoContent)
	}
}

func (f *fakeAPI) readState(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.conv(w, r); c != nil {
		writeJSON(w, http.StatusOK, map[string]any{"read": f.mu.read[c.ID]})
	}
}

func (f *fakeAPI) upload(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid", err.Error())
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.conv(w, r)
	if c == nil {
		return
	}
	f.mu.seq++
	m := fakeMedia{Media: client.Media{ID: fmt.Sprintf("m%d", f.mu.seq), Conversation: c.ID,
		ContentType: r.Header.Get("Content-Type"), Size: int64(len(data))}, data: data}
	f.mu.media[m.ID] = m
	writeJSON(w, http.StatusCreated, m.Media)
}

func (f *fakeAPI) getMedia(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.mu.media[r.PathValue("id")]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no such media")
		return
	}
	w.Header().Set("Content-Type", m.ContentType)
	_, _ = w.Write(m.data)
}

func (f *fakeAPI) routing(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"resource": r.PathValue("kind") + "/" + r.PathValue("id"),
		"primary":  map[string]any{"region": "eu", "lock": map[string]any{"type": "none"}},
	})
}

// fakeClock is a Clock whose Sleep returns at once, advancing Now by the
// requested duration and recording it.
type fakeClock struct {
	*testutil.Clock
	mu      sync.Mutex
	sleeps  []time.Duration
	onSleep func(n int) // called after the n-th sleep (1-based) is recorded
}

var _ client.Clock = (*fakeClock)(nil)

func newFakeClock() *fakeClock { return &fakeClock{Clock: testutil.NewClock()} }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.Advance(d)
	n, hook := len(c.sleeps), c.onSleep
	c.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	return ctx.Err()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// testPolicy is the deterministic default policy: 20 ms doubling to 1 s,
// no jitter, 3 minutes.
var testPolicy = client.RetryPolicy{Initial: 20 * time.Millisecond, Max: time.Second, Threshold: 3 * time.Minute}

// MustClient returns a client for srv as alice with a fake clock and
// testPolicy (later options override).
func MustClient(tb testing.TB, srv *httptest.Server, opts ...client.Option) (*client.Client, *fakeClock) {
	tb.Helper()
	clk := newFakeClock()
	all := append([]client.Option{client.WithClock(clk), client.WithRetryPolicy(testPolicy)}, opts...)
	c, err := client.New(srv.URL, "user:alice", all...)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c, clk
}

// MustConversation creates a conversation through c.
func MustConversation(tb testing.TB, c *client.Client, id string, members ...string) client.Conversation {
	tb.Helper()
	conv, err := c.CreateConversation(context.Background(), client.NewConversation{ID: id, Title: "t " + id, Members: members})
	if err != nil {
		tb.Fatalf("CreateConversation: %v", err)
	}
	return conv
}

// failFirst returns a fault that answers the first n requests matching
// method and a path suffix with answer, and lets the rest through.
func failFirst(n int64, method, suffix string, answer func(w http.ResponseWriter, r *http.Request)) faultFunc {
	var seen atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != method || !strings.HasSuffix(r.URL.Path, suffix) {
			return false
		}
		if seen.Add(1) > n {
			return false
		}
		answer(w, r)
		return true
	}
}

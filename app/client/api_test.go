package client_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/services/contract"
)

// Every method against the in-memory fake, as alice and bob.
func TestWorkflowAgainstFake(t *testing.T) {
	f, srv := newFakeAPI(t)
	alice, _ := MustClient(t, srv)
	ctx := t.Context()

	conv := MustConversation(t, alice, "c1", "bob")
	if conv.CreatedAt.IsZero() || conv.CreatedBy != "alice" || conv.Region != "eu" || !slices.Equal(conv.Members, []string{"alice", "bob"}) {
		t.Errorf("conversation = %+v", conv)
	}
	auto, err := alice.CreateConversation(ctx, client.NewConversation{Title: "no id"})
	if err != nil || auto.ID == "" {
		t.Errorf("CreateConversation without id = %+v, %v", auto, err)
	}
	members, err := alice.AddMember(ctx, "c1", "carol")
	if err != nil || !slices.Equal(members, []string{"alice", "bob", "carol"}) {
		t.Errorf("AddMember = %v, %v", members, err)
	}
	if got, err := alice.Members(ctx, "c1"); err != nil || !slices.Equal(got, members) {
		t.Errorf("Members = %v, %v", got, err)
	}

	media, err := alice.UploadMedia(ctx, "c1", "image/png", []byte{1, 2, 3})
	if err != nil || media.ID == "" || media.Size != 3 || media.ContentType != "image/png" || media.Conversation != "c1" {
		t.Fatalf("UploadMedia = %+v, %v", media, err)
	}
	data, ct, err := alice.GetMedia(ctx, media.ID)
	if err != nil || ct != "image/png" || !slices.Equal(data, []byte{1, 2, 3}) {
		t.Errorf("GetMedia = %v %q, %v", data, ct, err)
	}

	ids := []string{client.NewMessageID(), client.NewMessageID(), client.NewMessageID()}
	if ids[0] == ids[1] || len(ids[0]) != 32 {
		t.Errorf("NewMessageID gave %v", ids)
	}
	for i, id := range ids {
		nm := client.NewMessage{ID: id, Text: "msg " + id}
		if i == 0 {
			nm.Media = []string{media.ID}
		}
		if _, err := alice.PostMessage(ctx, "c1", nm); err != nil {
			t.Fatalf("PostMessage: %v", err)
		}
	}
	page, err := alice.ListMessages(ctx, "c1", client.ListOptions{Limit: 2})
	if err != nil || len(page.Messages) != 2 || page.Next != ids[1] || !slices.Equal(page.Messages[0].Media, []string{media.ID}) {
		t.Errorf("ListMessages = %+v, %v", page, err)
	}
	var all []string
	for m, err := range alice.AllMessages(ctx, "c1", client.ListOptions{Limit: 1}) {
		if err != nil {
			t.Fatalf("AllMessages: %v", err)
		}
		all = append(all, m.ID)
	}
	if !slices.Equal(all, ids) {
		t.Errorf("AllMessages = %v, want %v", all, ids)
	}

	bob, err := client.New(srv.URL, "user:bob")
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	m, err := bob.GetMessage(ctx, "c1", ids[0])
	if err != nil || m.Author != "alice" || !m.EditedAt.IsZero() {
		t.Errorf("GetMessage = %+v, %v", m, err)
	}
	if _, err := bob.EditMessage(ctx, "c1", ids[0], "mine now"); !client.HasCode(err, client.CodeForbidden) {
		t.Errorf("bob edits alice's message: %v, want forbidden", err)
	}
	edited, err := alice.EditMessage(ctx, "c1", ids[0], "edited")
	if err != nil || edited.Text != "edited" || edited.EditedAt.IsZero() {
		t.Errorf("EditMessage = %+v, %v", edited, err)
	}

	for _, emoji := range []string{"👍", "a/b ?#%"} { // path escaping
		if err := bob.React(ctx, "c1", ids[0], emoji); err != nil {
			t.Fatalf("React %q: %v", emoji, err)
		}
	}
	rx, err := alice.Reactions(ctx, "c1", ids[0])
	want := []client.Reaction{{User: "bob", Emoji: "👍"}, {User: "bob", Emoji: "a/b ?#%"}}
	if err != nil || !slices.Equal(rx, want) {
		t.Errorf("Reactions = %v, %v; want %v", rx, err, want)
	}
	if err := bob.Unreact(ctx, "c1", ids[0], "👍"); err != nil {
		t.Fatal(err)
	}
	if rx, _ := alice.Reactions(ctx, "c1", ids[0]); len(rx) != 1 {
		t.Errorf("after Unreact: %v", rx)
	}

	if err := bob.MarkRead(ctx, "c1", ids[2]); err != nil {
		t.Fatal(err)
	}
	rs, err := alice.ReadState(ctx, "c1")
	if err != nil || !reflect.DeepEqual(rs, map[string]string{"bob": ids[2]}) {
		t.Errorf("ReadState = %v, %v", rs, err)
	}

	tomb, err := alice.DeleteMessage(ctx, "c1", ids[1])
	if err != nil || tomb {
		t.Errorf("DeleteMessage = %v, %v; want hard delete", tomb, err)
	}
	f.tombstones.Store(true)
	if tomb, err := alice.DeleteMessage(ctx, "c1", ids[2]); err != nil || !tomb {
		t.Errorf("DeleteMessage = %v, %v; want tombstone", tomb, err)
	}
	if _, err := alice.GetMessage(ctx, "c1", ids[1]); !client.HasCode(err, client.CodeNotFound) {
		t.Errorf("deleted message: %v, want not found", err)
	}
	if _, err := alice.PostMessage(ctx, "c1", client.NewMessage{ID: ids[1], Text: "msg " + ids[1]}); !client.HasCode(err, client.CodeConflict) {
		t.Errorf("re-post of a deleted id: %v, want conflict", err)
	}

	doc, err := alice.Routing(ctx, "conversation", "c1")
	if err != nil || doc.Resource != "conversation/c1" || doc.Primary.Region != "eu" || doc.Primary.Lock.Type != "none" {
		t.Errorf("Routing = %+v, %v", doc, err)
	}

	mallory, _ := client.New(srv.URL, "user:mallory")
	if _, err := mallory.GetConversation(ctx, "c1"); !client.HasCode(err, client.CodeForbidden) {
		t.Errorf("non-member: %v, want forbidden", err)
	}
	stranger, _ := client.New(srv.URL, "opaque-token")
	if _, err := stranger.GetConversation(ctx, "c1"); !client.HasCode(err, client.CodeUnauthorized) {
		t.Errorf("bad token: %v, want unauthorized", err)
	}
}

// A base URL with a path prefix keeps it.
func TestBaseURLPrefix(t *testing.T) {
	f, _ := newFakeAPI(t)
	srv := httptest.NewServer(http.StripPrefix("/api", f.handler()))
	defer srv.Close()
	c, err := client.New(srv.URL+"/api/", "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateConversation(t.Context(), client.NewConversation{ID: "c1", Title: "t"}); err != nil {
		t.Fatal(err)
	}
}

// canned answers one request per "METHOD /decoded/path".
type canned struct {
	status int
	header map[string]string
	body   string
}

func cannedServer(t *testing.T, answers map[string]canned) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.Method+" "+r.URL.Path]
		if !ok {
			t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusTeapot)
			return
		}
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		_, _ = w.Write([]byte(a.body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// The client decodes every documented response shape, written out as the
// contract states it rather than produced by the client's own types.
func TestDecodeEveryResponse(t *testing.T) {
	const (
		convJSON  = `{"id":"c1","title":"T","members":["alice","bob"],"created_by":"alice","created_at":"2025-01-02T03:04:00Z","region":"eu"}`
		conv2JSON = `{"id":"c2","title":"T","members":[],"created_by":"alice","created_at":"","region":"eu"}`
		msg1JSON  = `{"id":"m1","conversation":"c1","author":"alice","text":"hi","media":["md1"],"created_at":"2025-01-02T03:04:05.123456789Z"}`
		msg2JSON  = `{"id":"m2","conversation":"c1","author":"bob","text":"yo","media":[],"created_at":"2025-01-02T03:04:06Z","edited_at":"2025-01-02T04:00:00.5+01:00"}`
		msg3JSON  = `{"id":"m3","conversation":"c1","author":"bob","text":"","created_at":"2025-01-02T03:04:07Z","edited_at":null}`
		msg4JSON  = `{"id":"m4","conversation":"c1","author":"bob","text":"x","created_at":"2025-01-02T03:04:08Z","edited_at":"","extra":"ignored"}`
	)
	const routingJSON = `{"resource":"conversation/c1","revision":42,"source":"leader",` +
		`"primary":{"region":"eu","lock":{"type":"write","token":"ab12…","not_before":"2025-01-02T03:00:00Z","expiry":"2025-01-02T03:05:00Z"}},` +
		`"secondary":{"region":"us","lock":{"type":"secondary","token":"ab12…","expiry":"2025-01-04T03:00:00Z"}},` +
		`"migration_id":"mig-1","target":"us","pre_lock_expiry":"2025-01-04T03:00:00Z","max_expiry":"2025-01-16T03:00:00Z",` +
		`"updated_at":"2025-01-02T03:00:00.25Z","future_field":true}`
	created := time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC)
	msg1 := client.Message{ID: "m1", Conversation: "c1", Author: "alice", Text: "hi", Media: []string{"md1"}, CreatedAt: created}
	msg2 := client.Message{ID: "m2", Conversation: "c1", Author: "bob", Text: "yo", Media: []string{},
		CreatedAt: time.Date(2025, 1, 2, 3, 4, 6, 0, time.UTC), EditedAt: time.Date(2025, 1, 2, 3, 0, 0, 5e8, time.UTC)}
	conv := client.Conversation{ID: "c1", Title: "T", Members: []string{"alice", "bob"}, CreatedBy: "alice",
		CreatedAt: time.Date(2025, 1, 2, 3, 4, 0, 0, time.UTC), Region: "eu"}
	json200 := func(body string) canned { return canned{status: 200, body: body} }
	srv := cannedServer(t, map[string]canned{
		"POST /v1/conversations":                              {status: 201, body: convJSON},
		"GET /v1/conversations/c1":                            json200(convJSON),
		"GET /v1/conversations/c2":                            json200(conv2JSON),
		"POST /v1/conversations/c1/members":                   json200(`{"members":["alice","bob","carol"]}`),
		"GET /v1/conversations/c1/members":                    json200(`{"members":["alice","bob"]}`),
		"POST /v1/conversations/c1/messages":                  {status: 201, body: msg1JSON},
		"GET /v1/conversations/c1/messages":                   json200(`{"messages":[` + msg1JSON + `,` + msg2JSON + `],"next":"m2"}`),
		"GET /v1/conversations/c1/messages/m2":                json200(msg2JSON),
		"GET /v1/conversations/c1/messages/m3":                json200(msg3JSON),
		"GET /v1/conversations/c1/messages/m4":                json200(msg4JSON),
		"PATCH /v1/conversations/c1/messages/m2":              json200(msg2JSON),
		"DELETE /v1/conversations/c1/messages/m1":             {status: 204, header: map[string]string{"X-Cutover-Delete": "tombstone"}},
		"DELETE /v1/conversations/c1/messages/m2":             {status: 204, header: map[string]string{"X-Cutover-Delete": "hard"}},
		"PUT /v1/conversations/c1/messages/m1/reactions/👍":    {status: 204},
		"DELETE /v1/conversations/c1/messages/m1/reactions/👍": {status: 200, body: `{}`},
		"GET /v1/conversations/c1/messages/m1/reactions":      json200(`{"reactions":[{"user":"bob","emoji":"👍"}]}`),
		"PUT /v1/conversations/c1/read":                       {status: 204},
		"GET /v1/conversations/c1/read":                       json200(`{"read":{"alice":"m2","bob":"m1"}}`),
		"POST /v1/conversations/c1/media":                     {status: 201, body: `{"id":"md1","conversation":"c1","content_type":"image/png","size":3}`},
		"GET /v1/media/md1":                                   {status: 200, header: map[string]string{"Content-Type": "image/png"}, body: "\x01\x02\x03"},
		"GET /v1/routing/conversation/c1":                     json200(routingJSON),
	})
	c, _ := MustClient(t, srv)
	ctx := t.Context()
	check := func(name string, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v\nwant %#v", name, got, want)
		}
	}
	got, err := c.CreateConversation(ctx, client.NewConversation{Title: "T", Members: []string{"bob"}})
	check("CreateConversation", got, conv, err)
	got, err = c.GetConversation(ctx, "c1")
	check("GetConversation", got, conv, err)
	got, err = c.GetConversation(ctx, "c2")
	check("GetConversation without created_at", got, client.Conversation{ID: "c2", Title: "T", Members: []string{}, CreatedBy: "alice", Region: "eu"}, err)
	ms, err := c.AddMember(ctx, "c1", "carol")
	check("AddMember", ms, []string{"alice", "bob", "carol"}, err)
	ms, err = c.Members(ctx, "c1")
	check("Members", ms, []string{"alice", "bob"}, err)
	m, err := c.PostMessage(ctx, "c1", client.NewMessage{ID: "m1", Text: "hi", Media: []string{"md1"}})
	check("PostMessage", m, msg1, err)
	page, err := c.ListMessages(ctx, "c1", client.ListOptions{})
	check("ListMessages", page, client.MessagePage{Messages: []client.Message{msg1, msg2}, Next: "m2"}, err)
	m, err = c.GetMessage(ctx, "c1", "m2")
	check("GetMessage", m, msg2, err)
	for _, id := range []string{"m3", "m4"} {
		m, err = c.GetMessage(ctx, "c1", id)
		if err != nil || !m.EditedAt.IsZero() || m.CreatedAt.IsZero() {
			t.Errorf("GetMessage %s = %+v, %v; want no edit time", id, m, err)
		}
	}
	m, err = c.EditMessage(ctx, "c1", "m2", "yo")
	if err != nil || m.ID != "m2" {
		t.Errorf("EditMessage = %+v, %v", m, err)
	}
	tomb, err := c.DeleteMessage(ctx, "c1", "m1")
	check("DeleteMessage tombstone", tomb, true, err)
	tomb, err = c.DeleteMessage(ctx, "c1", "m2")
	check("DeleteMessage hard", tomb, false, err)
	check("React", nil, nil, c.React(ctx, "c1", "m1", "👍"))
	check("Unreact", nil, nil, c.Unreact(ctx, "c1", "m1", "👍"))
	rx, err := c.Reactions(ctx, "c1", "m1")
	check("Reactions", rx, []client.Reaction{{User: "bob", Emoji: "👍"}}, err)
	check("MarkRead", nil, nil, c.MarkRead(ctx, "c1", "m2"))
	rs, err := c.ReadState(ctx, "c1")
	check("ReadState", rs, map[string]string{"alice": "m2", "bob": "m1"}, err)
	md, err := c.UploadMedia(ctx, "c1", "image/png", []byte{1, 2, 3})
	check("UploadMedia", md, client.Media{ID: "md1", Conversation: "c1", ContentType: "image/png", Size: 3}, err)
	data, ct, err := c.GetMedia(ctx, "md1")
	check("GetMedia", []any{data, ct}, []any{[]byte{1, 2, 3}, "image/png"}, err)
	doc, err := c.Routing(ctx, "conversation", "c1")
	at := func(day, h, m int) time.Time { return time.Date(2025, 1, day, h, m, 0, 0, time.UTC) }
	check("Routing", doc, client.RoutingDocument{
		Resource: "conversation/c1", Revision: 42, Source: "leader",
		Primary: client.RoutingLocation{Region: "eu", Lock: client.RoutingLock{Type: "write", Token: "ab12…",
			NotBefore: at(2, 3, 0), Expiry: at(2, 3, 5)}},
		Secondary: &client.RoutingLocation{Region: "us", Lock: client.RoutingLock{Type: "secondary", Token: "ab12…",
			Expiry: at(4, 3, 0)}},
		MigrationID: "mig-1", Target: "us", PreLockExpiry: at(4, 3, 0), MaxExpiry: at(16, 3, 0),
		UpdatedAt: at(2, 3, 0).Add(250 * time.Millisecond), Raw: json.RawMessage(routingJSON),
	}, err)
}

// The error envelope, with and without the optional fields.
func TestDecodeErrorBody(t *testing.T) {
	srv := cannedServer(t, map[string]canned{
		"GET /v1/conversations/a": {status: 404, body: `{"error":{"code":"not_found","message":"no such conversation"}}`},
		"POST /v1/conversations/b/members": {status: 400, header: map[string]string{"Retry-After": "7"},
			body: `{"error":{"code":"invalid","message":"bad","lock":"write","retry_after_ms":1500}}`},
		"POST /v1/conversations/c/members": {status: 401, header: map[string]string{"Retry-After": "7"},
			body: `{"error":{"code":"unauthorized","message":"who"}}`},
	})
	c, _ := MustClient(t, srv)
	var ae *client.APIError
	_, err := c.GetConversation(t.Context(), "a")
	if !errors.As(err, &ae) || *ae != (client.APIError{Status: 404, Code: client.CodeNotFound, Message: "no such conversation", Method: "GET", Path: "/v1/conversations/a"}) {
		t.Errorf("err = %#v", err)
	}
	if s := err.Error(); !strings.Contains(s, "404 not_found: no such conversation") {
		t.Errorf("Error() = %q", s)
	}
	_, err = c.AddMember(t.Context(), "b", "x")
	if !errors.As(err, &ae) || ae.Lock != "write" || ae.RetryAfter != 1500*time.Millisecond {
		t.Errorf("body hint should win over the header: %#v", ae)
	}
	_, err = c.AddMember(t.Context(), "c", "x")
	if !errors.As(err, &ae) || ae.RetryAfter != 7*time.Second {
		t.Errorf("header hint: %#v", ae)
	}
}

// Garbage from the server is a clear error, never a zero value passed off
// as data, and never retried.
func TestGarbageResponses(t *testing.T) {
	srv := cannedServer(t, map[string]canned{
		"GET /v1/conversations/html":              {status: 200, body: "<html>oops, a proxy</html>"},
		"GET /v1/conversations/empty":             {status: 200},
		"GET /v1/conversations/types":             {status: 200, body: `{"id":5}`},
		"GET /v1/conversations/c1/messages/m1":    {status: 200, body: `{"id":"m1","created_at":"yesterday"}`},
		"POST /v1/conversations/c1/messages":      {status: 201, body: `{"id":`},
		"DELETE /v1/conversations/c1/messages/m1": {status: 204},
		"GET /v1/routing/conversation/null":       {status: 200, body: `null`},
		"GET /v1/routing/conversation/time":       {status: 200, body: `{"primary":{"region":"eu","lock":{"type":"write","expiry":"soon"}}}`},
		"GET /v1/routing/conversation/array":      {status: 200, body: `[1]`},
		"GET /v1/conversations/proxy":             {status: 500, body: "<html>\n<b>Internal</b> error\n</html>"},
	})
	c, _ := MustClient(t, srv)
	ctx := t.Context()
	bad := func(name string, err error, mention string) {
		t.Helper()
		var ae *client.APIError
		if !errors.Is(err, client.ErrBadResponse) || errors.As(err, &ae) {
			t.Errorf("%s: err = %v, want ErrBadResponse", name, err)
		} else if !strings.Contains(err.Error(), mention) {
			t.Errorf("%s: err %q does not mention %q", name, err, mention)
		}
	}
	_, err := c.GetConversation(ctx, "html")
	bad("html", err, "oops, a proxy")
	_, err = c.GetConversation(ctx, "empty")
	bad("empty", err, "empty body")
	_, err = c.GetConversation(ctx, "types")
	bad("types", err, "/v1/conversations/types")
	_, err = c.GetMessage(ctx, "c1", "m1")
	bad("time", err, "created_at")
	_, err = c.PostMessage(ctx, "c1", client.NewMessage{ID: "m1", Text: "x"})
	bad("truncated", err, "POST")
	_, err = c.DeleteMessage(ctx, "c1", "m1")
	bad("delete header", err, "X-Cutover-Delete")
	_, err = c.Routing(ctx, "conversation", "null")
	bad("routing null", err, "primary region")
	_, err = c.Routing(ctx, "conversation", "array")
	bad("routing array", err, "routing")
	_, err = c.Routing(ctx, "conversation", "time")
	bad("routing time", err, "expiry")

	_, err = c.GetConversation(ctx, "proxy")
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != 500 || ae.Code != "" || !strings.Contains(ae.Message, "<b>Internal</b> error") || strings.Contains(ae.Message, "\n") {
		t.Errorf("non-JSON error body: %#v", ae)
	}
	if st := c.Stats(); st.Attempts != 10 {
		t.Errorf("Attempts = %d, want 10 (nothing retried)", st.Attempts)
	}
}

// Cheap mistakes are caught before any request.
func TestValidationSendsNothing(t *testing.T) {
	f, srv := newFakeAPI(t)
	c, _ := MustClient(t, srv)
	ctx := t.Context()
	calls := map[string]func() error{
		"GetConversation": func() error { _, err := c.GetConversation(ctx, ""); return err },
		"CreateConversation member": func() error {
			_, err := c.CreateConversation(ctx, client.NewConversation{Title: "t", Members: []string{"bob", ""}})
			return err
		},
		"AddMember conv":   func() error { _, err := c.AddMember(ctx, "", "bob"); return err },
		"AddMember user":   func() error { _, err := c.AddMember(ctx, "c1", ""); return err },
		"Members":          func() error { _, err := c.Members(ctx, ""); return err },
		"PostMessage conv": func() error { _, err := c.PostMessage(ctx, "", client.NewMessage{ID: "m"}); return err },
		"PostMessage id":   func() error { _, err := c.PostMessage(ctx, "c1", client.NewMessage{Text: "no id"}); return err },
		"PostMessage media": func() error {
			_, err := c.PostMessage(ctx, "c1", client.NewMessage{ID: "m", Media: []string{""}})
			return err
		},
		"ListMessages": func() error { _, err := c.ListMessages(ctx, "", client.ListOptions{}); return err },
		"ListMessages limit": func() error {
			_, err := c.ListMessages(ctx, "c1", client.ListOptions{Limit: -1})
			return err
		},
		"GetMessage":       func() error { _, err := c.GetMessage(ctx, "c1", ""); return err },
		"EditMessage":      func() error { _, err := c.EditMessage(ctx, "c1", "", "x"); return err },
		"DeleteMessage":    func() error { _, err := c.DeleteMessage(ctx, "", "m"); return err },
		"React":            func() error { return c.React(ctx, "c1", "m", "") },
		"Unreact":          func() error { return c.Unreact(ctx, "c1", "", "x") },
		"Reactions":        func() error { _, err := c.Reactions(ctx, "c1", ""); return err },
		"MarkRead":         func() error { return c.MarkRead(ctx, "c1", "") },
		"ReadState":        func() error { _, err := c.ReadState(ctx, ""); return err },
		"UploadMedia conv": func() error { _, err := c.UploadMedia(ctx, "", "image/png", nil); return err },
		"UploadMedia type": func() error { _, err := c.UploadMedia(ctx, "c1", "", nil); return err },
		"GetMedia":         func() error { _, _, err := c.GetMedia(ctx, ""); return err },
		"Routing":          func() error { _, err := c.Routing(ctx, "conversation", ""); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if n := f.requests.Load(); n != 0 {
		t.Errorf("%d requests sent for invalid calls", n)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		url, token string
		opts       []client.Option
	}{
		"empty url":     {"", "user:a", nil},
		"no scheme":     {"localhost:8080", "user:a", nil},
		"ftp":           {"ftp://host", "user:a", nil},
		"query":         {"http://host?x=1", "user:a", nil},
		"empty token":   {"http://host", " ", nil},
		"token newline": {"http://host", "user:a\r\nX: y", nil},
		"max < initial": {"http://host", "user:a", []client.Option{client.WithRetryPolicy(client.RetryPolicy{Initial: time.Second, Max: time.Millisecond})}},
		"neg threshold": {"http://host", "user:a", []client.Option{client.WithRetryPolicy(client.RetryPolicy{Threshold: -1})}},
		"neg timeout":   {"http://host", "user:a", []client.Option{client.WithTimeout(-1)}},
		"nil http":      {"http://host", "user:a", []client.Option{client.WithHTTPClient(nil)}},
		"nil clock":     {"http://host", "user:a", []client.Option{client.WithClock(nil)}},
		"neg workers":   {"http://host", "user:a", []client.Option{client.WithWorkers(-2)}},
	} {
		if _, err := client.New(tc.url, tc.token, tc.opts...); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := client.New("https://api.example/", "user:a", client.WithHTTPClient(&http.Client{}), client.WithUserAgent("t/1")); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

func TestRetryPolicyDefaults(t *testing.T) {
	var p client.RetryPolicy
	p.EnsureDefaults()
	want := client.RetryPolicy{Initial: 20 * time.Millisecond, Max: time.Second, Threshold: 3 * time.Minute}
	if p != want {
		t.Errorf("EnsureDefaults = %+v, want %+v", p, want)
	}
	if d := client.DefaultRetryPolicy(); !d.Jitter || d.Initial != want.Initial || d.Max != want.Max || d.Threshold != want.Threshold {
		t.Errorf("DefaultRetryPolicy = %+v", d)
	}
	// An Initial above the default Max raises the default Max with it.
	p = client.RetryPolicy{Initial: 2 * time.Second}
	p.EnsureDefaults()
	if p.Max != 2*time.Second || p.Validate() != nil {
		t.Errorf("EnsureDefaults with a large Initial = %+v", p)
	}
}

// The client's codes are the server's (services/errors.go), with the same
// statuses.
func TestCodesMatchServer(t *testing.T) {
	want := map[client.Code]int{
		client.CodeInvalid: 400, client.CodeUnauthorized: 401, client.CodeForbidden: 403,
		client.CodeNotFound: 404, client.CodeConflict: 409, client.CodeTooLarge: 413,
		client.CodeLocked: 423, client.CodeUnavailable: 503, client.CodeInternal: 500,
		client.CodeMethodNotAllowed: 405, client.CodeUnsupportedMediaType: 415,
	}
	server := []contract.Code{contract.CodeInvalid, contract.CodeUnauthorized, contract.CodeForbidden,
		contract.CodeNotFound, contract.CodeConflict, contract.CodeTooLarge, contract.CodeLocked,
		contract.CodeUnavailable, contract.CodeInternal, contract.CodeMethodNotAllowed, contract.CodeUnsupportedMediaType}
	if len(server) != len(want) {
		t.Fatalf("server has %d codes, client %d", len(server), len(want))
	}
	for _, sc := range server {
		status, ok := want[client.Code(sc)]
		if !ok {
			t.Errorf("server code %q unknown to the client", sc)
			continue
		}
		if sc.HTTPStatus() != status {
			t.Errorf("code %q: server status %d, client expects %d", sc, sc.HTTPStatus(), status)
		}
	}
	// A locked APIError built the way the server answers reports Locked.
	ae := &client.APIError{Status: contract.CodeLocked.HTTPStatus(), Code: client.CodeLocked}
	if !ae.Locked() {
		t.Error("Locked() false for a 423")
	}
}

// Every request carries the token and the client's headers; WithHeader adds
// to them without replacing them.
func TestRequestHeaders(t *testing.T) {
	type seen struct{ auth, accept, ua, region, ctype string }
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get("Authorization"), r.Header.Get("Accept"), r.Header.Get("User-Agent"),
			r.Header.Get("X-Cutover-Region"), r.Header.Get("Content-Type")}
		writeJSON(w, http.StatusCreated, map[string]any{"id": "md1", "conversation": "c1", "content_type": "text/plain", "size": 2})
	}))
	defer srv.Close()
	c, err := client.New(srv.URL, "user:alice", client.WithHeader("X-Cutover-Region", "us"),
		client.WithHeader("Authorization", "Bearer user:mallory"), client.WithUserAgent("ui/2"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadMedia(t.Context(), "c1", "text/plain", []byte("hi")); err != nil {
		t.Fatal(err)
	}
	want := seen{"Bearer user:alice", "application/json", "ui/2", "us", "text/plain"}
	if s := <-got; s != want {
		t.Errorf("headers = %+v, want %+v", s, want)
	}
}

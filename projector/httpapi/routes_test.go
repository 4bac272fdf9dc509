package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/projector"
	"github.com/cutover/cutover/projector/httpapi"
	"github.com/cutover/cutover/services/contract"
)

// publish appends one event of migration id with the state after it.
func publish(t *testing.T, js jetstream.JetStream, id, typ string, body events.Body, st events.State) uint64 {
	t.Helper()
	st.ID = id
	b, err := events.Encode(&events.Envelope{ID: id + "-" + typ, MigrationID: id, Resource: st.Resource, Time: time.Now(), Body: body, State: &st})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(context.Background(), events.EventSubject(id), b)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}

// served starts a projector over a real MIGRATION_EVENTS stream holding
// two migrations (one completed, one active) and serves its read models.
func served(t *testing.T, o httpapi.Options) (*httptest.Server, uint64) {
	t.Helper()
	ns := natstest.RunServer(t)
	_, js := natstest.MustConnect(t, ns.ClientURL())
	ctx := t.Context()
	if err := orchestrator.Provision(ctx, js, orchestrator.StreamConfig{Memory: true}); err != nil {
		t.Fatal(err)
	}
	done := events.State{Resource: "conv/a", Source: "us", Target: "eu", Attempt: 1, Phase: events.PhaseRequested, Status: events.StatusActive}
	publish(t, js, "m-done", events.TypeRequested, events.Requested{Resource: "conv/a", Target: "eu", Attempt: 1, MaxAttempts: 3}, done)
	done.Phase, done.Status = events.PhaseDone, events.StatusCompleted
	publish(t, js, "m-done", events.TypeCompleted, events.Completed{}, done)
	active := events.State{Resource: "conv/b", Source: "us", Target: "eu", Attempt: 1, Phase: events.PhaseRequested, Status: events.StatusActive}
	last := publish(t, js, "m-active", events.TypeRequested, events.Requested{Resource: "conv/b", Target: "eu", Attempt: 1, MaxAttempts: 3}, active)
	p := projector.New(js, nil)
	go func() { _ = p.Run(ctx) }()
	t.Cleanup(func() { _ = p.Close() })
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := p.WaitSeq(wctx, last); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.Handler(p, nil, o))
	t.Cleanup(srv.Close)
	return srv, last
}

func get(t *testing.T, srv *httptest.Server, path string, v any) int {
	t.Helper()
	res, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if v != nil {
		if err := json.NewDecoder(res.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return res.StatusCode
}

type errBody struct {
	Error struct{ Code, Message string } `json:"error"`
}

// TestReadModelRoutes: every route of the projector's API over a real
// event stream — health with the last sequence, the list with its filters
// and limit, one migration with its timeline, the errors of unknown ids,
// bad limits and unknown routes in the API's error shape.
func TestReadModelRoutes(t *testing.T) {
	srv, last := served(t, httpapi.Options{})
	var health struct {
		OK      bool   `json:"ok"`
		LastSeq uint64 `json:"last_seq"`
	}
	if code := get(t, srv, "/healthz", &health); code != 200 || !health.OK || health.LastSeq != last {
		t.Fatalf("healthz %d %+v, want last_seq %d", code, health, last)
	}
	var list struct {
		LastSeq    uint64              `json:"last_seq"`
		Migrations []httpapi.Migration `json:"migrations"`
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", []string{"m-active", "m-done"}},
		{"?status=completed", []string{"m-done"}},
		{"?resource=conv/b", []string{"m-active"}},
		{"?limit=1", []string{"m-active"}},
		{"?status=failed", nil},
	} {
		list.Migrations = nil
		if code := get(t, srv, "/v1/migrations"+c.query, &list); code != 200 {
			t.Fatalf("list %s: %d", c.query, code)
		}
		var ids []string
		for _, m := range list.Migrations {
			ids = append(ids, m.ID)
			if m.Timeline != nil {
				t.Fatalf("list %s: a timeline in the list", c.query)
			}
		}
		if len(ids) != len(c.want) || (len(ids) > 0 && ids[0] != c.want[0]) {
			t.Fatalf("list %s: %v, want %v (newest first)", c.query, ids, c.want)
		}
	}
	var m httpapi.Migration
	if code := get(t, srv, "/v1/migrations/m-done", &m); code != 200 || m.Status != "completed" || m.Resource != "conv/a" || len(m.Timeline) != 2 ||
		m.Timeline[0].Type != events.TypeRequested || m.Timeline[1].Type != events.TypeCompleted {
		t.Fatalf("one migration: %d %+v", code, m)
	}
	for path, want := range map[string]struct {
		code int
		what string
	}{
		"/v1/migrations/m-nope":   {404, "not_found"},
		"/v1/tenants/t-nope":      {404, "not_found"},
		"/v1/migrations?limit=-1": {400, "invalid"},
		"/v1/migrations?limit=x":  {400, "invalid"},
		"/v2/anything":            {404, "not_found"},
	} {
		var e errBody
		if code := get(t, srv, path, &e); code != want.code || e.Error.Code != want.what || e.Error.Message == "" {
			t.Errorf("%s: %d %+v, want %d %s", path, code, e, want.code, want.what)
		}
	}
}

// TestReadModelRoutesBehindAuthentication: with an authenticator, every
// route but /healthz answers 401 to a refused request, in the API's error
// shape; an accepted one is served.
func TestReadModelRoutesBehindAuthentication(t *testing.T) {
	srv, _ := served(t, httpapi.Options{Authenticate: func(r *http.Request) error {
		if r.Header.Get("Authorization") == "Bearer ok" {
			return nil
		}
		return contract.Errorf(contract.CodeUnauthorized, "bad or expired user token")
	}})
	if code := get(t, srv, "/healthz", nil); code != 200 {
		t.Fatalf("healthz behind authentication: %d, want 200 (health checks carry no credentials)", code)
	}
	for _, path := range []string{"/v1/migrations", "/v1/migrations/m-done", "/v1/tenants/t"} {
		var e errBody
		if code := get(t, srv, path, &e); code != 401 || e.Error.Code != "unauthorized" {
			t.Fatalf("%s without credentials: %d %+v", path, code, e)
		}
	}
	req, _ := http.NewRequest("GET", srv.URL+"/v1/migrations/m-done", nil)
	req.Header.Set("Authorization", "Bearer ok")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("an accepted request: %d", res.StatusCode)
	}
}

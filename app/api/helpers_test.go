package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/app/api"
	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/internal/testutil"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

const (
	regionA   = "region-a"
	regionB   = "region-b"
	svcSecret = "s3cret"
	skew      = time.Second
)

type envOptions struct {
	// tierTTL is the resolver's cache TTL (default 1 ns: every request reads
	// the routing store, so lock changes show at once).
	tierTTL time.Duration
	// maxBody overrides the API's body cap.
	maxBody int64
	// frontTTL, when set, gives each region its own resolver: region A's
	// (the default region's: the front view) caches for frontTTL, region
	// B's reads through every time.
	frontTTL time.Duration
	// queueWrites, queueMax and queuePerResource set the write queue.
	queueWrites                time.Duration
	queueMax, queuePerResource int
}

// env is one embedded NATS server with the ROUTING bucket, two chat
// regions on in-memory Pebble, and the API over real HTTP.
type env struct {
	t *testing.T
	// clock is shared by the locker, the resolver and the stores. Every
	// reading moves it on by a microsecond, so records get distinct,
	// increasing creation times; tests jump it with Advance.
	clock   *testutil.Clock
	regions map[string]*chat.Region
	locker  *kvrouting.Locker
	rv      *kvrouting.Resolver
	api     *api.Server
	srv     *httptest.Server
}

func newEnv(t *testing.T, opts envOptions) *env {
	t.Helper()
	if opts.tierTTL == 0 {
		opts.tierTTL = time.Nanosecond
	}
	ns := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, ns.ClientURL())
	ctx := context.Background()
	if _, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{}); err != nil {
		t.Fatalf("ProvisionRouting: %v", err)
	}
	rs, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		t.Fatalf("kvrouting.NewStore: %v", err)
	}
	c := testutil.NewTickingClock(time.Microsecond)
	lk, err := kvrouting.NewLocker(rs, kvrouting.LockConfig{
		PreLockLease: time.Hour, HardDeleteLease: 10 * time.Minute, WriteLease: time.Minute,
		MaxLease: 3 * time.Hour, SecondaryLease: 24 * time.Hour, ConvergenceDelay: 0, FenceConvergence: true,
		ClockSkew: skew, Clock: c.Now,
	})
	if err != nil {
		t.Fatalf("NewLocker: %v", err)
	}
	rv, err := kvrouting.NewResolver(rs, kvrouting.ResolverConfig{
		Tiers: []*kvrouting.Tier{kvrouting.NewTier("test", opts.tierTTL, 0)}, ClockSkew: skew, Clock: c.Now,
	})
	if err != nil {
		t.Fatalf("NewResolver: %v", err)
	}
	e := &env{t: t, clock: c, regions: map[string]*chat.Region{}, locker: lk, rv: rv}
	for _, name := range []string{regionA, regionB} {
		r, err := chat.OpenRegion(chat.RegionOptions{Name: name, InMemory: true, Clock: c.Now})
		if err != nil {
			t.Fatalf("OpenRegion: %v", err)
		}
		t.Cleanup(func() { _ = r.Close() })
		e.regions[name] = r
	}
	var perRegion map[string]*kvrouting.Resolver
	if opts.frontTTL > 0 {
		front, err := kvrouting.NewResolver(rs, kvrouting.ResolverConfig{
			Tiers: []*kvrouting.Tier{kvrouting.NewTier("front", opts.frontTTL, 0)}, ClockSkew: skew, Clock: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		perRegion = map[string]*kvrouting.Resolver{regionA: front, regionB: rv}
	}
	s, err := api.New(api.Config{
		Regions: e.regions, Resolver: rv, Resolvers: perRegion, Locker: lk, DefaultRegion: regionA,
		Auth:           api.DevAuth{ServiceSecrets: map[string]string{"validator": svcSecret}},
		AllowRegionPin: true, MaxBodyBytes: opts.maxBody,
		QueueWrites: opts.queueWrites, QueueMax: opts.queueMax, QueuePerResource: opts.queuePerResource,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("api.New: %v", err)
	}
	e.api = s
	t.Cleanup(s.Close)
	e.srv = httptest.NewServer(s)
	t.Cleanup(e.srv.Close)
	return e
}

// resp is a response, its body read.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) String() string { return fmt.Sprintf("%d %s", r.status, bytes.TrimSpace(r.body)) }

// decode unmarshals the body into v, failing the test on error.
func (r resp) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r, err)
	}
}

// errBody is the error shape every error response must have.
type errBody struct {
	Error struct {
		Code         string `json:"code"`
		Message      string `json:"message"`
		Lock         string `json:"lock"`
		RetryAfterMS *int64 `json:"retry_after_ms"`
	} `json:"error"`
}

// req is one request: auth is the bearer token ("" for none), region pins
// the request when non-empty, body is JSON-encoded unless it is []byte or
// a string.
type req struct {
	method, path, auth, region string
	body                       any
	header                     map[string]string
}

func (e *env) do(r req) resp {
	e.t.Helper()
	var body io.Reader
	switch b := r.body.(type) {
	case nil:
	case []byte:
		body = bytes.NewReader(b)
	case string:
		body = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatalf("marshal: %v", err)
		}
		body = bytes.NewReader(j)
	}
	hr, err := http.NewRequest(r.method, e.srv.URL+r.path, body)
	if err != nil {
		e.t.Fatalf("NewRequest: %v", err)
	}
	if r.auth != "" {
		hr.Header.Set("Authorization", "Bearer "+r.auth)
	}
	if r.region != "" {
		hr.Header.Set(api.RegionHeader, r.region)
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		e.t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("reading body: %v", err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

func user(name string) string { return "user:" + name }

// must checks the status of r and, for an error status, the error shape.
func (e *env) must(r resp, status int) resp {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %s, want %d", r, status)
	}
	if status >= 400 {
		checkErrorShape(e.t, r)
	}
	return r
}

// checkErrorShape checks the JSON error body; for 423 also Retry-After.
func checkErrorShape(t *testing.T, r resp) errBody {
	t.Helper()
	var eb errBody
	r.decode(t, &eb)
	if eb.Error.Code == "" || eb.Error.Message == "" {
		t.Fatalf("error body without code or message: %s", r)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error Content-Type %q", ct)
	}
	want := map[int]string{400: "invalid", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
		409: "conflict", 413: "too_large", 415: "unsupported_media_type", 423: "locked", 500: "internal", 503: "unavailable"}[r.status]
	if want != "" && eb.Error.Code != want {
		t.Fatalf("status %d with code %q, want %q", r.status, eb.Error.Code, want)
	}
	if r.status == http.StatusLocked {
		// Retry-After is the expected rest of the restriction in whole
		// seconds (0: retry at once after resolving again), retry_after_ms
		// the same exactly; never a lease (issue 15 #6).
		secs, err := strconv.Atoi(r.header.Get("Retry-After"))
		if err != nil || secs < 0 {
			t.Fatalf("423 with Retry-After %q, want whole seconds >= 0", r.header.Get("Retry-After"))
		}
		if eb.Error.RetryAfterMS == nil || eb.Error.Lock == "" || strings.Contains(eb.Error.Message, "store:") {
			t.Fatalf("423 body %s: want lock, retry_after_ms and no store internals", r)
		}
		if ms := *eb.Error.RetryAfterMS; ms < 0 || int64(secs) != (ms+500)/1000 {
			t.Fatalf("423: Retry-After %d s, retry_after_ms %d", secs, ms)
		}
	}
	return eb
}

// conversation is the conversation JSON.
type conversation struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Members   []string `json:"members"`
	CreatedBy string   `json:"created_by"`
	Region    string   `json:"region"`
}

// message is the message JSON.
type message struct {
	ID           string   `json:"id"`
	Conversation string   `json:"conversation"`
	Author       string   `json:"author"`
	Text         string   `json:"text"`
	Media        []string `json:"media"`
	CreatedAt    string   `json:"created_at"`
	EditedAt     string   `json:"edited_at"`
}

type page struct {
	Messages []message `json:"messages"`
	Next     string    `json:"next"`
}

func (e *env) createConv(id, owner string, members ...string) conversation {
	e.t.Helper()
	var c conversation
	e.must(e.do(req{method: "POST", path: "/v1/conversations", auth: user(owner),
		body: map[string]any{"id": id, "title": "t " + id, "members": members}}), 201).decode(e.t, &c)
	return c
}

func (e *env) post(conv, as, id, text string) message {
	e.t.Helper()
	var m message
	e.must(e.do(req{method: "POST", path: "/v1/conversations/" + conv + "/messages", auth: user(as),
		body: map[string]any{"id": id, "text": text}}), 201).decode(e.t, &m)
	return m
}

// messages lists every message of conv as user as (all pages).
func (e *env) messages(conv, as, region string) []message {
	e.t.Helper()
	var all []message
	after := ""
	for {
		var p page
		e.must(e.do(req{method: "GET", path: "/v1/conversations/" + conv + "/messages?limit=200&after=" + after, auth: user(as), region: region}), 200).decode(e.t, &p)
		all = append(all, p.Messages...)
		if p.Next == "" {
			return all
		}
		after = p.Next
	}
}

func ids(ms []message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func convRes(id string) kvrouting.Resource {
	return kvrouting.Resource{Kind: chat.KindConversation, ID: id}
}

// copyAll exports every conversation service's records of res from region
// src (historical when tokens is nil, else delta from the tokens) and
// imports them at dst, in pages of limit, each request stamped with the
// region's authority by the current routing document, as the orchestrator
// stamps it. Before the hard-delete lock (a copy no migration makes, to
// give a target some data) the source is stamped exporting for the copy
// and given its own authority back afterwards. It returns the sync tokens.
func (e *env) copyAll(res, src, dst string, mode contract.ExportMode, tokens map[string]uint64, limit int) map[string]uint64 {
	e.t.Helper()
	ctx := context.Background()
	r, _ := kvrouting.ParseResource(res)
	doc, err := e.locker.Get(ctx, r)
	if err != nil {
		e.t.Fatal(err)
	}
	from, into := doc.AuthorityAt(src, skew), doc.AuthorityAt(dst, skew)
	restore := from.RoleOf() == contract.RolePrimary && from.Deletes != contract.DeletesTombstone
	if restore {
		from = contract.Authority{Rev: doc.Revision, Role: contract.RoleExporting, Until: contract.UntilOf(e.clock.Now().Add(time.Hour))}
	}
	if into.RoleOf() != contract.RoleImporting {
		into = contract.Authority{Rev: doc.Revision, Role: contract.RoleImporting}
	}
	out := map[string]uint64{}
	for _, sp := range e.regions[src].ParticipantsFor(strings.SplitN(res, "/", 2)[0]) {
		tp, ok := e.regions[dst].Participant(sp.Service())
		if !ok {
			e.t.Fatalf("no %s at %s", sp.Service(), dst)
		}
		rq := contract.ExportRequest{Resource: res, Mode: mode, SyncToken: tokens[sp.Service()], Limit: limit, Authority: from}
		for {
			pg, err := sp.Export(ctx, rq)
			if err != nil {
				e.t.Fatalf("%s export: %v", sp.Service(), err)
			}
			if _, err := tp.Import(ctx, contract.ImportRequest{Resource: res, Authority: into, Page: &pg}); err != nil {
				e.t.Fatalf("%s import: %v", sp.Service(), err)
			}
			out[sp.Service()] = pg.SyncToken
			if !pg.More {
				break
			}
			rq.SyncToken, rq.Cursor = pg.SyncToken, pg.Next
		}
		if restore {
			if _, err := sp.(contract.Repairer).Repair(ctx, res, doc.AuthorityAt(src, skew)); err != nil {
				e.t.Fatalf("%s repair: %v", sp.Service(), err)
			}
		}
	}
	return out
}

// authorize tells every conversation service of region its authority by
// doc, as the orchestrator does.
func (e *env) authorize(res, region string, doc *kvrouting.Document) {
	e.t.Helper()
	for _, p := range e.regions[region].ParticipantsFor(chat.KindConversation) {
		if _, err := p.Authorize(context.Background(), res, doc.AuthorityAt(region, skew)); err != nil {
			e.t.Fatalf("%s Authorize: %v", p.Service(), err)
		}
	}
}

// lockTo takes res through the lock lifecycle up to state ("none", "pre",
// "hard-delete", "write") for a migration to target, and returns the token.
func (e *env) lockTo(res kvrouting.Resource, target, state string) (kvrouting.Token, *kvrouting.Document) {
	e.t.Helper()
	ctx := context.Background()
	if state == "none" {
		return "", nil
	}
	g, err := e.locker.PreLock(ctx, res, target, "mig-"+res.ID)
	if err != nil {
		e.t.Fatalf("PreLock: %v", err)
	}
	doc := g.Doc
	if state == "pre" {
		return g.Token, doc
	}
	e.clock.Advance(2*skew + time.Millisecond) // past not-before + skew
	if doc, err = e.locker.EscalateHardDelete(ctx, res, g.Token, doc); err != nil {
		e.t.Fatalf("EscalateHardDelete: %v", err)
	}
	if state == "hard-delete" {
		return g.Token, doc
	}
	if doc, err = e.locker.EscalateWrite(ctx, res, g.Token, doc); err != nil {
		e.t.Fatalf("EscalateWrite: %v", err)
	}
	return g.Token, doc
}

// storedRecord returns the record id of res in service at region, live or
// tombstone, from a historical export (the only view of a tombstone).
func (e *env) storedRecord(region, service, res, id string) (contract.Record, bool) {
	e.t.Helper()
	p, _ := e.regions[region].Participant(service)
	st := p.(interface{ Store() *store.Store }).Store()
	for after, more := uint64(0), true; more; {
		recs, last, m, err := st.Changes(res, after, 0, 500)
		if err != nil {
			e.t.Fatalf("changes: %v", err)
		}
		for _, r := range recs {
			if r.ID == id {
				return r, true
			}
		}
		after, more = last, m
	}
	return contract.Record{}, false
}

// exportFirst exports the first historical page of res at region's
// service, stamped as the source of a copy at the current routing revision,
// and gives the store its routing authority back afterwards.
func (e *env) exportFirst(region, service, res string) (contract.Page, error) {
	e.t.Helper()
	ctx := context.Background()
	r, _ := kvrouting.ParseResource(res)
	doc, err := e.locker.Get(ctx, r)
	if err != nil {
		e.t.Fatal(err)
	}
	p, _ := e.regions[region].Participant(service)
	stamp := contract.Authority{Rev: doc.Revision, Role: contract.RoleExporting, Until: contract.UntilOf(e.clock.Now().Add(time.Hour))}
	pg, err := p.Export(ctx, contract.ExportRequest{Resource: res, Mode: contract.Historical, Authority: stamp})
	if _, rerr := p.(contract.Repairer).Repair(ctx, res, doc.AuthorityAt(region, skew)); rerr != nil {
		e.t.Fatal(rerr)
	}
	return pg, err
}

package httproute_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/cutover/cutover/internal/testutil"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/httproute"
	"github.com/cutover/cutover/services/store"
)

// notes is a service that is not chat: notes on a "notebook" resource, one
// Pebble store per region, its HTTP API wrapped by the router exactly as a
// team would wrap its own.
type notes struct {
	t      *testing.T
	rt     *httproute.Router
	stores map[string]*store.Store
	locker *kvrouting.Locker
	now    atomic.Int64 // the clock, unix ns
	srv    *httptest.Server
	// beforeRun, if set, runs before each run of a request's handler
	// (the first is run 1).
	beforeRun func(run int)
}

const us, eu = "us", "eu"

func newNotes(t *testing.T, frontTTL, queue time.Duration) *notes {
	t.Helper()
	ns := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, ns.ClientURL())
	ctx := context.Background()
	kv, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		t.Fatal(err)
	}
	n := &notes{t: t, stores: map[string]*store.Store{}}
	n.now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, n.now.Load()) }
	if n.locker, err = kvrouting.NewLocker(rs, kvrouting.LockConfig{PreLockLease: time.Hour, HardDeleteLease: 10 * time.Minute,
		WriteLease: time.Minute, MaxLease: 3 * time.Hour, SecondaryLease: 24 * time.Hour, FenceConvergence: true,
		ClockSkew: 10 * time.Millisecond, Clock: clock}); err != nil {
		t.Fatal(err)
	}
	resolver := func(ttl time.Duration) *kvrouting.Resolver {
		rv, err := kvrouting.NewResolver(rs, kvrouting.ResolverConfig{Tiers: []*kvrouting.Tier{kvrouting.NewTier("t", ttl, 0)},
			ClockSkew: 10 * time.Millisecond, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return rv
	}
	for _, r := range []string{us, eu} {
		st, err := store.Open(store.Options{FS: vfs.NewMem(), Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		n.stores[r] = st
	}
	// us (the front) caches documents for frontTTL; eu reads through.
	n.rt, err = httproute.New(httproute.Config{
		Resolvers:     map[string]*kvrouting.Resolver{us: resolver(frontTTL), eu: resolver(time.Nanosecond)},
		DefaultRegion: us, Serves: func(r string) bool { return n.stores[r] != nil },
		KV: kv, QueueWrites: queue,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.rt.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/notebooks/{id}/notes/{note}", n.handle(kvrouting.OpNewWrite, n.put))
	mux.HandleFunc("GET /v1/notebooks/{id}/notes/{note}", n.handle(kvrouting.OpRead, n.get))
	n.srv = httptest.NewServer(mux)
	t.Cleanup(n.srv.Close)
	return n
}

// handle is how a service wraps a handler: the router's second chances
// around it, its errors in the 423 shape.
func (n *notes) handle(op kvrouting.OpClass, h func(http.ResponseWriter, *http.Request, httproute.Route) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		res := kvrouting.Resource{Kind: "notebook", ID: r.PathValue("id")}
		runs := 0
		err := n.rt.Serve(w, r, &res, func(w http.ResponseWriter, r *http.Request) error {
			if runs++; n.beforeRun != nil {
				n.beforeRun(runs)
			}
			route, err := n.rt.Route(w, r, res, op, "notebook")
			if err != nil {
				return err
			}
			if e := httproute.Refusal(route.Decision); e != nil {
				return e
			}
			return h(w, r, route)
		})
		if err != nil {
			httproute.WriteError(w, r, err, nil)
		}
	}
}

func (n *notes) put(w http.ResponseWriter, r *http.Request, route httproute.Route) error {
	body, _ := io.ReadAll(r.Body)
	res := "notebook/" + r.PathValue("id")
	rec := store.Record{ID: r.PathValue("note"), Kind: "note", Data: body}
	got, err := n.stores[route.Region].PutAt(res, rec, true, route.Decision.Authority)
	if errors.Is(err, store.ErrExists) {
		got, err = n.stores[route.Region].PutAt(res, rec, false, route.Decision.Authority)
	}
	if err != nil {
		return err
	}
	httproute.WriteJSON(w, http.StatusCreated, map[string]any{"id": got.ID, "text": string(got.Data)})
	return nil
}

func (n *notes) get(w http.ResponseWriter, r *http.Request, route httproute.Route) error {
	rec, err := n.stores[route.Region].GetAt("notebook/"+r.PathValue("id"), r.PathValue("note"), route.Decision.Authority)
	if err != nil {
		return err
	}
	httproute.WriteJSON(w, http.StatusOK, map[string]any{"id": rec.ID, "text": string(rec.Data)})
	return nil
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
}

func (n *notes) do(method, path, body string) answer {
	n.t.Helper()
	req, err := http.NewRequest(method, n.srv.URL+path, strings.NewReader(body))
	if err != nil {
		n.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		n.t.Fatal(err)
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode, header: resp.Header}
	_ = json.NewDecoder(resp.Body).Decode(&a.body)
	return a
}

// lock moves the notebook's routing to the write lock toward eu.
func (n *notes) lock(res kvrouting.Resource) (kvrouting.Token, *kvrouting.Document) {
	n.t.Helper()
	ctx := context.Background()
	g, err := n.locker.PreLock(ctx, res, eu, "mig-"+res.ID)
	if err != nil {
		n.t.Fatal(err)
	}
	n.now.Add(int64(time.Second))
	doc, err := n.locker.EscalateHardDelete(ctx, res, g.Token, g.Doc)
	if err != nil {
		n.t.Fatal(err)
	}
	if doc, err = n.locker.EscalateWrite(ctx, res, g.Token, doc); err != nil {
		n.t.Fatal(err)
	}
	return g.Token, doc
}

func TestRouteServesThePrimaryAndRefusesUnderTheWriteLock(t *testing.T) {
	n := newNotes(t, time.Nanosecond, 0)
	res := kvrouting.Resource{Kind: "notebook", ID: "nb1"}
	if _, err := n.locker.Register(context.Background(), res, us); err != nil {
		t.Fatal(err)
	}
	if a := n.do("POST", "/v1/notebooks/nb1/notes/a", "hello"); a.status != http.StatusCreated || a.header.Get(httproute.ServedByHeader) != us {
		t.Fatalf("write at the primary: %d %v served by %q", a.status, a.body, a.header.Get(httproute.ServedByHeader))
	}
	n.lock(res)
	a := n.do("POST", "/v1/notebooks/nb1/notes/b", "refused")
	e, _ := a.body["error"].(map[string]any)
	if a.status != http.StatusLocked || e["code"] != "locked" || a.header.Get("Retry-After") == "" || e["retry_after_ms"] == nil {
		t.Fatalf("write under the write lock: %d %v (Retry-After %q)", a.status, a.body, a.header.Get("Retry-After"))
	}
	if a := n.do("GET", "/v1/notebooks/nb1/notes/a", ""); a.status != http.StatusOK || a.body["text"] != "hello" {
		t.Fatalf("read under the write lock: %d %v", a.status, a.body)
	}
	if a := n.do("GET", "/v1/notebooks/nb2/notes/a", ""); a.status != http.StatusNotFound {
		t.Fatalf("a notebook with no routing: %d %v", a.status, a.body)
	}
}

// A write parked behind the write lock runs when the swap changes the
// routing, at the new primary, with the wait in its header.
func TestQueuedWriteRunsAfterTheSwap(t *testing.T) {
	n := newNotes(t, time.Nanosecond, time.Hour)
	res := kvrouting.Resource{Kind: "notebook", ID: "nb1"}
	if _, err := n.locker.Register(context.Background(), res, us); err != nil {
		t.Fatal(err)
	}
	tok, doc := n.lock(res)
	got := make(chan answer, 1)
	go func() { got <- n.do("POST", "/v1/notebooks/nb1/notes/q", "parked") }()
	testutil.WaitFor(t, "the write to be parked", func() bool { return n.rt.QueueStats().Queued != 0 })
	if _, err := n.locker.Swap(context.Background(), res, tok, doc); err != nil {
		t.Fatal(err)
	}
	a := <-got
	if a.status != http.StatusCreated || a.header.Get(httproute.ServedByHeader) != eu || a.header.Get(httproute.QueuedHeader) == "" {
		t.Fatalf("parked write: %d %v served by %q, queued %q", a.status, a.body, a.header.Get(httproute.ServedByHeader), a.header.Get(httproute.QueuedHeader))
	}
	if st := n.rt.QueueStats(); st.Applied != 1 {
		t.Fatalf("queue stats %+v", st)
	}
}

// The front's cache still names us after the swap; us's store, told it is
// a secondary, refuses the write as moved; the router reads the routing
// from the leader and the write lands at eu in the same request.
func TestMovedIsResolvedAgainInOneRequest(t *testing.T) {
	n := newNotes(t, time.Hour, 0)
	ctx := context.Background()
	res := kvrouting.Resource{Kind: "notebook", ID: "nb1"}
	if _, err := n.locker.Register(ctx, res, us); err != nil {
		t.Fatal(err)
	}
	if a := n.do("GET", "/v1/notebooks/nb1/notes/none", ""); a.status != http.StatusNotFound { // warms the front's cache
		t.Fatalf("warm-up read: %d %v", a.status, a.body)
	}
	tok, doc := n.lock(res)
	doc, err := n.locker.Swap(ctx, res, tok, doc)
	if err != nil {
		t.Fatal(err)
	}
	// The swap's authority reaches us's store (as the orchestrator's
	// authorize does).
	if _, err := n.stores[us].Admit("notebook/nb1", contract.OpAuthorize, doc.AuthorityAt(us, 10*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	before := n.rt.ReResolved()
	a := n.do("POST", "/v1/notebooks/nb1/notes/m", "moved")
	if a.status != http.StatusCreated || a.header.Get(httproute.ServedByHeader) != eu {
		t.Fatalf("write with a stale front cache: %d %v served by %q", a.status, a.body, a.header.Get(httproute.ServedByHeader))
	}
	if n.rt.ReResolved() != before+1 {
		t.Fatalf("re-resolved %d times, want 1", n.rt.ReResolved()-before)
	}
	if _, err := n.stores[us].Get("notebook/nb1", "m"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the write reached the old primary: %v", err)
	}
}

// move takes res through a whole migration to target (locks and the swap)
// and tells the stores their authority by the swap, as the orchestrator
// does.
func (n *notes) move(res kvrouting.Resource, target string) {
	n.t.Helper()
	ctx := context.Background()
	g, err := n.locker.PreLock(ctx, res, target, "mig-"+res.ID)
	if err != nil {
		n.t.Fatal(err)
	}
	n.now.Add(int64(time.Second))
	doc, err := n.locker.EscalateHardDelete(ctx, res, g.Token, g.Doc)
	if err != nil {
		n.t.Fatal(err)
	}
	if doc, err = n.locker.EscalateWrite(ctx, res, g.Token, doc); err != nil {
		n.t.Fatal(err)
	}
	if doc, err = n.locker.Swap(ctx, res, g.Token, doc); err != nil {
		n.t.Fatal(err)
	}
	for region, st := range n.stores {
		if _, err := st.Admit(res.String(), contract.OpAuthorize, doc.AuthorityAt(region, 10*time.Millisecond)); err != nil {
			n.t.Fatal(err)
		}
	}
}

// A swap that lands between the router's leader read and the re-run makes
// the re-run stale too: the router reads the routing again, a bounded
// number of times, rather than hand the client a "moved" 423 (with
// --queue-writes 0 nothing else would save it).
func TestMovedDuringTheReRunIsResolvedAgain(t *testing.T) {
	n := newNotes(t, time.Hour, 0)
	ctx := context.Background()
	res := kvrouting.Resource{Kind: "notebook", ID: "nb2"}
	if _, err := n.locker.Register(ctx, res, us); err != nil {
		t.Fatal(err)
	}
	if a := n.do("GET", "/v1/notebooks/nb2/notes/none", ""); a.status != http.StatusNotFound { // warms the front's cache
		t.Fatalf("warm-up read: %d %v", a.status, a.body)
	}
	n.move(res, eu) // the front's cache is stale: run 1 is refused as moved at us
	n.beforeRun = func(run int) {
		if run == 2 { // after the leader read named eu: back to us
			n.move(res, us)
		}
	}
	before := n.rt.ReResolved()
	a := n.do("POST", "/v1/notebooks/nb2/notes/m", "moved twice")
	if a.status != http.StatusCreated || a.header.Get(httproute.ServedByHeader) != us {
		t.Fatalf("write moved during its re-run: %d %v served by %q", a.status, a.body, a.header.Get(httproute.ServedByHeader))
	}
	if n.rt.ReResolved() != before+1 {
		t.Fatalf("re-resolved %d times, want 1 (one request)", n.rt.ReResolved()-before)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, c := range []httproute.Config{
		{},
		{Serves: func(string) bool { return true }},
		{Serves: func(string) bool { return true }, Resolver: &kvrouting.Resolver{}, QueueWrites: -time.Second},
		{Serves: func(string) bool { return true }, Resolver: &kvrouting.Resolver{}, QueueWrites: time.Second},
	} {
		if _, err := httproute.New(c); !errors.Is(err, httproute.ErrInvalidConfig) {
			t.Errorf("%+v: %v, want ErrInvalidConfig", c, err)
		}
	}
}

package contractnats_test

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/cutover/cutover/services/store"
)

// TestDirectory drives the orchestrator's view of the NATS contract: the
// endpoints of a kind, a page copied between regions through PAGES,
// authority and cleanup, and validation digests read through the contract
// or through the API.
func TestDirectory(t *testing.T) {
	e := newEnv(t)
	stores := map[string]*store.Store{}
	for _, region := range []string{"us", "eu"} {
		for _, svc := range []string{"messages", "reactions"} {
			st := openStore(t)
			stores[region+"/"+svc] = st
			e.serve(t, region, services.NewStoreParticipant(svc, st, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
		}
	}
	servicesFor := func(kind string) []string {
		if kind == "conv" {
			return []string{"reactions", "messages"} // unsorted on purpose
		}
		return nil
	}
	dir := contractnats.NewDirectory(e.nc, e.js, servicesFor, contractnats.DirectoryOptions{})
	ctx := t.Context()
	const res = "conv/c1"

	endpoints := func(t *testing.T, d *contractnats.Directory, region string) []contract.Endpoint {
		t.Helper()
		eps, err := d.Endpoints(ctx, region, "conv")
		if err != nil {
			t.Fatalf("Endpoints(%s, conv): %v", region, err)
		}
		return eps
	}

	t.Run("endpoints", func(t *testing.T) {
		var names []string
		for _, ep := range endpoints(t, dir, "us") {
			if ep.Region() != "us" {
				t.Fatalf("endpoint %s in region %s, want us", ep.Service(), ep.Region())
			}
			names = append(names, ep.Service())
		}
		if !slices.Equal(names, []string{"messages", "reactions"}) {
			t.Fatalf("endpoints %v, want messages, reactions (sorted)", names)
		}
		if _, err := dir.Endpoints(ctx, "us", "media"); code(t, err) != contract.CodeNotFound {
			t.Fatalf("Endpoints(media): %v, want not_found", err)
		}
		none := contractnats.NewDirectory(e.nc, e.js, nil, contractnats.DirectoryOptions{})
		if _, err := none.Endpoints(ctx, "us", "conv"); code(t, err) != contract.CodeNotFound {
			t.Fatalf("Endpoints without servicesFor: %v, want not_found", err)
		}
	})

	t.Run("copy", func(t *testing.T) {
		put(t, stores["us/messages"], res, "m1", "hello")
		put(t, stores["us/messages"], res, "m2", "world")
		src, dst := endpoints(t, dir, "us")[0], endpoints(t, dir, "eu")[0]
		info, err := src.Export(ctx, "mig-dir", contract.ExportRequest{Resource: res, Mode: contract.Historical, Authority: hardDeleted})
		if err != nil {
			t.Fatalf("Export: %v", err)
		}
		if info.Count != 2 || info.Seq == 0 || info.Service != "messages" || info.Mode != contract.Historical || info.SyncToken == 0 {
			t.Fatalf("PageInfo %+v", info)
		}
		info.Authority = importing
		if r, err := dst.Import(ctx, "mig-dir", info); err != nil || r.Applied != 2 {
			t.Fatalf("Import: %+v, %v", r, err)
		}
		sd, err := src.Digests(ctx, res, contract.Authority{})
		if err != nil {
			t.Fatal(err)
		}
		td, err := dst.Digests(ctx, res, importing)
		if err != nil {
			t.Fatal(err)
		}
		if len(sd) == 0 || !slices.Equal(sd, td) {
			t.Fatalf("digests differ after the copy: %v vs %v", sd, td)
		}
		if _, err := dst.Import(ctx, "mig-dir", contract.PageInfo{Service: "messages", Authority: importing}); code(t, err) != contract.CodeInvalid {
			t.Fatalf("Import without a resource: %v, want invalid", err)
		}
	})

	t.Run("authority and cleanup", func(t *testing.T) {
		ep := endpoints(t, dir, "us")[0]
		if got, err := ep.Authorize(ctx, res, writeLocked); err != nil || got != writeLocked {
			t.Fatalf("Authorize: %s, %v", got, err)
		}
		if a, err := stores["us/messages"].Authority(res); err != nil || a != writeLocked {
			t.Fatalf("authority at the store: %s, %v", a, err)
		}
		if _, err := ep.Cleanup(ctx, res, writeLocked); code(t, err) != contract.CodeConflict {
			t.Fatalf("Cleanup at an exporting store: %v, want a conflict", err)
		}
		if n, err := ep.Cleanup(ctx, res, swappedOut); err != nil || n == 0 {
			t.Fatalf("Cleanup: %d, %v", n, err)
		}
	})

	t.Run("digests through the API", func(t *testing.T) {
		hash := [16]byte{1, 2, 3}
		var mu sync.Mutex // the handler's goroutine and the test share these
		status, reported := http.StatusOK, "messages"
		var gotPath, gotQuery, gotAuth string
		conns := map[string]bool{}
		set := func(st int, svc string) { mu.Lock(); status, reported = st, svc; mu.Unlock() }
		api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			gotPath, gotQuery, gotAuth = r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization")
			conns[r.RemoteAddr] = true
			if status != http.StatusOK {
				http.Error(w, "down", status)
				return
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"services": map[string]any{
				reported: []map[string]any{{"slice": 7, "count": 2, "hash": hex.EncodeToString(hash[:])}},
			}})
		}))
		t.Cleanup(api.Close)
		path := func(region, resource string) (string, error) { return "/digests/" + region + "/" + resource, nil }
		viaAPI := contractnats.NewDirectory(e.nc, e.js, servicesFor, contractnats.DirectoryOptions{
			APIURL: func() string { return api.URL + "/" }, APIDigestsPath: path, Secret: "s3cret"})
		ep := endpoints(t, viaAPI, "eu")[0]

		ds, err := ep.Digests(ctx, res, contract.Authority{})
		if err != nil {
			t.Fatalf("Digests: %v", err)
		}
		if want := []contract.SliceDigest{{Slice: 7, Count: 2, Hash: hash}}; !slices.Equal(ds, want) {
			t.Fatalf("digests %v, want %v", ds, want)
		}
		mu.Lock()
		p, q, a := gotPath, gotQuery, gotAuth
		mu.Unlock()
		if p != "/digests/eu/"+res || q != "service=messages" || a != "Bearer svc:validator:s3cret" {
			t.Fatalf("request %q?%s with %q, want only the messages service's digests", p, q, a)
		}

		set(http.StatusOK, "reactions") // messages absent: never read as empty
		if _, err := ep.Digests(ctx, res, contract.Authority{}); code(t, err) != contract.CodeInternal {
			t.Fatalf("service not reported: %v, want internal", err)
		}
		set(http.StatusServiceUnavailable, "messages")
		if _, err := ep.Digests(ctx, res, contract.Authority{}); code(t, err) != contract.CodeUnavailable {
			t.Fatalf("HTTP 503: %v, want unavailable", err)
		}

		// Validation reads many at once: the default client keeps their
		// connections instead of dialling again each time.
		set(http.StatusOK, "messages")
		mu.Lock()
		clear(conns)
		mu.Unlock()
		const parallel = 8
		for range 5 {
			var wg sync.WaitGroup
			for range parallel {
				wg.Go(func() {
					if _, err := ep.Digests(ctx, res, contract.Authority{}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
		}
		mu.Lock()
		n := len(conns) // one remote address per connection
		mu.Unlock()
		// Kept, the first round's connections serve the rest (a dial that
		// lost its race to a freed connection may serve later: some
		// slack); dropped, each round dials again (30 for 5 rounds).
		if n > 2*parallel {
			t.Errorf("5 rounds of %d concurrent reads opened %d connections, want at most %d", parallel, n, 2*parallel)
		}

		noPath := contractnats.NewDirectory(e.nc, e.js, servicesFor, contractnats.DirectoryOptions{APIURL: func() string { return api.URL }})
		if _, err := endpoints(t, noPath, "eu")[0].Digests(ctx, res, contract.Authority{}); code(t, err) != contract.CodeInternal {
			t.Fatalf("no APIDigestsPath: %v, want internal", err)
		}
	})
}

// TestProbeRegion: the Directory tells a region that serves every service
// of a kind from one where a service (or the kind) has no server, and
// does so without running a contract operation (issue 14 #15).
func TestProbeRegion(t *testing.T) {
	e := newEnv(t)
	for _, svc := range []string{"messages", "reactions"} {
		e.serve(t, "us", services.NewStoreParticipant(svc, openStore(t), services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	}
	e.serve(t, "eu", services.NewStoreParticipant("messages", openStore(t), services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	servicesFor := func(kind string) []string {
		if kind == "conv" {
			return []string{"messages", "reactions"}
		}
		return nil
	}
	var dir contract.Directory = contractnats.NewDirectory(e.nc, e.js, servicesFor, contractnats.DirectoryOptions{})
	p, ok := dir.(contract.RegionProber)
	if !ok {
		t.Fatal("contractnats.Directory is not a contract.RegionProber")
	}
	ctx := t.Context()
	if err := p.ProbeRegion(ctx, "us", "conv"); err != nil {
		t.Fatalf("ProbeRegion(us): %v", err)
	}
	for _, c := range []struct{ region, kind, want string }{
		{"mars", "conv", "mars"},
		{"eu", "conv", "reactions"},
		{"us", "ghost", "ghost"},
	} {
		err := p.ProbeRegion(ctx, c.region, c.kind)
		if code(t, err) != contract.CodeNotFound || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ProbeRegion(%s, %s): %v, want not found naming %s", c.region, c.kind, err, c.want)
		}
	}
}

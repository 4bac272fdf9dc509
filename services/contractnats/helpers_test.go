package contractnats_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/cutover/cutover/services/store"
)

// env is one embedded NATS server with PAGES provisioned.
type env struct {
	srv *cnats.Server
	nc  *nats.Conn
	js  jetstream.JetStream
}

func newEnv(t *testing.T) *env {
	t.Helper()
	s := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, s.ClientURL())
	if _, err := contractnats.ProvisionPages(t.Context(), js, 1); err != nil {
		t.Fatalf("ProvisionPages: %v", err)
	}
	return &env{srv: s, nc: nc, js: js}
}

// serve starts a contract server, stopped when the test ends.
func (e *env) serve(t *testing.T, region string, p contract.Participant, opts contractnats.ServeOptions) *contractnats.Server {
	t.Helper()
	srv, err := contractnats.Serve(t.Context(), e.nc, e.js, region, p, opts)
	if err != nil {
		t.Fatalf("Serve(%s, %s): %v", region, p.Service(), err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}

// openStore opens a store on an in-memory filesystem, closed with the test.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	return openStoreOn(t, vfs.NewMem())
}

func openStoreOn(t *testing.T, fs vfs.FS) *store.Store {
	t.Helper()
	st, err := store.Open(store.Options{FS: fs})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// put writes a live record (create or update) at st.
func put(t *testing.T, st *store.Store, res, id, data string, refs ...string) store.Record {
	t.Helper()
	rec := store.Record{ID: id, Kind: "message", Data: []byte(data), Refs: refs}
	got, err := st.Put(res, rec, true)
	if errors.Is(err, store.ErrExists) {
		got, err = st.Put(res, rec, false)
	}
	if err != nil {
		t.Fatalf("Put(%s, %s): %v", res, id, err)
	}
	return got
}

// code returns the *contract.Error code of err, failing the test when err
// is not one.
func code(t *testing.T, err error) contract.Code {
	t.Helper()
	var se *contract.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %T %v is not a *contract.Error", err, err)
	}
	return se.Code
}

// pagesCount returns the number of messages in PAGES.
func (e *env) pagesCount(t *testing.T) uint64 {
	t.Helper()
	s, err := e.js.Stream(t.Context(), contractnats.PagesStream)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	return info.State.Msgs
}

// remote is a contract.Participant whose contract calls go over NATS
// through a Client: the conformance kit run through the wire. Every export
// and every import uses a fresh migration id, so that the stream's
// deduplication (tested on its own) never hands the kit a page it did not
// ask for.
type remote struct {
	c   *contractnats.Client
	js  jetstream.JetStream
	ids *atomic.Int64
}

var _ contract.Participant = remote{}

func (r remote) mig() string { return fmt.Sprintf("kit-%d", r.ids.Add(1)) }

func (r remote) Service() string { return r.c.Service() }

func (r remote) Export(ctx context.Context, req contract.ExportRequest) (contract.Page, error) {
	mig := r.mig()
	ref, err := r.c.ExportToStream(ctx, mig, req)
	if err != nil {
		return contract.Page{}, err
	}
	if ref.Seq == 0 { // an empty page is not published: the reference is the page
		if ref.Count != 0 {
			return contract.Page{}, fmt.Errorf("PageRef %+v: %d records and no sequence", ref, ref.Count)
		}
		return contract.Page{Service: r.c.Service(), Resource: req.Resource, Mode: req.Mode, SyncToken: ref.SyncToken,
			Cursor: req.Cursor, Next: ref.Next, More: ref.More, Dependents: ref.Dependents}, nil
	}
	page, err := r.c.FetchPage(ctx, mig, ref.Seq)
	if err != nil {
		return contract.Page{}, err
	}
	if ref.Count != len(page.Records) || ref.Next != page.Next || ref.More != page.More || ref.SyncToken != page.SyncToken {
		return contract.Page{}, fmt.Errorf("PageRef %+v does not describe the stored page", ref)
	}
	return page, nil
}

func (r remote) Authorize(ctx context.Context, res string, a contract.Authority) (contract.Authority, error) {
	return r.c.Authorize(ctx, res, a)
}

// Import publishes the request's page to PAGES and asks the participant to
// import it from there; a page without records travels inline.
func (r remote) Import(ctx context.Context, req contract.ImportRequest) (contract.ImportResult, error) {
	mig := r.mig()
	pi := contract.PageInfo{Resource: req.Resource, Authority: req.Authority, Reset: req.Reset, Digests: req.Digests}
	if req.Page != nil {
		page := *req.Page
		if page.Service == "" {
			page.Service = r.c.Service()
		}
		if len(page.Records) == 0 {
			pi.Page = &page
		} else {
			ref, err := contractnats.PublishPage(ctx, r.js, mig, page)
			if err != nil {
				return contract.ImportResult{}, err
			}
			pi.Seq = ref.Seq
		}
	}
	return r.c.Import(ctx, mig, pi)
}

func (r remote) Digests(ctx context.Context, res string, a contract.Authority) ([]contract.SliceDigest, error) {
	return r.c.Digests(ctx, res, a)
}

func (r remote) ReadSlice(ctx context.Context, res string, from, to int64) ([]contract.Record, error) {
	return r.c.ReadSlice(ctx, res, from, to)
}

func (r remote) Cleanup(ctx context.Context, res string, a contract.Authority) (int, error) {
	return r.c.Cleanup(ctx, res, a)
}

package orchestrator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cutover/cutover/eventlog"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vmihailenco/msgpack/v5"
)

var testServices = []string{"messages", "reactions"}

// env is one test world: embedded NATS, the routing bucket, two regions
// with Pebble stores per service, and the migration streams.
type env struct {
	t      testing.TB
	nc     *nats.Conn
	js     jetstream.JetStream
	locker *kvrouting.Locker
	dir    *LocalDirectory
	stores map[string]map[string]*store.Store // region → service → store
	client *Client
}

func testLockConfig() kvrouting.LockConfig {
	return kvrouting.LockConfig{
		PreLockLease: time.Hour, HardDeleteLease: 30 * time.Second, WriteLease: 5 * time.Second,
		MaxLease: 2 * time.Hour, SecondaryLease: time.Hour, ConvergenceDelay: 100 * time.Millisecond,
		ClockSkew: 50 * time.Millisecond,
	}
}

func mustEnv(tb testing.TB, lockMod ...func(*kvrouting.LockConfig)) *env {
	tb.Helper()
	return mustEnvOn(tb, StreamConfig{}, lockMod...)
}

// mustEnvOn is mustEnv with the migration streams provisioned by sc (R1
// file streams for the zero value: a step's events are not chained).
func mustEnvOn(tb testing.TB, sc StreamConfig, lockMod ...func(*kvrouting.LockConfig)) *env {
	tb.Helper()
	srv := natstest.RunServer(tb)
	nc, js := natstest.MustConnect(tb, srv.ClientURL())
	ctx := context.Background()
	if _, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{Replicas: 1}); err != nil {
		tb.Fatal(err)
	}
	if err := Provision(ctx, js, sc); err != nil {
		tb.Fatal(err)
	}
	if err := Provision(ctx, js, sc); err != nil { // idempotent
		tb.Fatal(err)
	}
	rs, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		tb.Fatal(err)
	}
	lc := testLockConfig()
	for _, m := range lockMod {
		m(&lc)
	}
	lk, err := kvrouting.NewLocker(rs, lc)
	if err != nil {
		tb.Fatal(err)
	}
	e := &env{t: tb, nc: nc, js: js, locker: lk, dir: NewLocalDirectory(), stores: map[string]map[string]*store.Store{}, client: NewClient(nc, js)}
	for _, region := range []string{"us", "eu"} {
		e.stores[region] = map[string]*store.Store{}
		for _, svc := range testServices {
			st, err := store.Open(store.Options{FS: vfs.NewMem(), SliceWidth: time.Minute})
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { _ = st.Close() })
			e.stores[region][svc] = st
			e.dir.Add(region, e.participant(region, svc))
		}
	}
	return e
}

// addRegion gives the test world another region with a store per service.
func (e *env) addRegion(region string) {
	e.t.Helper()
	e.stores[region] = map[string]*store.Store{}
	for _, svc := range testServices {
		st, err := store.Open(store.Options{FS: vfs.NewMem(), SliceWidth: time.Minute})
		if err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() { _ = st.Close() })
		e.stores[region][svc] = st
		e.dir.Add(region, e.participant(region, svc))
	}
}

// participant is the contract of svc at region over its store.
func (e *env) participant(region, svc string) *services.StoreParticipant {
	return services.NewStoreParticipant(svc, e.stores[region][svc], services.StoreParticipantOptions{})
}

// authority returns what svc's store at region holds for res.
func (e *env) authority(region, svc, res string) contract.Authority {
	e.t.Helper()
	a, err := e.stores[region][svc].Authority(res)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *env) config() Config {
	return Config{
		Locker: e.locker, Directory: e.dir,
		ConvergenceBuffer: 50 * time.Millisecond, ReplicationBound: 100 * time.Millisecond,
		RenewMargin: 5 * time.Second, AckWait: 4 * time.Second, RetryBackoff: 50 * time.Millisecond,
		RescheduleBackoff: 200 * time.Millisecond, CleanupWindow: time.Hour, PageLimit: 7,
		TenantPoll: 100 * time.Millisecond, StepTimeout: 4 * time.Second,
	}
}

// startWorker runs a worker until the test ends (or it is closed).
func (e *env) startWorker(cfg Config) *Worker {
	e.t.Helper()
	w, err := NewWorker(e.nc, e.js, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	go func() {
		if err := w.Run(context.Background()); err != nil {
			e.t.Errorf("worker: %v", err)
		}
	}()
	e.t.Cleanup(func() { _ = w.Close() })
	return w
}

// seed registers res at us and writes n records per service.
func (e *env) seed(res string, n int, refs ...string) {
	e.t.Helper()
	r, err := kvrouting.ParseResource(res)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.locker.Register(context.Background(), r, "us"); err != nil {
		e.t.Fatal(err)
	}
	base := time.Now().Add(-time.Hour).UnixNano()
	for _, svc := range testServices {
		for i := range n {
			rec := store.Record{ID: fmt.Sprintf("%s-%d", svc, i), Kind: "msg", CreatedAt: base + int64(i)*int64(10*time.Second),
				Data: []byte(fmt.Sprintf("%s %s %d", res, svc, i))}
			if i == 0 && svc == "messages" {
				rec.Refs = refs
			}
			if _, err := e.stores["us"][svc].Put(res, rec, true); err != nil {
				e.t.Fatal(err)
			}
		}
	}
}

// migrateDone starts a migration of res to target, waits until it ends and
// fails the test unless it completed; it returns the migration's id.
func (e *env) migrateDone(res, target string) string {
	e.t.Helper()
	id, err := e.client.Start(context.Background(), events.Start{Resource: res, Target: target})
	if err != nil {
		e.t.Fatal(err)
	}
	if st := e.waitDone(id, 30*time.Second); st.Status != events.StatusCompleted {
		e.t.Fatalf("migration of %s to %s: %s %s", res, target, st.Status, st.Reason)
	}
	return id
}

// awaitLock waits until res's primary holds a lock of type typ.
func (e *env) awaitLock(res string, typ kvrouting.LockType) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for e.doc(res).Primary.Lock.Type != typ {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s never %s-locked", res, typ)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitDone polls a migration until it is terminal.
func (e *env) waitDone(id string, timeout time.Duration) *events.State {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st, _, err := Load(context.Background(), e.nc, id)
		if err == nil && st.Status.Terminal() {
			return st
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			e.t.Fatalf("load %s: %v", id, err)
		}
		if time.Now().After(deadline) {
			phase := "none"
			if st != nil {
				phase = string(st.Phase) + " " + st.Reason + " abort=" + st.Abort
			}
			e.t.Fatalf("migration %s not done within %s (phase %s)", id, timeout, phase)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) history(id string) []*events.Envelope {
	e.t.Helper()
	h, err := eventlog.New(e.nc, e.js).History(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

func countType(h []*events.Envelope, typ string) int {
	n := 0
	for _, ev := range h {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func (e *env) doc(res string) *kvrouting.Document {
	e.t.Helper()
	r, _ := kvrouting.ParseResource(res)
	d, err := e.locker.Get(context.Background(), r)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// assertMigrated checks data equality, routing at target without a lock,
// the old location a locked secondary in routing and a secondary in its
// stores, the new one the primary in its stores.
func (e *env) assertMigrated(res string) {
	e.t.Helper()
	e.assertSameDigests(res)
	doc := e.doc(res)
	for _, svc := range testServices {
		if a := e.authority("us", svc, res); a.RoleOf() != contract.RoleSecondary || a.Rev > doc.Revision {
			e.t.Fatalf("%s %s: the old source holds %s", res, svc, a)
		}
		if a := e.authority("eu", svc, res); a.RoleOf() != contract.RolePrimary {
			e.t.Fatalf("%s %s: the new primary holds %s", res, svc, a)
		}
	}
	if doc.Primary.Region != "eu" || !doc.Primary.Lock.IsZero() {
		e.t.Fatalf("routing: primary %+v", doc.Primary)
	}
	if doc.Secondary == nil || doc.Secondary.Region != "us" || doc.Secondary.Lock.Type != kvrouting.LockSecondary {
		e.t.Fatalf("routing: secondary %+v", doc.Secondary)
	}
}

// assertSameDigests checks that us and eu hold the same live records of
// res (every record's content, by the slice digests).
func (e *env) assertSameDigests(res string) {
	e.t.Helper()
	for _, svc := range testServices {
		s, err := e.stores["us"][svc].Digests(res)
		if err != nil {
			e.t.Fatal(err)
		}
		d, err := e.stores["eu"][svc].Digests(res)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(s) == 0 || fmt.Sprint(s) != fmt.Sprint(d) {
			e.t.Fatalf("%s %s digests differ: us %v eu %v", res, svc, s, d)
		}
	}
}

// assertFold checks Fold(all events) == the state the last event carries.
func assertFold(tb testing.TB, h []*events.Envelope) {
	tb.Helper()
	folded, err := Fold(h)
	if err != nil {
		tb.Fatal(err)
	}
	got, err := msgpack.Marshal(folded)
	if err != nil {
		tb.Fatal(err)
	}
	want, err := msgpack.Marshal(h[len(h)-1].State)
	if err != nil {
		tb.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		tb.Fatalf("Fold(events) != last state:\n%+v\n%+v", folded, h[len(h)-1].State)
	}
}

// flaky wraps a participant with hooks (hand-written fake with function
// fields).
type flaky struct {
	contract.Participant
	mu          sync.Mutex
	onExport    func(req contract.ExportRequest) error
	onImport    func(req *contract.ImportRequest) error
	onAuthorize func(a contract.Authority) error
	onCleanup   func(a contract.Authority) error
	onRepair    func(a contract.Authority) error
}

// Repair passes to the participant's contract.Repairer.
func (f *flaky) Repair(ctx context.Context, resource string, a contract.Authority) (contract.Authority, error) {
	f.mu.Lock()
	hook := f.onRepair
	f.mu.Unlock()
	if hook != nil {
		if err := hook(a); err != nil {
			return contract.Authority{}, err
		}
	}
	return f.Participant.(contract.Repairer).Repair(ctx, resource, a)
}

func (f *flaky) Authorize(ctx context.Context, resource string, a contract.Authority) (contract.Authority, error) {
	f.mu.Lock()
	hook := f.onAuthorize
	f.mu.Unlock()
	if hook != nil {
		if err := hook(a); err != nil {
			return contract.Authority{}, err
		}
	}
	return f.Participant.Authorize(ctx, resource, a)
}

func (f *flaky) Cleanup(ctx context.Context, resource string, a contract.Authority) (int, error) {
	f.mu.Lock()
	hook := f.onCleanup
	f.mu.Unlock()
	if hook != nil {
		if err := hook(a); err != nil {
			return 0, err
		}
	}
	return f.Participant.Cleanup(ctx, resource, a)
}

func (f *flaky) Export(ctx context.Context, req contract.ExportRequest) (contract.Page, error) {
	f.mu.Lock()
	hook := f.onExport
	f.mu.Unlock()
	if hook != nil {
		if err := hook(req); err != nil {
			return contract.Page{}, err
		}
	}
	return f.Participant.Export(ctx, req)
}

func (f *flaky) Import(ctx context.Context, req contract.ImportRequest) (contract.ImportResult, error) {
	f.mu.Lock()
	hook := f.onImport
	f.mu.Unlock()
	if hook != nil {
		if err := hook(&req); err != nil {
			return contract.ImportResult{}, err
		}
	}
	return f.Participant.Import(ctx, req)
}

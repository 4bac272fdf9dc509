package orchestrator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
	"github.com/nats-io/nats.go"
)

// countingDirectory counts the contract requests made at each region while
// window is set, by operation; sealed counts import requests that sealed.
type countingDirectory struct {
	Directory
	window atomic.Bool
	mu     sync.Mutex
	calls  map[string]int // "region op" → requests
}

func (d *countingDirectory) count(region, op string) {
	if !d.window.Load() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls[region+" "+op]++
}

func (d *countingDirectory) snapshot() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int{}
	for k, v := range d.calls {
		out[k] = v
	}
	return out
}

func (d *countingDirectory) Endpoints(ctx context.Context, region, kind string) ([]Endpoint, error) {
	eps, err := d.Directory.Endpoints(ctx, region, kind)
	for i, ep := range eps {
		eps[i] = countingEndpoint{Endpoint: ep, d: d}
	}
	return eps, err
}

type countingEndpoint struct {
	Endpoint
	d *countingDirectory
}

func (e countingEndpoint) Export(ctx context.Context, id string, r contract.ExportRequest) (PageInfo, error) {
	e.d.count(e.Region(), "export")
	return e.Endpoint.Export(ctx, id, r)
}

func (e countingEndpoint) Import(ctx context.Context, id string, p PageInfo) (contract.ImportResult, error) {
	op := "import"
	if p.Digests {
		op = "import+digests"
	}
	e.d.count(e.Region(), op)
	return e.Endpoint.Import(ctx, id, p)
}

func (e countingEndpoint) Digests(ctx context.Context, res string, a contract.Authority) ([]contract.SliceDigest, error) {
	e.d.count(e.Region(), "digests")
	return e.Endpoint.Digests(ctx, res, a)
}

func (e countingEndpoint) Authorize(ctx context.Context, res string, a contract.Authority) (contract.Authority, error) {
	e.d.count(e.Region(), "authority")
	return e.Endpoint.Authorize(ctx, res, a)
}

func (e countingEndpoint) Cleanup(ctx context.Context, res string, a contract.Authority) (int, error) {
	e.d.count(e.Region(), "cleanup")
	return e.Endpoint.Cleanup(ctx, res, a)
}

// migrateWith moves res to eu with one worker on cfg and checks that it
// completed and moved; it returns the final state and the history.
func (e *env) migrateWith(cfg Config, res string) (*events.State, []*events.Envelope) {
	e.t.Helper()
	e.startWorker(cfg)
	id := e.migrateDone(res, "eu")
	e.assertMigrated(res)
	h := e.history(id)
	return h[len(h)-1].State, h
}

// writeAtSource puts one more record of svc at the source, as a user write
// between the historical copy and the write lock would (the delta), and
// returns it as stored.
func (e *env) writeAtSource(res, svc, id string) store.Record {
	e.t.Helper()
	rec := store.Record{ID: id, Kind: "msg", CreatedAt: time.Now().UnixNano(), Data: []byte("late " + id)}
	stored, err := e.stores["us"][svc].Put(res, rec, true)
	if err != nil {
		e.t.Fatal(err)
	}
	return stored
}

// From the write lock to the swap the target is reached at most ONCE per
// service — the request that imports the last delta page answers with the
// target's digests; with no delta, not at all: validation compares the
// digests its last historical import answered — and the source only for
// its digests: its first delta page came in the step that took the write
// lock. After the swap, in the same step, each region is told its
// authority once. The write-blocked window (WriteLockedAt → SwappedAt) ends
// at the swap's commit, before those.
func TestPhase3ReachesTheTargetOnce(t *testing.T) {
	for _, delta := range []bool{false, true} {
		t.Run(fmt.Sprintf("delta=%v", delta), func(t *testing.T) {
			e := mustEnv(t)
			const res = "conv/once"
			e.seed(res, 5)
			d := &countingDirectory{Directory: e.dir, calls: map[string]int{}}
			cfg := e.config()
			cfg.Directory = d
			cfg.AfterAppend = func(env *events.Envelope) error {
				switch env.Type {
				case events.TypePagesCopied:
					if delta {
						e.writeAtSource(res, "messages", "late-1")
					}
				case events.TypeWriteLocked:
					d.window.Store(true)
				case events.TypeSwapped:
					d.window.Store(false)
				}
				return nil
			}
			st, h := e.migrateWith(cfg, res)
			if !equalTypes(h[1:], happyTypes) {
				t.Fatalf("events %v, want requested, then %v", types(h), happyTypes)
			}
			got := d.snapshot()
			n := len(testServices)
			want := map[string]int{"eu authority": n, "us digests": n, "us authority": n}
			if delta { // messages has a delta; the other services none
				want["eu import+digests"] = 1
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("requests from the write lock to the Swapped event: %v; want %v", got, want)
			}
			var swapped *events.Envelope
			for _, ev := range h {
				if ev.Type == events.TypeSwapped {
					swapped = ev
				}
			}
			b, _ := events.BodyAs[events.Swapped](swapped)
			if b.At.IsZero() || b.At.After(swapped.Time) || !st.SwappedAt.Equal(b.At.UTC()) || st.SwappedAt.Before(st.WriteLockedAt) {
				t.Fatalf("swap committed at %v, event at %v; state: write lock %v, swapped %v", b.At, swapped.Time, st.WriteLockedAt, st.SwappedAt)
			}
			// Every service's copy is recorded for the reverse window, an
			// empty delta's too: the target's sequence after its last
			// historical import, the sum of the digests validation read.
			for _, p := range st.Services {
				if p.TargetSeq == 0 || p.TargetSum == 0 {
					t.Errorf("%s: the swap recorded target sequence %d, sum %d: a move back would copy everything", p.Service, p.TargetSeq, p.TargetSum)
				}
			}
		})
	}
}

func firstFailedValidation(h []*events.Envelope) (events.Validated, bool) {
	for _, ev := range h {
		if v, ok := events.BodyAs[events.Validated](ev); ok && !v.OK {
			return v, true
		}
	}
	return events.Validated{}, false
}

func types(h []*events.Envelope) []string {
	out := make([]string, len(h))
	for i, ev := range h {
		out[i] = ev.Type
	}
	return out
}

func equalTypes(h []*events.Envelope, want []string) bool {
	return fmt.Sprint(types(h)) == fmt.Sprint(want)
}

// An empty delta whose target copy was not kept (the historical copy ran in
// another process) reads the target's digests for validation, beside the
// source's, and the swap records no target sequence for it: a move back
// copies that service in full. Nothing is imported either way.
func TestEmptyDeltaWithoutTheKeptCopyReadsTheTarget(t *testing.T) {
	e := mustEnv(t)
	const res = "conv/unkept"
	e.seed(res, 5)
	d := &countingDirectory{Directory: e.dir, calls: map[string]int{}}
	cfg := e.config()
	cfg.Directory = d
	cfg.AfterAppend = func(env *events.Envelope) error {
		if env.Type == events.TypeWriteLocked {
			processCopies.forget() // as if the historical copy ran elsewhere
			d.window.Store(true)
		}
		if env.Type == events.TypeSwapped {
			d.window.Store(false)
		}
		return nil
	}
	st, h := e.migrateWith(cfg, res)
	if !equalTypes(h[1:], happyTypes) {
		t.Fatalf("events %v, want requested, then %v", types(h), happyTypes)
	}
	n := len(testServices)
	want := map[string]int{"eu digests": n, "eu authority": n, "us digests": n, "us authority": n}
	if got := d.snapshot(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("requests from the write lock to the Swapped event: %v; want %v", got, want)
	}
	for _, p := range st.Services {
		if p.TargetSeq != 0 || p.TargetSum != 0 {
			t.Errorf("%s: the swap recorded target sequence %d, sum %d without the kept copy", p.Service, p.TargetSeq, p.TargetSum)
		}
	}
}

// fenceWatchingEndpoint holds the source's fenced first delta export of
// each service until the migration's log records the write lock (or
// 5 seconds pass), and records whether it did.
type fenceWatchingEndpoint struct {
	Endpoint
	nc   *nats.Conn
	mu   *sync.Mutex
	seen map[string]bool // service → the log had WriteLocked when its fenced export ran
}

func (e fenceWatchingEndpoint) Export(ctx context.Context, id string, r contract.ExportRequest) (PageInfo, error) {
	if e.Region() == "us" && r.Mode == contract.Delta && r.Authority.RoleOf() == contract.RoleExporting {
		e.mu.Lock()
		_, done := e.seen[e.Service()]
		e.mu.Unlock()
		if !done {
			logged := false
			for deadline := time.Now().Add(5 * time.Second); !logged && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				st, _, err := Load(ctx, e.nc, id)
				logged = err == nil && !st.WriteLockedAt.IsZero()
			}
			e.mu.Lock()
			e.seen[e.Service()] = logged
			e.mu.Unlock()
		}
	}
	return e.Endpoint.Export(ctx, id, r)
}

type fenceWatchingDirectory struct {
	Directory
	ep fenceWatchingEndpoint
}

func (d fenceWatchingDirectory) Endpoints(ctx context.Context, region, kind string) ([]Endpoint, error) {
	eps, err := d.Directory.Endpoints(ctx, region, kind)
	for i, ep := range eps {
		w := d.ep
		w.Endpoint = ep
		eps[i] = w
	}
	return eps, err
}

// The step that takes the write lock appends WriteLocked while the
// source's fenced first delta pages are exported, not after them: inside
// the write-blocked window the synced append and those round trips
// overlap. Each export here waits to see WriteLocked in the log: appended
// only after the exports, it would never be seen.
func TestWriteLockedIsAppendedBesideTheFencedExports(t *testing.T) {
	e := mustEnv(t)
	const res = "conv/beside"
	e.seed(res, 5)
	var mu sync.Mutex
	seen := map[string]bool{}
	cfg := e.config()
	cfg.Directory = fenceWatchingDirectory{Directory: e.dir, ep: fenceWatchingEndpoint{nc: e.nc, mu: &mu, seen: seen}}
	_, h := e.migrateWith(cfg, res)
	if !equalTypes(h[1:], happyTypes) {
		t.Fatalf("events %v, want requested, then %v", types(h), happyTypes)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != len(testServices) {
		t.Fatalf("fenced first delta exports of %d services, want %d: %v", len(seen), len(testServices), seen)
	}
	for svc, ok := range seen {
		if !ok {
			t.Errorf("%s: the fenced export ran before WriteLocked was appended and the append waited for it", svc)
		}
	}
}

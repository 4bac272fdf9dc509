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

func (e countingEndpoint) FenceAndExport(ctx context.Context, id, res string, f contract.Fence, r contract.ExportRequest) (PageInfo, bool, error) {
	e.d.count(e.Region(), "fence+export")
	return e.Endpoint.(contract.FenceExporter).FenceAndExport(ctx, id, res, f, r)
}

func (e countingEndpoint) Import(ctx context.Context, id string, p PageInfo) (contract.ImportResult, error) {
	op := "import"
	if p.Seal {
		op = "import+seal"
	}
	e.d.count(e.Region(), op)
	return e.Endpoint.Import(ctx, id, p)
}

func (e countingEndpoint) Digests(ctx context.Context, res string) ([]contract.SliceDigest, error) {
	e.d.count(e.Region(), "digests")
	return e.Endpoint.Digests(ctx, res)
}

func (e countingEndpoint) SetFence(ctx context.Context, res string, f contract.Fence) error {
	e.d.count(e.Region(), "fence")
	return e.Endpoint.SetFence(ctx, res, f)
}

func (e countingEndpoint) ClearFence(ctx context.Context, res, tok string) error {
	e.d.count(e.Region(), "unfence")
	return e.Endpoint.ClearFence(ctx, res, tok)
}

func (e countingEndpoint) GrantImport(ctx context.Context, res, tok string, exp time.Time) error {
	e.d.count(e.Region(), "grant")
	return e.Endpoint.(contract.ImportGate).GrantImport(ctx, res, tok, exp)
}

func (e countingEndpoint) RevokeImport(ctx context.Context, res, tok string) error {
	e.d.count(e.Region(), "revoke")
	return e.Endpoint.(contract.ImportGate).RevokeImport(ctx, res, tok)
}

func (e countingEndpoint) ResetForCopy(ctx context.Context, res, tok string) (int, error) {
	e.d.count(e.Region(), "reset")
	return e.Endpoint.(contract.ImportGate).ResetForCopy(ctx, res, tok)
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

// Issue 16 #5: from the write lock to the swap the target is reached ONCE
// per service — the request that imports the last delta page (or, with no
// delta, one of its own) grants, applies, seals and answers with the
// target's digests — and never for a separate grant, revoke or digest
// read; the source is not asked for the delta at all (its first page came
// with the write fence). After the swap only the swap-in notice goes there, and the
// write-blocked window (WriteLockedAt → SwappedAt) ends at the swap's
// commit, before that notice.
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
			want := map[string]int{"eu import+seal": n, "eu fence": n} // the seals; the swap-in notices after the swap
			for k, v := range got {
				if k[:3] == "eu " && want[k] != v {
					t.Errorf("target requests in Phase 3: %v; want only %v", got, want)
					break
				}
			}
			if got["eu import+seal"] != n {
				t.Errorf("target requests in Phase 3: %v; want %d sealing imports", got, n)
			}
			// The first delta page came with the write fence (carry.go): the
			// source is not asked for it again.
			if got["us export"] != 0 {
				t.Errorf("source requests in Phase 3: %v; want no export (the fence request exported)", got)
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
		})
	}
}

// The seal's crash story (grant.go): a delta step that sealed and was lost
// leaves the attempt's token retired at the target. The redelivered step's
// imports are refused, it seals again (Refused) and validates what the
// target holds: a complete copy swaps in the same attempt; a copy the
// first seal left short fails validation, rolls back, and the next attempt
// completes. The token is retired by hand right after the write lock, as
// the lost seal would have (after applying the delta, in complete-delta).
func TestRedeliveredSealValidatesWhatTheTargetHolds(t *testing.T) {
	// delta: a write between the historical copy and the write lock;
	// applied: the lost step had imported it before its seal.
	for _, c := range []struct {
		name           string
		delta, applied bool
	}{{"complete", false, false}, {"complete-delta", true, true}, {"short", true, false}} {
		t.Run(c.name, func(t *testing.T) {
			e := mustEnv(t)
			const res = "conv/reseal"
			e.seed(res, 5)
			cfg := e.config()
			var retired atomic.Bool
			cfg.AfterAppend = func(env *events.Envelope) error {
				switch {
				case env.Type == events.TypePagesCopied && c.delta && env.State.Attempt == 1:
					// More than a page (PageLimit 7): the first delta
					// page is not the last, and its import is refused
					// without a seal in it.
					for i := range 9 {
						rec := e.writeAtSource(res, "messages", fmt.Sprintf("late-%d", i))
						if c.applied { // the record as an import carries it
							if _, err := e.stores["eu"]["messages"].ImportGranted(res, env.State.Token, []store.Record{rec}); err != nil {
								t.Error(err)
							}
						}
					}
				case env.Type == events.TypeWriteLocked && !retired.Load():
					retired.Store(true)
					for _, svc := range testServices {
						if err := e.stores["eu"][svc].RevokeImport(res, env.State.Token); err != nil {
							t.Error(err)
						}
					}
				}
				return nil
			}
			st, h := e.migrateWith(cfg, res)
			rolled := countType(h, events.TypeRolledBack)
			short := c.delta && !c.applied
			switch {
			case !short && (rolled != 0 || st.Attempt != 1):
				if v, ok := firstFailedValidation(h); ok {
					t.Logf("validation: %s", v.Detail)
				}
				t.Fatalf("a complete copy under a retired token: %d rollbacks, attempt %d; want a swap in attempt 1 (%v)", rolled, st.Attempt, types(h))
			case short && (rolled != 1 || st.Attempt != 2):
				t.Fatalf("a short copy under a retired token: %d rollbacks, attempt %d; want one, then attempt 2 (%v)", rolled, st.Attempt, types(h))
			}
			if short {
				v, ok := firstFailedValidation(h)
				if !ok {
					t.Fatalf("no failed validation in %v", types(h))
				}
				t.Logf("validation: %s", v.Detail)
			}
			assertFold(t, h)
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

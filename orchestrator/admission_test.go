package orchestrator

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services/contract"
)

// kindDirectory is a Directory with a function field: the env's directory
// behind a hook (hand-written fake).
type kindDirectory struct {
	Directory
	endpoints func(ctx context.Context, region, kind string) ([]Endpoint, error)
}

func (d kindDirectory) Endpoints(ctx context.Context, region, kind string) ([]Endpoint, error) {
	return d.endpoints(ctx, region, kind)
}

// A start whose target region no deployment serves, or whose resource
// kind no service owns, is refused at once: the migration ends Failed with
// the reason, and nothing else is written: no routing lock (the routing
// revision is unchanged), no fence, no work (issue 14 #15).
func TestStartRefusesWhatNothingServes(t *testing.T) {
	e := mustEnv(t)
	cfg := e.config()
	cfg.Directory = kindDirectory{Directory: e.dir, endpoints: func(ctx context.Context, region, kind string) ([]Endpoint, error) {
		if kind == "ghost" {
			return nil, contract.Errorf(contract.CodeNotFound, "no services own resources of kind %q", kind)
		}
		return e.dir.Endpoints(ctx, region, kind)
	}}
	e.startWorker(cfg)
	for _, c := range []struct{ res, target, want string }{
		{"conv/t1", "mars", `"mars"`},
		{"ghost/g1", "eu", `"ghost"`},
	} {
		e.seed(c.res, 3)
		rev := e.doc(c.res).Revision
		id, err := e.client.Start(context.Background(), events.Start{Resource: c.res, Target: c.target})
		if err != nil {
			t.Fatal(err)
		}
		st := e.waitDone(id, 30*time.Second)
		if st.Status != events.StatusFailed || !strings.Contains(st.Reason, c.want) || st.Attempt != 1 {
			t.Fatalf("%s → %s: status %s attempt %d (%s), want failed naming %s", c.res, c.target, st.Status, st.Attempt, st.Reason, c.want)
		}
		if got := eventTypes(e.history(id)); !slices.Equal(got, []string{events.TypeRequested, events.TypeFailed}) {
			t.Fatalf("%s → %s: events %v, want the request and its refusal", c.res, c.target, got)
		}
		if doc := e.doc(c.res); doc.Revision != rev || !doc.Primary.Lock.IsZero() || doc.Secondary != nil {
			t.Fatalf("%s → %s: routing revision %d → %d, primary %+v: a refused start wrote it", c.res, c.target, rev, doc.Revision, doc.Primary)
		}
		for _, svc := range testServices {
			if a := e.authority("us", svc, c.res); a != (contract.Authority{}) {
				t.Fatalf("%s: authority %s after a refused start", svc, a)
			}
		}
	}
}

// probingDirectory is the env's directory as a contract.RegionProber that
// counts its probes and answers with probe (hand-written fake).
type probingDirectory struct {
	Directory
	probes atomic.Int64
	probe  func(region, kind string) error
}

func (d *probingDirectory) ProbeRegion(_ context.Context, region, kind string) error {
	d.probes.Add(1)
	return d.probe(region, kind)
}

// A burst of starts to one target probes it once: a target that answered
// less than probeFresh ago is not probed again. A target that did not
// answer is probed again at the next start (a refusal is never cached),
// and so is one whose answer is older than probeFresh.
func TestAdmissionProbeIsReusedBriefly(t *testing.T) {
	e := mustEnv(t)
	cfg := e.config()
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	cfg.Clock = func() time.Time { return time.Unix(0, now.Load()) }
	var down atomic.Bool
	d := &probingDirectory{Directory: e.dir, probe: func(region, kind string) error {
		if down.Load() {
			return contract.Errorf(contract.CodeNotFound, "no server of messages answers in region %q", region)
		}
		return nil
	}}
	cfg.Directory = d
	cfg.RetryBackoff = time.Millisecond
	w, err := NewWorker(e.nc, e.js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 5 {
		if r := w.unserved(ctx, "conv", "eu"); r != "" {
			t.Fatalf("refused a served target: %s", r)
		}
	}
	if n := d.probes.Load(); n != 1 {
		t.Fatalf("5 starts within %s probed %d times, want 1", probeFresh, n)
	}
	now.Add(int64(probeFresh))
	down.Store(true)
	if r := w.unserved(ctx, "conv", "eu"); !strings.Contains(r, "not served") {
		t.Fatalf("a stale answer admitted a target that no longer answers: %q", r)
	}
	before := d.probes.Load()
	if r := w.unserved(ctx, "conv", "eu"); r == "" || d.probes.Load() == before {
		t.Fatalf("a refusal was reused (%q, %d probes): it must be probed again", r, d.probes.Load()-before)
	}
	down.Store(false)
	if r := w.unserved(ctx, "conv", "eu"); r != "" {
		t.Fatalf("a target answering again is refused: %s", r)
	}
}

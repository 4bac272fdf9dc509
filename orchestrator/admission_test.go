package orchestrator

import (
	"context"
	"slices"
	"strings"
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

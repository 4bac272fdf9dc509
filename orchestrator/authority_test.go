package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// stamp is one authority a participant was sent, with the operation.
type stamp struct {
	region, op string
	a          contract.Authority
}

// recordStamps wraps svc's participant in both regions and records every
// authority they are sent.
func (e *env) recordStamps(svc string) func() []stamp {
	var (
		mu  sync.Mutex
		out []stamp
	)
	add := func(region, op string, a contract.Authority) {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, stamp{region, op, a})
	}
	for _, region := range []string{"us", "eu"} {
		f := e.wrap(region, svc)
		f.onAuthorize = func(a contract.Authority) error { add(region, "authority", a); return nil }
		f.onExport = func(r contract.ExportRequest) error { add(region, "export "+r.Mode.String(), r.Authority); return nil }
		f.onImport = func(r *contract.ImportRequest) error { add(region, "import", r.Authority); return nil }
		f.onCleanup = func(a contract.Authority) error { add(region, "cleanup", a); return nil }
	}
	return func() []stamp {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(out)
	}
}

// routingHistory returns every kept revision of res's routing document.
func (e *env) routingHistory(res string) map[uint64]*kvrouting.Document {
	e.t.Helper()
	r, _ := kvrouting.ParseResource(res)
	hist, err := e.locker.Store().KV().History(context.Background(), r.Key())
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[uint64]*kvrouting.Document{}
	for _, en := range hist {
		if en.Operation() != jetstream.KeyValuePut {
			continue
		}
		d, err := kvrouting.DecodeDocument(en.Value(), en.Revision())
		if err != nil {
			e.t.Fatal(err)
		}
		out[d.Revision] = d
	}
	return out
}

// TestStampsFollowTheRoutingDocument: every authority the worker sends a
// participant is the one the routing document of its revision gives that
// region (kvrouting.Document.AuthorityAt): the write fence ends with the
// write lock (plus the skew) while the source is the primary, and after
// the swap the old source is a secondary and the new one the primary.
func TestStampsFollowTheRoutingDocument(t *testing.T) {
	e := mustEnv(t)
	const res = "conv/stamps"
	e.seed(res, 9)
	stamps := e.recordStamps("messages")
	e.startWorker(e.config())
	e.migrateDone(res, "eu")
	e.assertMigrated(res)
	hist := e.routingHistory(res)
	skew := e.locker.Config().ClockSkew
	roles := map[string][]string{}
	for _, s := range stamps() {
		d, ok := hist[s.a.Rev]
		if !ok {
			t.Fatalf("%s at %s stamped %s: no routing revision %d", s.op, s.region, s.a, s.a.Rev)
		}
		if want := d.AuthorityAt(s.region, skew); s.a != want {
			t.Fatalf("%s at %s stamped %s; the routing document of revision %d gives %s", s.op, s.region, s.a, d.Revision, want)
		}
		roles[s.region] = append(roles[s.region], fmt.Sprintf("%s %s", s.op, s.a.RoleOf()))
	}
	for region, want := range map[string][]string{
		"us": {"export historical primary", "export delta exporting", "authority secondary"},
		"eu": {"import importing", "authority primary"},
	} {
		for _, w := range want {
			if !slices.Contains(roles[region], w) {
				t.Fatalf("%s was sent %v; want among them %q", region, roles[region], w)
			}
		}
	}
}

// writeFencing is a baseline policy: writes refused from the pre-lock on.
type writeFencing struct{}

func (writeFencing) WriteFenceAtPreLock() bool { return true }
func (writeFencing) WriteFenceInPhase2() bool  { return true }

// TestFencePolicy: the source is told what the worker's policy says before
// Phase 3 — a stricter write fence than routing's, from the pre-lock on —
// and what routing says without one (tombstone deletes in Phase 2, the
// write fence in Phase 3, a secondary after the swap); without the holder
// cache the migration is the same, at the cost of routing reads.
func TestFencePolicy(t *testing.T) {
	type seen = []string
	protocol := func(s seen) bool {
		return slices.Contains(s, "export historical tombstone") && slices.Contains(s, "export delta exporting") &&
			!slices.Contains(s, "export historical exporting") && s[len(s)-1] == "authority secondary"
	}
	for _, tc := range []struct {
		name string
		opts []WorkerOption
		want func(seen) bool
	}{
		{"protocol", nil, protocol},
		{"write from the pre-lock", []WorkerOption{WithFencePolicy(writeFencing{})}, func(s seen) bool {
			return len(s) > 2 && s[0] == "authority exporting" && slices.Contains(s, "export historical exporting") &&
				!slices.Contains(s, "export historical tombstone") && s[len(s)-1] == "authority secondary"
		}},
		{"without the holder cache", []WorkerOption{WithoutHolderCache()}, protocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := mustEnv(t)
			const res = "conv/policy"
			e.seed(res, 5)
			stamps := e.recordStamps("messages")
			w, err := NewWorker(e.nc, e.js, e.config(), tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = w.Run(context.Background()) }()
			t.Cleanup(func() { _ = w.Close() })
			e.migrateDone(res, "eu")
			var at seen
			for _, s := range stamps() {
				if s.region == "us" {
					name := string(s.a.RoleOf())
					if s.a.Deletes == contract.DeletesTombstone {
						name = "tombstone"
					}
					at = append(at, s.op+" "+name)
				}
			}
			if !tc.want(at) {
				t.Fatalf("authorities sent to the source: %v", at)
			}
			e.assertMigrated(res)
		})
	}
}

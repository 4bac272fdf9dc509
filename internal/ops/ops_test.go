package ops

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
)

// TestUsageErrors: a bad request is a usage error, found before any
// connection is attempted (the NATS URL is unreachable).
func TestUsageErrors(t *testing.T) {
	const nats = "nats://127.0.0.1:1"
	ctx, w := context.Background(), io.Discard
	start := func(r StartRequest) error { r.NATS = nats; return Start(ctx, r, w, w) }
	tenant := func(r TenantRequest) error {
		r.NATS, r.Tenant, r.Target = nats, "acme", "eu-west"
		return StartTenant(ctx, r, w, w)
	}
	for name, err := range map[string]error{
		"start bad resource":    start(StartRequest{Resource: "nokind", Target: "eu-west"}),
		"start no target":       start(StartRequest{Resource: "conv/a"}),
		"start upper target":    start(StartRequest{Resource: "conv/a", Target: "EU"}),
		"tenant empty":          StartTenant(ctx, TenantRequest{NATS: nats, Tenant: " ", Target: "eu-west"}, w, w),
		"tenant no resources":   tenant(TenantRequest{Resources: ","}),
		"tenant both lists":     tenant(TenantRequest{Resources: "conv/a", ResourcesFile: "f"}),
		"tenant concurrency":    tenant(TenantRequest{Resources: "conv/a", Concurrency: -1}),
		"status empty id":       Status(ctx, StatusRequest{NATS: nats}, w),
		"status negative limit": Status(ctx, StatusRequest{NATS: nats, List: true, Limit: -1}, w),
		"cancel bad id":         Cancel(ctx, CancelRequest{NATS: nats, ID: "bad id!"}, w, w),
		"history bad resource":  History(ctx, HistoryRequest{NATS: nats, Of: "conv/"}, w),
		"routing bad resource":  GetRouting(ctx, RoutingRequest{NATS: nats, Resource: "nokind"}, w),
		"one approver twice":    ForceRelease(ctx, ForceReleaseRequest{NATS: nats, Resource: "conv/a", Approvers: []string{"a", " A"}}, w, w),
		"fence one approver":    ClearFence(ctx, ClearFenceRequest{NATS: nats, Resource: "conv/a", Region: "us-east", Approvers: []string{"a"}}, w, w),
		"fence approver twice":  ClearFence(ctx, ClearFenceRequest{NATS: nats, Resource: "conv/a", Region: "us-east", Approvers: []string{"a", " A"}}, w, w),
		"fence no region":       ClearFence(ctx, ClearFenceRequest{NATS: nats, Resource: "conv/a", Approvers: []string{"a", "b"}}, w, w),
		"fence bad region":      ClearFence(ctx, ClearFenceRequest{NATS: nats, Resource: "conv/a", Region: "US", Approvers: []string{"a", "b"}}, w, w),
		"fence bad resource":    ClearFence(ctx, ClearFenceRequest{NATS: nats, Resource: "conv/", Region: "us-east", Approvers: []string{"a", "b"}}, w, w),
		"probe same regions":    Probe(ctx, ProbeRequest{NATS: nats, Region: "us-east", Target: "us-east"}, w, w),
	} {
		if !errors.Is(err, ErrUsage) {
			t.Errorf("%s: %v, want a usage error", name, err)
		}
	}
}

func TestTenantResourcesFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "r.txt")
	if err := os.WriteFile(f, []byte("# tenant acme\n\nconv/a\n conv/b \nconv/a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := tenantResources("", f)
	if err != nil || !slices.Equal(got, []string{"conv/a", "conv/b"}) {
		t.Fatalf("%v %v", got, err)
	}
	if err := os.WriteFile(f, []byte("conv/a\n\nbad\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tenantResources("", f); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), f+":3") {
		t.Fatalf("bad line: %v", err)
	}
}

// TestRolledBackShows: a migration retrying after a rollback does not
// look like one that is simply active: the status says so (issue 14 #15).
func TestRolledBackShows(t *testing.T) {
	for _, st := range []*events.State{
		{ID: "m1", Resource: "conv/t1", Source: "us-east", Target: "eu-west", Phase: events.PhaseRolledBack, Status: events.StatusActive,
			Attempt: 1, MaxAttempts: 3, Reason: "3 transient failures in historical-copy: unavailable"},
		{ID: "m2", Resource: "conv/t2", Target: "eu-west", Phase: events.PhaseRequested, Status: events.StatusActive,
			Attempt: 2, MaxAttempts: 3, Reason: "3 transient failures in historical-copy: unavailable"},
	} {
		var b strings.Builder
		printState(&b, st)
		if !strings.Contains(b.String(), "rolled back") {
			t.Errorf("%s in phase %s, attempt %d: the status does not say it rolled back:\n%s", st.ID, st.Phase, st.Attempt, b.String())
		}
		if !toStateJSON(st, 1).Retrying {
			t.Errorf("%s: --json does not say it is retrying", st.ID)
		}
	}
	// Each rolled-back attempt, from the history, with its phase and reason.
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	h := []*events.Envelope{
		{Type: events.TypeStepFailed, Time: at, Body: events.StepFailed{Phase: events.PhaseHistorical, Error: "unavailable"},
			State: &events.State{Attempt: 1}},
		{Type: events.TypeRolledBack, Time: at, Body: events.RolledBack{Reason: "3 transient failures", Phase: events.PhaseHistorical},
			State: &events.State{Attempt: 1, Phase: events.PhaseRolledBack}},
	}
	rbs := rollbacksOf(h)
	if len(rbs) != 1 || rbs[0].Attempt != 1 || rbs[0].Phase != string(events.PhaseHistorical) || rbs[0].Reason != "3 transient failures" {
		t.Fatalf("rollbacks %+v", rbs)
	}
	var b strings.Builder
	printRollbacks(&b, rbs)
	if want := "rolled back attempt 1 in historical-copy at 2025-01-02T03:04:05Z: 3 transient failures\n"; b.String() != want {
		t.Fatalf("rollback row %q, want %q", b.String(), want)
	}
	done := &events.State{ID: "m3", Phase: events.PhaseDone, Status: events.StatusCompleted, Attempt: 2, MaxAttempts: 3}
	if rolledBack(done) != 0 || statusWord(done) != "completed" {
		t.Fatalf("an ended migration: %d rolled back, status %q", rolledBack(done), statusWord(done))
	}
}

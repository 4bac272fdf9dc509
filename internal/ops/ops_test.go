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

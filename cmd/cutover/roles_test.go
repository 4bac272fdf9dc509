package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cutover/cutover/internal/metrics"
	"github.com/cutover/cutover/projector/httpapi"

	"github.com/cutover/cutover/app/client"
)

// syncBuffer is an output a role writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// role runs one role as `cutover args...` would, until the test ends.
type role struct {
	out, errs syncBuffer
	done      chan int
}

func startRole(t *testing.T, args ...string) *role {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &role{done: make(chan int, 1)}
	go func() { r.done <- Run(ctx, args, &r.out, &r.errs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-r.done:
			if code != 0 {
				t.Errorf("%s exited %d: %s", args[0], code, r.errs.String())
			}
		case <-time.After(20 * time.Second):
			t.Errorf("%s did not stop", args[0])
		}
	})
	return r
}

// await returns the first submatch of re in the role's output, once it
// appears.
func (r *role) await(t *testing.T, re string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := rx.FindStringSubmatch(r.out.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-r.done:
			t.Fatalf("role exited %d: %s\n%s", code, r.errs.String(), r.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in:\n%s", re, r.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRolesTogether runs a deployment as separate roles — nats, gateway,
// orchestrator (validating through the gateway's API), projector — and
// migrates a conversation with the operator commands against it.
func TestRolesTogether(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Parallel()
	// Development identities (--insecure-dev-auth) on a server without
	// users; the validator's secret from a file (TestSecureRoles: the
	// secured deployment).
	secretFile := filepath.Join(t.TempDir(), "service.secret")
	if err := os.WriteFile(secretFile, []byte(testServiceSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startRole(t, "nats", "--port", "0")
	url := n.await(t, `NATS\s+(nats://\S+)`)
	gw := startRole(t, "gateway", "--nats", url, "--regions", "us-east,eu-west", "--http", "127.0.0.1:0", "--log-level", "warn",
		"--insecure-dev-auth", "--service-secret-file", secretFile)
	api := "http://" + gw.await(t, `HTTP API\s+http://(\S+)`)
	startRole(t, "orchestrator", "--nats", url, "--api", api, "--workers", "1", "--log-level", "warn",
		"--insecure-dev-auth", "--service-secret-file", secretFile).await(t, `(cutover orchestrator)`)
	pr := startRole(t, "projector", "--nats", url, "--http", "127.0.0.1:0", "--log-level", "warn", "--insecure-dev-auth")
	proj := "http://" + pr.await(t, `HTTP\s+http://(\S+)/v1/migrations`)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alice := mustClient(t, api, "alice")
	if _, err := alice.CreateConversation(ctx, client.NewConversation{ID: "roles", Title: "roles"}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.PostMessage(ctx, "roles", client.NewMessage{ID: "m1", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "migrate", "start", "conv/roles", "--to", "eu-west", "--wait", "--nats", url, "--timeout", "45s")
	if code != 0 {
		t.Fatalf("migrate: %d %s\n%s", code, errs, out)
	}
	id := migrationIDRe.FindString(out)
	var m httpapi.Migration
	deadline := time.Now().Add(10 * time.Second)
	for m.Status != "completed" {
		if time.Now().After(deadline) {
			t.Fatalf("projector: %+v", m)
		}
		if resp, err := http.Get(proj + "/v1/migrations/" + id); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	// requested, pre-locked, hard-delete-locked (with its fence),
	// pages-copied, write-locked (with its fence), swapped (with the last
	// deltas, the validation and the cleanup schedule), completed.
	if m.Resource != "conv/roles" || m.Figures == nil || len(m.Timeline) < 7 {
		t.Fatalf("read model %+v", m)
	}
	var list struct {
		Migrations []httpapi.Migration `json:"migrations"`
	}
	if err := json.Unmarshal([]byte(scrape(t, proj+"/v1/migrations?status=completed")), &list); err != nil || len(list.Migrations) != 1 {
		t.Fatalf("list: %v %+v", err, list)
	}
	for {
		body := scrape(t, proj+"/metrics")
		if v, _ := sample(body, metrics.MetricPhaseDuration+`_count{phase="total"}`); v == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("projector metrics:\n%s", grep(body, "cutover_"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(scrape(t, api+"/metrics", metricsAuth), metrics.MetricCacheHits) {
		t.Fatal("gateway /metrics lacks the routing cache metrics")
	}
	if got, err := alice.GetConversation(ctx, "roles"); err != nil || got.Region != "eu-west" {
		t.Fatalf("after: %v %+v", err, got)
	}
}

package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
)

// chromiumPath is the headless browser the dashboard test drives: Debian's
// chromium (.ci/run installs it where it can), or $CHROMIUM.
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// headless runs one headless Chromium on url with extra flags (the launch
// flags that work on a closed network) and returns its stdout.
func headless(ctx context.Context, t *testing.T, bin, url string, extra ...string) string {
	t.Helper()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir()}, extra...)
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, bin, append(args, url)...).Output()
	if err != nil && ctx.Err() == nil {
		t.Logf("chromium: %v", err)
	}
	return string(out)
}

// TestDashboardInABrowser loads the operator dashboard in headless Chromium
// while a real migration runs: the page (server-sent events, no CDN)
// shows the migration and then shows it completed, then a tenant move
// paused and throttled with the write-blocked column; a screenshot is
// written under the test's temp dir. Skipped, saying why, without Chromium.
func TestDashboardInABrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("drives a browser")
	}
	bin := chromiumPath()
	if bin == "" {
		t.Skip("chromium is not installed (apt-get install chromium, or set CHROMIUM): the dashboard's browser test is not run")
	}
	ts := startSystem(t, func(c *system.Config) { c.DashboardAddr = "127.0.0.1:0" })
	url := ts.sys.DashboardURL + "/"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	c, err := client.New(ts.api, "user:ann")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.CreateConversation(ctx, client.NewConversation{ID: "dash", Title: "dash"}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := c.PostMessage(ctx, "dash", client.NewMessage{ID: "m" + string(rune('a'+i)), Text: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	// The page before any migration.
	// (A browser's first start on a fresh machine may crash: it is tried
	// three times.)
	for i := 0; ; i++ {
		dom := headless(ctx, t, bin, url, "--dump-dom")
		if strings.Contains(dom, "Migrations in flight") {
			break
		}
		if i == 2 {
			t.Fatalf("the dashboard did not load:\n%.2000s", dom)
		}
	}
	id, err := ts.orch.Start(ctx, events.Start{Resource: "conv/dash", Target: "eu-west"})
	if err != nil {
		t.Fatal(err)
	}
	// It appears, and reaches completed.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		dom := headless(ctx, t, bin, url, "--dump-dom")
		if strings.Contains(dom, `data-id="`+id+`">completed`) {
			if !strings.Contains(dom, "live ·") {
				t.Fatalf("the page shows the migration but never went live:\n%.2000s", dom)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("migration %s never shown completed:\n%.3000s", id, dom)
		}
	}
	// Live: the page's server-sent events carry the same board.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.sys.DashboardURL+"/v1/dashboard/stream", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("stream content type %q", ct)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			if !strings.Contains(line, id) || !strings.Contains(line, `"status":"completed"`) {
				t.Fatalf("first board event lacks the completed migration: %.500s", line)
			}
			break
		}
	}
	// Steering shows: a tenant move paused and throttled, and every
	// migration's write-blocked time.
	for _, conv := range []string{"dash-a", "dash-b"} {
		if _, err := c.CreateConversation(ctx, client.NewConversation{ID: conv, Title: conv}); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if _, err := c.PostMessage(ctx, conv, client.NewMessage{ID: "m" + string(rune('a'+i)), Text: "hi"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	tid, err := ts.orch.StartTenant(ctx, events.StartTenant{Tenant: "dash", Target: "eu-west", Resources: []string{"conv/dash-a", "conv/dash-b"},
		Concurrency: 2, Rate: 2}) // a record a second each: it runs long enough to steer
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) { // a child in flight to show
		if st, _, err := ts.orch.State(ctx, tid); err == nil && len(st.Fanout.Active) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tenant move %s started no child", tid)
		}
	}
	if err := ts.orch.Send(ctx, events.Pause{MigrationID: tid, Reason: "dashboard test"}); err != nil {
		t.Fatal(err)
	}
	if err := ts.orch.Send(ctx, events.Throttle{MigrationID: tid, Concurrency: 1, Rate: 500}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		dom := headless(ctx, t, bin, url, "--dump-dom")
		if strings.Count(dom, `<span class="paused">paused</span>`) >= 2 && strings.Contains(dom, `data-throttle="`+tid+`">500 rec/s`) { // the move and its child
			for _, want := range []string{"<th>writes blocked</th>", "<th>steering</th>", "<th>throttle</th>"} {
				if !strings.Contains(dom, want) {
					t.Fatalf("the page lacks %s:\n%.3000s", want, dom)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tenant move %s never shown paused and throttled:\n%.4000s", tid, dom)
		}
	}
	if err := ts.orch.Send(ctx, events.Resume{MigrationID: tid}); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(t.TempDir(), "dashboard.png")
	headless(ctx, t, bin, url, "--window-size=1280,900", "--screenshot="+shot)
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot: %v", err)
	}
	t.Logf("screenshot: %s", shot)
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/metrics"
	"github.com/cutover/cutover/internal/ops"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/orchestrator"
)

// cliSystem is the dev system in process (as startSystem) with the metrics
// feed and the NATS URL the operator commands need.
type cliSystem struct {
	nats string
	api  string
	orch *orchestrator.Client
	lk   *kvrouting.Locker
	sys  *system.System
}

func startCLISystem(t *testing.T, tweak func(*system.Config)) *cliSystem {
	t.Helper()
	ts := startSystem(t, func(c *system.Config) {
		if tweak != nil {
			tweak(c)
		}
	})
	return &cliSystem{nats: ts.sys.NATSURL, api: ts.api, orch: ts.orch, lk: ts.lk, sys: ts.sys}
}

func mustClient(t *testing.T, api, user string) *client.Client {
	t.Helper()
	c, err := client.New(api, "user:"+user)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// awaitLock waits until res's primary holds a lock of type typ.
func (s *cliSystem) awaitLock(ctx context.Context, t *testing.T, res kvrouting.Resource, typ kvrouting.LockType) {
	t.Helper()
	for {
		if d, err := s.lk.Get(ctx, res); err == nil && d.Primary.Lock.Type == typ {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never %s-locked", res, typ)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// unsignedWarned checks that a two-person command run with approver names
// alone warned that only a development orchestrator takes them (when it
// got past its usage checks: exit code not 2) and returns stderr without
// the warning.
func unsignedWarned(t *testing.T, code int, errs string) string {
	t.Helper()
	const warning = "cutover: WARNING: no signed approvals (--approval, --key): only a development orchestrator (--insecure-dev-auth, no operator registry) accepts approver names alone\n"
	if code != 2 && !strings.HasPrefix(errs, warning) {
		t.Fatalf("no warning about unsigned approvals: %q", errs)
	}
	return strings.TrimPrefix(errs, warning)
}

// oneLineErr fails unless errs is exactly one line.
func oneLineErr(t *testing.T, what, errs string) {
	t.Helper()
	if strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "cutover ") {
		t.Fatalf("%s: stderr is not one line: %q", what, errs)
	}
}

var migrationIDRe = regexp.MustCompile(`\bm[0-9a-f]{31}\b`)

// TestOperatorCommands drives one in-process deployment with the operator
// commands: start and follow, history, status, routing, probe, cancel, a
// tenant of 20 conversations, and the metrics they leave behind.
func TestOperatorCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Parallel()
	s := startCLISystem(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	alice := mustClient(t, s.api, "alice")
	if _, err := alice.CreateConversation(ctx, client.NewConversation{ID: "ops1", Title: "ops", Members: []string{"bob"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := alice.PostMessage(ctx, "ops1", client.NewMessage{ID: fmt.Sprintf("m%d", i), Text: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	var id string

	t.Run("migrate start --wait", func(t *testing.T) {
		code, out, errs := run(t, "migrate", "start", "conv/ops1", "--to", "eu-west", "--wait", "--nats", s.nats, "--timeout", "1m")
		if code != 0 {
			t.Fatalf("exit %d: %s\n%s", code, errs, out)
		}
		id = migrationIDRe.FindString(out)
		for _, want := range []string{"pre-locked", "hard-delete-locked", "write-locked", "validated", "swapped", "completed: total"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "page-copied") || strings.Contains(out, "pages-copied") {
			t.Errorf("--wait prints phase transitions, not every page:\n%s", out)
		}
		if got, _ := alice.GetConversation(ctx, "ops1"); got.Region != "eu-west" {
			t.Fatalf("conversation at %q after the migration", got.Region)
		}
	})
	if id == "" {
		t.Fatal("no migration id")
	}

	t.Run("watch --history", func(t *testing.T) {
		code, out, errs := run(t, "watch", "conv/ops1", "--history", "--count", "5", "--nats", s.nats)
		if code != 0 {
			t.Fatalf("exit %d: %s\n%s", code, errs, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		want := []string{"registered", "pre-locked", "escalated", "escalated", "swapped"}
		if len(lines) != len(want) {
			t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
		}
		for i, w := range want {
			if !strings.Contains(lines[i], " "+w+" ") || !strings.Contains(lines[i], "conv/ops1") {
				t.Errorf("line %d %q: want %s", i, lines[i], w)
			}
		}
		if !strings.Contains(lines[4], "eu-west") || !strings.Contains(lines[3], "write lock") {
			t.Errorf("lines:\n%s", out)
		}
		code, out, errs = run(t, "watch", "--kind", "conv", "--history", "--count", "1", "--json", "--nats", s.nats)
		if code != 0 {
			t.Fatalf("--json: exit %d: %s", code, errs)
		}
		var c struct {
			Resource, Kind string
			Primary        struct{ Region, Lock string }
		}
		if err := json.Unmarshal([]byte(out), &c); err != nil || c.Kind != "registered" || c.Primary.Lock != "none" {
			t.Fatalf("--json: %q %v", out, err)
		}
		if code, _, _ := run(t, "watch", "conv/ops1", "--kind", "conv", "--nats", s.nats); code != 2 {
			t.Fatalf("a resource and --kind: exit %d, want 2", code)
		}
	})

	t.Run("migrate start --dry-run", func(t *testing.T) {
		// What a dry run must not touch: the routing revision and every
		// stream's last sequence.
		snapshot := func() map[string]uint64 {
			seqs := map[string]uint64{}
			l := s.sys.JS.ListStreams(ctx)
			for info := range l.Info() {
				seqs[info.Config.Name] = info.State.LastSeq
			}
			if err := l.Err(); err != nil {
				t.Fatal(err)
			}
			return seqs
		}
		before := snapshot()
		code, out, errs := run(t, "migrate", "start", "conv/ops1", "--to", "us-east", "--dry-run", "--nats", s.nats)
		if code != 0 {
			t.Fatalf("exit %d: %s\n%s", code, errs, out)
		}
		for _, want := range []string{"nothing written", "ok   resource exists", "ok   not locked", "ok   target region healthy",
			"services answer the contract", "records 1", "estimated write lock"} {
			if !strings.Contains(out, want) {
				t.Errorf("dry run lacks %q:\n%s", want, out)
			}
		}
		if after := snapshot(); !reflect.DeepEqual(before, after) {
			t.Fatalf("a dry run wrote: streams %v → %v", before, after)
		}
		// A failed pre-flight: already at the target.
		code, out, _ = run(t, "migrate", "start", "conv/ops1", "--to", "eu-west", "--dry-run", "--json", "--nats", s.nats)
		var p struct {
			OK     bool
			Checks []struct {
				Name string
				OK   bool
			}
		}
		if err := json.Unmarshal([]byte(out), &p); err != nil || code != 1 || p.OK {
			t.Fatalf("dry run to where it is: exit %d, %v, %s", code, err, out)
		}
		code, out, errs = run(t, "migrate", "tenant", "t1", "--to", "us-east", "--resources", "conv/ops1", "--dry-run", "--nats", s.nats)
		if code != 0 || !strings.Contains(out, "tenant t1: 1 resources") {
			t.Fatalf("tenant dry run: exit %d %s\n%s", code, errs, out)
		}
		if after := snapshot(); !reflect.DeepEqual(before, after) {
			t.Fatalf("a tenant dry run wrote: streams %v → %v", before, after)
		}
	})

	t.Run("history", func(t *testing.T) {
		code, out, errs := run(t, "history", id, "--nats", s.nats)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		// The escalations carry their fences and the swap the last delta
		// pages, its validation and the cleanup schedule (one synced append
		// each).
		types := []string{events.TypeRequested, events.TypePreLocked, events.TypeHardDeleteLocked,
			events.TypePagesCopied, events.TypeWriteLocked, events.TypeSwapped, events.TypeCompleted}
		last := -1
		for _, typ := range types {
			i := strings.Index(out, "  "+typ+" ")
			if i < 0 || i < last {
				t.Fatalf("timeline lacks %s (or out of order):\n%s", typ, out)
			}
			last = i
		}
		code, out, errs = run(t, "history", "conv/ops1", "--json", "--nats", s.nats)
		if code != 0 {
			t.Fatalf("by resource: exit %d: %s", code, errs)
		}
		var h []struct {
			MigrationID string `json:"migration_id"`
			Events      []struct {
				Type string         `json:"type"`
				Body map[string]any `json:"body"`
			} `json:"events"`
		}
		if err := json.Unmarshal([]byte(out), &h); err != nil || len(h) != 1 || h[0].MigrationID != id || len(h[0].Events) < len(types) {
			t.Fatalf("history --json: %v %+v", err, h)
		}
		if tok, _ := h[0].Events[0].Body["Token"].(string); h[0].Events[0].Type != events.TypeRequested || !strings.HasSuffix(tok, "…") {
			t.Fatalf("first event %+v: token not redacted", h[0].Events[0])
		}
	})

	t.Run("migrate status", func(t *testing.T) {
		code, out, errs := run(t, "migrate", "status", id, "--json", "--nats", s.nats)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var st ops.StateJSON
		if err := json.Unmarshal([]byte(out), &st); err != nil || st.Status != "completed" || st.Figures == nil || st.Figures.Records == 0 {
			t.Fatalf("status: %v %s", err, out)
		}
		if regexp.MustCompile(`[0-9a-f]{32}`).MatchString(strings.ReplaceAll(out, id, "")) {
			t.Fatalf("a whole token in the output:\n%s", out)
		}
		code, out, _ = run(t, "migrate", "status", "--nats", s.nats)
		if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "conv/ops1") {
			t.Fatalf("recent: %d\n%s", code, out)
		}
		code, _, errs = run(t, "migrate", "status", "mnosuchmigration", "--nats", s.nats)
		if code != 1 {
			t.Fatalf("unknown id: exit %d", code)
		}
		oneLineErr(t, "unknown id", errs)
	})

	t.Run("routing get", func(t *testing.T) {
		code, out, errs := run(t, "routing", "get", "conv/ops1", "--json", "--nats", s.nats)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		var doc client.RoutingDocument
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		full, err := s.lk.Get(ctx, kvrouting.Resource{Kind: "conv", ID: "ops1"})
		if err != nil || full.Secondary == nil {
			t.Fatal(err)
		}
		tok := string(full.Secondary.Lock.Token)
		if doc.Primary.Region != "eu-west" || doc.Secondary == nil || doc.Secondary.Lock.Type != "secondary" || doc.Source != "leader" {
			t.Fatalf("routing %+v", doc)
		}
		if doc.Secondary.Lock.Token != kvrouting.Token(tok).Redacted() || strings.Contains(out, tok) {
			t.Fatalf("token not redacted: %q", doc.Secondary.Lock.Token)
		}
		code, out, _ = run(t, "routing", "get", "conv/ops1", "--nats", s.nats)
		if code != 0 || !strings.Contains(out, "eu-west") || strings.Contains(out, tok) {
			t.Fatalf("text: %d\n%s", code, out)
		}
		code, _, errs = run(t, "routing", "get", "conv/none", "--nats", s.nats)
		if code != 1 {
			t.Fatalf("unknown resource: exit %d", code)
		}
		oneLineErr(t, "unknown resource", errs)
	})

	t.Run("probe", func(t *testing.T) {
		code, out, errs := run(t, "probe", "--nats", s.nats)
		if code != 0 {
			t.Fatalf("exit %d: %s\n%s", code, errs, out)
		}
		if n := strings.Count(out, "\nPASS "); n < 30 || strings.Contains(out, "FAIL") {
			t.Fatalf("%d PASS lines:\n%s", n, out)
		}
		for _, want := range []string{"tombstone (hard-delete lock)", "reject (write lock)", "reject (locked secondary)", "pre (leader)"} {
			if !strings.Contains(out, want) {
				t.Errorf("probe output lacks %q", want)
			}
		}
		code, out, _ = run(t, "probe", "--json", "--nats", s.nats)
		var rep ops.ProbeReport
		if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Failed != 0 || len(rep.Assertions) < 30 {
			t.Fatalf("--json: %d %s", code, out)
		}
		// The probe cleans up after itself.
		if _, err := s.lk.Get(ctx, kvrouting.Resource{Kind: "conv", ID: strings.TrimPrefix(rep.Resource, "conv/")}); err == nil {
			t.Fatalf("probe resource %s left behind", rep.Resource)
		}
	})

	t.Run("migrate cancel", func(t *testing.T) {
		if _, err := alice.CreateConversation(ctx, client.NewConversation{ID: "ops2", Title: "cancel me"}); err != nil {
			t.Fatal(err)
		}
		code, out, errs := run(t, "migrate", "start", "conv/ops2", "--to", "eu-west", "--nats", s.nats)
		if code != 0 {
			t.Fatalf("start: %d %s", code, errs)
		}
		cid := strings.TrimSpace(out)
		// The convergence wait (about a second) leaves time to cancel.
		code, out, errs = run(t, "migrate", "cancel", cid, "--reason", "test", "--wait", "--nats", s.nats)
		if code != 0 {
			t.Fatalf("cancel: %d %s\n%s", code, errs, out)
		}
		st, _, err := s.orch.State(ctx, cid)
		if err != nil || st.Status != events.StatusFailed || !strings.Contains(st.Reason, "cancelled") {
			t.Fatalf("after cancel: %v %+v", err, st)
		}
		if got, _ := alice.GetConversation(ctx, "ops2"); got.Region != "us-east" {
			t.Fatalf("cancelled conversation at %q", got.Region)
		}
	})

	t.Run("migrate start to a region nothing serves", func(t *testing.T) {
		if _, err := alice.CreateConversation(ctx, client.NewConversation{ID: "ops3", Title: "nowhere"}); err != nil {
			t.Fatal(err)
		}
		res := kvrouting.Resource{Kind: "conv", ID: "ops3"}
		before, err := s.lk.Get(ctx, res)
		if err != nil {
			t.Fatal(err)
		}
		code, out, errs := run(t, "migrate", "start", "conv/ops3", "--to", "mars", "--wait", "--nats", s.nats, "--timeout", "30s")
		if code != 2 || !strings.Contains(errs, "unknown region mars (served: eu-west, us-east)") {
			t.Fatalf("exit %d, want 2 and a refusal naming the region and the served ones: %s\n%s", code, errs, out)
		}
		oneLineErr(t, "unserved region", errs)
		after, err := s.lk.Get(ctx, res)
		if err != nil || after.Revision != before.Revision {
			t.Fatalf("routing revision %d → %d (%v): a refused start wrote it", before.Revision, after.Revision, err)
		}
	})

	// A real start runs the dry run's pre-flight and refuses at once, exit
	// 2, writing nothing (no command, no event, no routing change): a
	// missing resource, an unknown region, already at the target, locked
	// by another migration; a tenant move refuses all or nothing.
	t.Run("migrate start refused by the pre-flight", func(t *testing.T) {
		if _, err := alice.CreateConversation(ctx, client.NewConversation{ID: "ops4", Title: "held"}); err != nil {
			t.Fatal(err)
		}
		held := kvrouting.Resource{Kind: "conv", ID: "ops4"}
		g, err := s.lk.PreLock(ctx, held, "eu-west", "m-other")
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _, _ = s.lk.Release(ctx, held, g.Token, g.Doc) }()
		streams := func() map[string]uint64 {
			seqs := map[string]uint64{}
			l := s.sys.JS.ListStreams(ctx)
			for info := range l.Info() {
				if info.Config.Mirror != nil {
					continue // a mirror catches up with writes made before (the test's own pre-lock)
				}
				seqs[info.Config.Name] = info.State.LastSeq
			}
			if err := l.Err(); err != nil {
				t.Fatal(err)
			}
			return seqs
		}
		before := streams()
		for _, c := range []struct {
			name string
			args []string
			says string
		}{
			{"missing resource", []string{"migrate", "start", "conv/nope", "--to", "us-east"}, "conv/nope has no routing document"},
			{"unknown region", []string{"migrate", "start", "conv/ops1", "--to", "ap-south"}, "unknown region ap-south (served: eu-west, us-east)"},
			{"already at the target", []string{"migrate", "start", "conv/ops4", "--to", "us-east"}, "already at us-east"},
			{"locked by another migration", []string{"migrate", "start", "conv/ops4", "--to", "eu-west"}, "locked by migration m-other (pre lock"},
			{"a tenant with one bad resource", []string{"migrate", "tenant", "t9", "--to", "us-east", "--resources", "conv/ops1,conv/nope"}, "1 of 2 resources: conv/nope: conv/nope has no routing document"},
		} {
			code, out, errs := run(t, append(c.args, "--nats", s.nats)...)
			if code != 2 || !strings.Contains(errs, c.says) || !strings.Contains(errs, "nothing written") || out != "" {
				t.Fatalf("%s: exit %d, stderr %q, stdout %q; want exit 2 saying %q", c.name, code, errs, out, c.says)
			}
			oneLineErr(t, c.name, errs)
		}
		if after := streams(); !reflect.DeepEqual(before, after) {
			t.Fatalf("a refused start wrote: streams %v → %v", before, after)
		}

		// The dry run says the same, with no check contradicting another.
		for _, c := range []struct {
			args  []string
			lines []string
		}{
			{[]string{"conv/ops1", "--to", "ap-south"}, []string{"ok   resource exists", "FAIL target region served", "unknown region ap-south (served: eu-west, us-east)"}},
			{[]string{"conv/ops4", "--to", "us-east"}, []string{"ok   resource exists", "ok   target region served", "FAIL not at the target", "already at us-east"}},
		} {
			code, out, _ := run(t, append(append([]string{"migrate", "start"}, c.args...), "--dry-run", "--nats", s.nats)...)
			if code != 1 {
				t.Fatalf("dry run %v: exit %d\n%s", c.args, code, out)
			}
			for _, want := range c.lines {
				if !strings.Contains(out, want) {
					t.Fatalf("dry run %v lacks %q:\n%s", c.args, want, out)
				}
			}
			if n := strings.Count(out, "FAIL"); n != 1 {
				t.Fatalf("dry run %v: %d failed checks, want the one that decides:\n%s", c.args, n, out)
			}
		}
	})

	t.Run("migrate tenant", func(t *testing.T) {
		var lines []string
		for i := 0; i < 20; i++ {
			cid := fmt.Sprintf("tn%02d", i)
			if _, err := alice.CreateConversation(ctx, client.NewConversation{ID: cid, Title: "tenant"}); err != nil {
				t.Fatal(err)
			}
			if _, err := alice.PostMessage(ctx, cid, client.NewMessage{ID: "x", Text: "hello"}); err != nil {
				t.Fatal(err)
			}
			lines = append(lines, "conv/"+cid)
		}
		file := filepath.Join(t.TempDir(), "acme.txt")
		if err := os.WriteFile(file, []byte("# acme's conversations\n"+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := run(t, "migrate", "tenant", "acme", "--to", "eu-west", "--resources-file", file, "--concurrency", "10", "--nats", s.nats)
		if code != 0 {
			t.Fatalf("exit %d: %s\n%s", code, errs, out)
		}
		if n := strings.Count(out, " completed (m"); n != 20 || !strings.Contains(out, "[20/20]") || !strings.Contains(out, "20 completed, 0 failed") {
			t.Fatalf("%d completed lines:\n%s", n, out)
		}
		if strings.Contains(out, "\r") || strings.Contains(out, "\033[") {
			t.Fatal("terminal control characters in plain-line progress")
		}
		for _, r := range lines {
			if got, _ := alice.GetConversation(ctx, strings.TrimPrefix(r, "conv/")); got.Region != "eu-west" {
				t.Fatalf("%s at %q", r, got.Region)
			}
		}
	})

	t.Run("metrics", func(t *testing.T) {
		want := map[string]float64{
			metrics.MetricPhaseDuration + `_count{phase="total"}`:            21, // ops1 and the tenant's 20
			metrics.MetricWriteLock + `_count`:                               21,
			metrics.MetricMigrations + `{outcome="completed"}`:               21,
			metrics.MetricRollbacks + `{reason="cancelled"}`:                 1,
			metrics.MetricValidationFails + `{reason="count"}`:               0,
			metrics.MetricHTTPRejected + `{lock="write-lock"}`:               0,
			metrics.MetricCacheHits + `{region="us-east",tier="us-east-t0"}`: 0,
			metrics.MetricReadThroughs + `{region="us-east"}`:                0,
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			body := scrape(t, s.api+"/metrics", metricsAuth)
			missing := ""
			for k, min := range want {
				v, ok := sample(body, k)
				if !ok || v < min {
					missing = fmt.Sprintf("%s = %v (present %v), want >= %v", k, v, ok, min)
					break
				}
			}
			if missing == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s\n%s", missing, grep(body, "cutover_"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

func scrape(t *testing.T, url string, header ...http.Header) string {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range header {
		for k, v := range h {
			req.Header[k] = v
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %d", url, err, resp.StatusCode)
	}
	return string(b)
}

// sample returns the value of the exposition line starting with key.
func sample(body, key string) (float64, bool) {
	for _, l := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(l, key+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

func grep(body, prefix string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, prefix) && !strings.Contains(l, "_bucket") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestForceReleaseCommand: a migration stuck in its pre-lock (a long
// convergence buffer) is released by `lock force-release` with two
// approvers, audited by a force-released event; one approver is refused
// locally with exit 2.
func TestForceReleaseCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Parallel()
	s := startCLISystem(t, func(c *system.Config) {
		c.Orchestrator.Convergence, c.Orchestrator.ConvergenceBuffer = orchestrator.ConvergenceTTL, 5*time.Minute
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alice := mustClient(t, s.api, "alice")
	if _, err := alice.CreateConversation(ctx, client.NewConversation{ID: "stuck", Title: "stuck"}); err != nil {
		t.Fatal(err)
	}
	id, err := s.orch.Start(ctx, events.Start{Resource: "conv/stuck", Target: "eu-west"})
	if err != nil {
		t.Fatal(err)
	}
	res := kvrouting.Resource{Kind: "conv", ID: "stuck"}
	s.awaitLock(ctx, t, res, kvrouting.LockPre)

	code, _, errs := run(t, "lock", "force-release", "conv/stuck", "--approver", "alice", "--approver", " Alice ", "--nats", s.nats)
	if code != 2 {
		t.Fatalf("one approver: exit %d (%s)", code, errs)
	}
	oneLineErr(t, "one approver", errs)
	if d, _ := s.lk.Get(ctx, res); d.Primary.Lock.Type != kvrouting.LockPre {
		t.Fatalf("refused force-release changed the lock: %+v", d.Primary.Lock)
	}

	code, out, errs := run(t, "lock", "force-release", "conv/stuck", "--approver", "alice", "--approver", "bob", "--reason", "stuck in test", "--nats", s.nats)
	if code != 0 {
		t.Fatalf("two approvers: exit %d: %s\n%s", code, errs, out)
	}
	if !strings.Contains(out, "released conv/stuck") || !strings.Contains(out, id) {
		t.Fatalf("output:\n%s", out)
	}
	if d, err := s.lk.Get(ctx, res); err != nil || !d.Primary.Lock.IsZero() || d.Primary.Region != "us-east" {
		t.Fatalf("after force-release: %v %+v", err, d)
	}
	h, err := s.orch.History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	audited := false
	for _, e := range h {
		if b, ok := e.Body.(events.ForceReleased); ok && b.Resource == "conv/stuck" && b.Reason == "stuck in test" && len(b.Approvers) == 2 {
			audited = true
		}
	}
	if !audited {
		t.Fatalf("no force-released event in %d events", len(h))
	}
	code, out, _ = run(t, "history", "conv/stuck", "--nats", s.nats)
	if code != 0 || !strings.Contains(out, "force-released") || !strings.Contains(out, "alice + bob") {
		t.Fatalf("history: %d\n%s", code, out)
	}
	// The migration that held the lock rolls back and stops.
	for {
		st, _, err := s.orch.State(ctx, id)
		if err == nil && st.Status.Terminal() {
			if st.Status != events.StatusFailed || !strings.Contains(st.Reason, "force-released") {
				t.Fatalf("migration ended %s: %s", st.Status, st.Reason)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatal("migration did not end")
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, out, _ = run(t, "lock", "force-release", "conv/stuck", "--approver", "alice", "--approver", "bob", "--nats", s.nats)
	if code != 0 || !strings.Contains(out, "nothing to release") {
		t.Fatalf("unlocked: %d %s", code, out)
	}
}

// TestCommandHelpAndUsage: every command and subcommand answers --help
// with exit 0; bad input exits 2 with one line on stderr, before any
// connection is attempted.
func TestCommandHelpAndUsage(t *testing.T) {
	for _, c := range [][]string{
		{"migrate", "--help"}, {"migrate", "start", "--help"}, {"migrate", "tenant", "--help"}, {"migrate", "status", "--help"},
		{"migrate", "cancel", "--help"}, {"history", "--help"}, {"routing", "--help"}, {"routing", "get", "--help"},
		{"lock", "--help"}, {"lock", "force-release", "--help"}, {"fence", "--help"}, {"fence", "clear", "--help"}, {"probe", "--help"},
		{"approve", "--help"}, {"operator", "--help"}, {"operator", "keygen", "--help"}, {"operator", "register", "--help"},
		{"nats", "--help"}, {"service", "--help"}, {"orchestrator", "--help"}, {"projector", "--help"}, {"gateway", "--help"},
	} {
		code, out, errs := run(t, c...)
		if code != 0 || !strings.Contains(out, "Usage") || errs != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", c, code, out, errs)
		}
	}
	if _, out, _ := run(t, "gateway", "--help"); !strings.Contains(out, "services + API in one process") {
		t.Errorf("gateway --help does not say it runs the services too:\n%s", out)
	}
	dir := t.TempDir()
	badFile := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(badFile, []byte("conv/a\nnot-a-resource\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{
		{"migrate"}, {"migrate", "bogus"}, {"migrate", "start"}, {"migrate", "start", "conv/x"},
		{"migrate", "start", "nokind", "--to", "eu-west"}, {"migrate", "start", "conv/x", "--to", "EU WEST"},
		{"migrate", "start", "conv/x", "conv/y", "--to", "eu-west"}, {"migrate", "start", "conv/x", "--to", "eu-west", "--bogus"},
		{"migrate", "tenant", "acme", "--to", "eu-west"}, {"migrate", "tenant", "acme", "--to", "eu-west", "--resources", "conv/a", "--resources-file", badFile},
		{"migrate", "tenant", "acme", "--to", "eu-west", "--resources-file", badFile}, {"migrate", "tenant", "acme", "--to", "eu-west", "--resources", "conv/a,bad"},
		{"migrate", "tenant", "acme", "--to", "eu-west", "--resources-file", filepath.Join(dir, "missing")},
		{"migrate", "tenant", "acme", "--to", "eu-west", "--resources", "conv/a", "--concurrency", "-1"},
		{"migrate", "status", "not an id"}, {"migrate", "status", "--limit", "-1"}, {"migrate", "cancel"},
		{"history"}, {"history", "bad id!"}, {"history", "conv/"}, {"routing"}, {"routing", "get"}, {"routing", "get", "nokind"},
		{"lock", "force-release", "conv/x"}, {"lock", "force-release", "conv/x", "--approver", "a"},
		{"lock", "force-release", "conv/x", "--approver", "a", "--approver", "A "}, {"lock", "unlock"},
		{"fence"}, {"fence", "clear"}, {"fence", "clear", "conv/x", "--approver", "a", "--approver", "b"},
		{"fence", "clear", "conv/x", "--region", "us-east"}, {"fence", "clear", "conv/x", "--region", "us-east", "--approver", "a"},
		{"fence", "clear", "conv/x", "--region", "us-east", "--approver", "a", "--approver", " A"},
		{"fence", "clear", "conv/x", "--region", "US East", "--approver", "a", "--approver", "b"},
		{"fence", "clear", "nokind", "--region", "us-east", "--approver", "a", "--approver", "b"},
		{"fence", "clear", "conv/x", "--region", "us-east", "--approver", "alice", "--approver", "alice\u200b"},
		{"fence", "clear", "conv/x", "--region", "us-east", "--approver", "alice", "--approver", "al\u00adice"},
		{"lock", "force-release", "conv/x", "--approval", "not-a-token"}, {"lock", "force-release", "conv/x", "--key", filepath.Join(dir, "missing.key")},
		{"lock", "force-release", "conv/x", "--approval", "cutover-approval-1.e30.AAAA", "--approval", "cutover-approval-1.e30.AAAA"},
		{"approve"}, {"approve", "conv/x", "--op", "force-release"}, {"approve", "conv/x", "--key", badFile, "--op", "nuke"},
		{"approve", "conv/x", "--key", badFile, "--op", "force-release", "--valid", "2h"}, {"approve", "conv/x", "--key", badFile, "--op", "force-release"},
		{"approve", "conv/x", "--key", badFile, "--op", "fence-clear"}, {"operator"}, {"operator", "keygen", "--name", "alice"},
		{"operator", "keygen", "--out", dir}, {"operator", "keygen", "--name", "\u0430lice", "--out", dir}, {"operator", "register"},
		{"certs", "--dir", filepath.Join(dir, "c"), "--operators", "alice,Alice"}, {"certs", "--dir", filepath.Join(dir, "c"), "--operators", "\u0430lice"},
		{"probe", "--region", "us-east", "--target", "us-east"}, {"probe", "extra"},
		{"nats", "--port", "-1"}, {"nats", "--routes", "nats-route://127.0.0.1:6222"}, {"nats", "--port", "x"},
		{"service"}, {"service", "--region", "Bad Region"}, {"service", "--region", "eu-west", "--log-level", "loud"},
		{"orchestrator", "--workers", "0"}, {"orchestrator", "--background-steps", "-1"}, {"orchestrator", "--api", "ftp://x"}, {"projector", "--log-level", "loud"},
		{"gateway", "--regions", ","}, {"gateway", "--regions", "us-east,UP"},
	} {
		code, _, errs := run(t, c...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c, code, errs)
			continue
		}
		if strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: stderr not one line: %q", c, errs)
		}
	}
	// Failures after parsing are one line with exit 1.
	code, _, errs := run(t, "routing", "get", "conv/x", "--nats", "nats://127.0.0.1:1")
	if code != 1 {
		t.Fatalf("unreachable NATS: exit %d", code)
	}
	oneLineErr(t, "unreachable NATS", errs)
}

func TestParseArgsInterleaved(t *testing.T) {
	fs := newFlags("x", "x", io.Discard)
	to := fs.String("to", "", "")
	w := fs.Bool("wait", false, "")
	pos, err := parseArgs(fs, []string{"--wait", "conv/a", "--to", "eu", "b", "--", "--c"})
	if err != nil || *to != "eu" || !*w || strings.Join(pos, " ") != "conv/a b --c" {
		t.Fatalf("%v %q %v %q", err, *to, *w, pos)
	}
}

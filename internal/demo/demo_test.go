package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/internal/check"
	"github.com/cutover/cutover/internal/workload"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// okReport is a clean run's report with every field set.
func okReport() *Report {
	r := &Report{}
	s := &r.Setup
	s.Conversations, s.Messages, s.Cluster = 200, 19873, 3
	s.Durability = "JetStream R3, sync_interval always; Pebble fsync per commit"
	s.Source, s.Target, s.DurationS = "us-east", "eu-west", 41.27
	s.Convergence, s.ResolverTTLMs, s.QueueWritesMs = "fence", 500, 2000
	r.Migrations.Total, r.Migrations.Completed, r.Migrations.FirstAttempt, r.Migrations.RolledBack = 200, 200, 197, 3
	r.PhasesMs.PreLock = percentiles([]float64{12, 15, 15, 18, 40})
	r.PhasesMs.HistoricalCopy = percentiles([]float64{30, 32, 35, 1200, 2400})
	r.PhasesMs.WriteLock = percentiles([]float64{8, 9, 9, 11, 25})
	r.PhasesMs.Cutover = percentiles([]float64{3, 3, 4, 4, 6})
	r.PhasesMs.Total = percentiles([]float64{60, 65, 70, 1250, 2480})
	w := &r.Writes
	w.Attempted, w.Acknowledged, w.Rejected423, w.Recovered, w.Failed = 5120, 5118, 14, 14, 2
	w.FailedBy = map[string]int64{"post 500": 1, "edit timeout": 1}
	w.MaxFenceMs, w.Reads, w.QueuedServerSide = 38.6, 2210, 9
	r.Raw = workload.RawStats{WritesAttempted: 300, Acknowledged: 296, Saw423: 4, Queued: 11, FailedOther: 0}
	r.Validation.Runs, r.Validation.Failures = 200, 0
	r.Invariants = check.Invariants{MaxWriteFenceMs: 25, WriteLockExpiryMs: 10000, ClockSkewMs: 500, MaxUserWriteFenceMs: 30, Uncertain: 1}
	return r
}

// badReport has a broken invariant, an incomplete migration and an
// unrecovered 423; no raw clients.
func badReport() *Report {
	r := okReport()
	r.Raw = workload.RawStats{}
	r.Migrations.Completed, r.Migrations.Failed = 199, 1
	r.Writes.Unrecovered = 2
	r.Invariants.LostWrites = 1
	r.Invariants.MaxWriteFenceMs = 10600
	r.Invariants.Samples = []string{"conv/c17: acknowledged post m42 absent at eu-west"}
	return r
}

func TestReportText(t *testing.T) {
	for name, r := range map[string]*Report{"report_ok.golden": okReport(), "report_fail.golden": badReport()} {
		var b bytes.Buffer
		r.Print(&b)
		golden(t, name, b.Bytes())
	}
	// An empty report (nothing migrated) prints without dividing by zero.
	var b bytes.Buffer
	(&Report{}).Print(&b)
	if !strings.Contains(b.String(), "0 first attempt (0.0%)") || !strings.Contains(b.String(), "OK: every invariant holds") {
		t.Errorf("empty report:\n%s", b.String())
	}
}

// TestReportJSON: the shape `cutover demo --json` writes, key for key
// (the legacy invariant keys included).
func TestReportJSON(t *testing.T) {
	b, err := json.MarshalIndent(okReport(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "report.json.golden", append(b, '\n'))
	var m map[string]map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"invariants", "migrations", "phases_ms", "raw", "setup", "validation", "writes"}; !slices.Equal(keys, want) {
		t.Errorf("top-level keys %v, want %v", keys, want)
	}
	for _, k := range []string{"lost_writes", "resurrected_deletes", "dual_authority_writes"} {
		if _, ok := m["invariants"][k]; !ok {
			t.Errorf("invariants lack %q", k)
		}
	}
	// Optional setup keys appear only when set.
	for _, k := range []string{"messages_store", "topology", "wan"} {
		if _, ok := m["setup"][k]; ok {
			t.Errorf("setup has %q unset", k)
		}
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Setup != okReport().Setup || back.PhasesMs != okReport().PhasesMs {
		t.Errorf("round trip: %v\n%+v", err, back.Setup)
	}
}

func TestFailures(t *testing.T) {
	if bad := okReport().Failures(); len(bad) != 0 {
		t.Fatalf("a clean report fails: %v", bad)
	}
	got := badReport().Failures()
	want := []string{
		"1 lost acknowledged writes",
		"write fence 10600 ms beyond the write-lock expiry 10000 ms + skew 500 ms",
		"1 migrations not completed",
		"2 unrecovered 423s",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("failures %q, want %q", got, want)
	}
	// Each cause on its own.
	for name, mod := range map[string]func(*Report){
		"invariant":   func(r *Report) { r.Invariants.OrphanedLocks = 1 },
		"incomplete":  func(r *Report) { r.Migrations.Completed-- },
		"unrecovered": func(r *Report) { r.Writes.Unrecovered = 1 },
		"user fence":  func(r *Report) { r.Invariants.MaxUserWriteFenceMs = 11000 },
	} {
		r := okReport()
		mod(r)
		if bad := r.Failures(); len(bad) != 1 {
			t.Errorf("%s: failures %q, want one", name, bad)
		}
	}
}

func TestPercentiles(t *testing.T) {
	if got := percentiles(nil); got != (Pct{}) {
		t.Errorf("no values: %+v", got)
	}
	v := make([]float64, 100)
	for i := range v {
		v[i] = float64(100 - i) // 100..1, unsorted
	}
	if got, want := percentiles(v), (Pct{Avg: 50.5, P50: 51, P75: 76, P99: 100, Max: 100}); got != want {
		t.Errorf("1..100: %+v, want %+v", got, want)
	}
}

// TestRunSmall runs a tiny demo (a few seconds): two conversations
// migrated under live traffic, a clean report, figures consistent with the
// options.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a small demo")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	o := Options{Conversations: 3, Cluster: 1, Clients: 2, Concurrency: 2, Seed: 7, BigSize: 20, Convergence: "fence", RawClients: 1}
	rep, err := Run(ctx, o, &out, io.Discard)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if bad := rep.Failures(); len(bad) != 0 {
		var b bytes.Buffer
		rep.Print(&b)
		t.Fatalf("failures %v\n%s", bad, b.String())
	}
	s, m := rep.Setup, rep.Migrations
	if s.Conversations != 3 || s.Cluster != 1 || s.Source == "" || s.Target == "" || s.Source == s.Target || s.Convergence != "fence" || s.Messages < 3 {
		t.Errorf("setup %+v", s)
	}
	if m.Total != 3 || m.Completed != 3 || m.Failed != 0 {
		t.Errorf("migrations %+v", m)
	}
	if rep.Validation.Runs < 3 || rep.Validation.Failures != 0 {
		t.Errorf("validation %+v", rep.Validation)
	}
	if rep.PhasesMs.Total.Max <= 0 || rep.PhasesMs.Total.Max < rep.PhasesMs.Total.P50 {
		t.Errorf("phases %+v", rep.PhasesMs.Total)
	}
	if rep.Writes.Acknowledged > rep.Writes.Attempted {
		t.Errorf("writes %+v", rep.Writes)
	}
	for _, milestone := range []string{"cutover demo: embedded JetStream", "seeding 3 conversations", "tenant move: 3 conversations", "finished in"} {
		if !strings.Contains(out.String(), milestone) {
			t.Errorf("stdout lacks %q:\n%s", milestone, out.String())
		}
	}
}

// TestFailLine: the report's last line names each failure apart; printed
// as a Go slice, "1 lost acknowledged writes write fence 10600 ms ..."
// ran two failures together.
func TestFailLine(t *testing.T) {
	var b bytes.Buffer
	badReport().Print(&b)
	want := "FAIL: " + strings.Join(badReport().Failures(), "; ") + "\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("last line of\n%s\nwant %q", b.String(), want)
	}
}

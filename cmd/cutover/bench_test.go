package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBenchSuites runs every suite of issue 7 at a tiny size and checks
// outcomes only: the JSON shape, completed migrations, the direction of
// the ratios that the design guarantees. No wall-clock time is asserted.
func TestBenchSuites(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bench suites")
	}
	suites := []struct {
		args  []string
		check func(t *testing.T, v map[string]any)
	}{
		{[]string{"reads", "--conversations", "4"}, func(t *testing.T, v map[string]any) {
			if r := v["ratio"].(float64); r <= 1 {
				t.Errorf("reads ratio %v, want > 1 (the holder cache saves reads)", r)
			}
			allCompleted(t, v["ours"])
			allCompleted(t, v["baseline"])
		}},
		{[]string{"fence", "--warmup=false", "--conversations", "3", "--big", "40", "--clients", "2", "--concurrency", "3"}, func(t *testing.T, v map[string]any) {
			allCompleted(t, v["ours"])
			bs, ok := v["baseline"].([]any)
			if !ok || len(bs) != 3 {
				t.Fatalf("baseline: want 3 strategies, got %v", v["baseline"])
			}
			for _, b := range bs {
				allCompleted(t, b)
				m := b.(map[string]any)
				if _, ok := m["write_blocked_ms"].(map[string]any)["40"]; !ok {
					t.Errorf("%v: no figures for the 40-message class", m["strategy"])
				}
				if _, ok := m["delete_blocked_ms"]; !ok {
					t.Errorf("%v: no delete_blocked_ms", m["strategy"])
				}
			}
		}},
		{[]string{"fence", "--warmup=false", "--supercluster", "--wan", "rtt=20ms", "--strategies", "protocol,stop-and-copy", "--conversations", "3", "--big", "40", "--huge", "1", "--huge-size", "200", "--clients", "2", "--concurrency", "3"}, func(t *testing.T, v map[string]any) {
			allCompleted(t, v["ours"])
			d := v["details"].(map[string]any)
			if m, _ := d["physical_min_ms"].(float64); m < 20 {
				t.Errorf("physical_min_ms %v, want >= the 20 ms rtt", d["physical_min_ms"])
			}
			if r, ok := d["ratio_to_min"].(map[string]any)["200"].(float64); !ok || r <= 0 {
				t.Errorf("ratio_to_min of the huge class: %v", d["ratio_to_min"])
			}
		}},
		{[]string{"throughput", "--runs", "2", "--conversations", "3", "--big", "40", "--clients", "1", "--concurrency", "3"}, func(t *testing.T, v map[string]any) {
			allCompleted(t, v["ours"])
			ours := v["ours"].(map[string]any)
			// Two runs, each in the details; ours is the lower one (the
			// median of an even count is the lower middle one).
			d, _ := v["details"].(map[string]any)
			runs, _ := d["runs"].([]any)
			if len(runs) != 2 {
				t.Fatalf("details %v, want two runs", d)
			}
			m, _ := d["median_run"].(float64)
			if m != 1 && m != 2 {
				t.Fatalf("median_run %v", d["median_run"])
			}
			r0, r1 := runs[0].(map[string]any)["migrations_per_s"].(float64), runs[1].(map[string]any)["migrations_per_s"].(float64)
			if got := runs[int(m)-1].(map[string]any)["migrations_per_s"]; got != ours["migrations_per_s"] || got != min(r0, r1) {
				t.Errorf("ours %v, runs %v / %v, median_run %v: want ours the lower run", ours["migrations_per_s"], r0, r1, m)
			}
			if _, ok := ours["cpu"]; !ok {
				t.Error("no cpu figure")
			}
			// The split by operation adds up to the total, and a copy is
			// an export and an import.
			byOp, _ := ours["contract_requests_by_op"].(map[string]any)
			sum := 0.0
			for _, n := range byOp {
				sum += n.(float64)
			}
			if total, _ := ours["contract_requests_per_migration"].(float64); total <= 0 || math.Abs(sum-total) > 1e-9 || byOp["export"] == nil || byOp["import"] == nil {
				t.Errorf("contract_requests_by_op %v, contract_requests_per_migration %v", byOp, ours["contract_requests_per_migration"])
			}
			// Pages this small travel inline in the requests: none is
			// published to PAGES (a synced append each).
			if apm, _ := ours["appends_per_migration"].(map[string]any); apm["PAGES"] != 0.0 {
				t.Errorf("appends_per_migration %v: pages published to PAGES, want every page inline", apm)
			}
			// The ceilings: appends per second from many publishers, and
			// where the disk's flushes are readable (Linux, a real disk),
			// the rate they allow at this run's flushes per migration.
			fc, _ := ours["fsync_ceiling"].(map[string]any)
			if r, _ := fc["synced_appends_per_s"].(float64); r <= 0 || fc["migrations_per_s"].(float64) <= 0 {
				t.Errorf("fsync_ceiling %v", fc)
			}
			fps, _ := fc["disk_flushes_per_s"].(float64)
			if per, _ := ours["disk_flushes_per_migration"].(float64); fps > 0 && per > 0 {
				if got, _ := fc["disk_migrations_per_s"].(float64); math.Abs(got-fps/per) > 1e-6*got {
					t.Errorf("fsync_ceiling %v with disk_flushes_per_migration %v", fc, ours["disk_flushes_per_migration"])
				}
			}
			// The CPU ceiling: every core busy at this run's CPU per
			// migration.
			cc, _ := ours["cpu_ceiling"].(map[string]any)
			cores, _ := cc["cores"].(float64)
			if cpu, _ := ours["cpu_ms_per_migration"].(float64); cores != float64(runtime.GOMAXPROCS(0)) || cpu <= 0 ||
				math.Abs(cc["migrations_per_s"].(float64)-cores*1000/cpu) > 1e-6*cores*1000/cpu {
				t.Errorf("cpu_ceiling %v with cpu_ms_per_migration %v, GOMAXPROCS %d", cc, ours["cpu_ms_per_migration"], runtime.GOMAXPROCS(0))
			}
			// Every synced operation a migration waits on is timed.
			opMs, _ := ours["op_ms"].(map[string]any)
			for _, op := range []string{"routing_write", "event_append", "authority", "export", "import"} {
				if p, _ := opMs[op].(map[string]any); p["n"] == nil || p["n"].(float64) < 1 || p["avg"].(float64) <= 0 {
					t.Errorf("op_ms[%s] = %v (op_ms %v)", op, opMs[op], opMs)
				}
			}
			phases, _ := ours["phases_ms"].(map[string]any)
			for _, k := range []string{"pre_lock", "historical", "write_lock", "completion"} {
				if p, _ := phases[k].(map[string]any); p["n"] != 3.0 {
					t.Errorf("phases_ms[%s] = %v, want the 3 migrations", k, phases[k])
				}
			}
		}},
		{[]string{"throughput", "--cluster", "3", "--background-steps", "1", "--conversations", "3", "--big", "40", "--clients", "1", "--concurrency", "3"}, func(t *testing.T, v map[string]any) {
			allCompleted(t, v["ours"])
			if d, _ := v["durability"].(string); !strings.Contains(d, "R3") {
				t.Errorf("durability %q, want the R3 cluster", d)
			}
		}},
		{[]string{"copy", "--conversations", "1", "--messages", "120"}, func(t *testing.T, v map[string]any) {
			if r := v["ratio"].(float64); r <= 0 {
				t.Errorf("copy ratio %v, want > 0", r)
			}
		}},
		{[]string{"reverse", "--messages", "300", "--after", "0s", "--changes", "3"}, func(t *testing.T, v map[string]any) {
			d, _ := v["details"].(map[string]any)
			for _, k := range []string{"records_copied_incremental", "records_copied_full", "ratio", "move_back_ms_incremental",
				"move_back_ms_full", "write_blocked_ms_incremental", "write_blocked_ms_full"} {
				if _, ok := d[k].(float64); !ok {
					t.Errorf("details: no %q in %v", k, d)
				}
			}
			inc, full := d["records_copied_incremental"].(float64), d["records_copied_full"].(float64)
			if full < 300 || inc > 10 || inc < 1 {
				t.Errorf("records copied back: %v incremental, %v full; want the 5 changes (+ the token's page) against the whole history", inc, full)
			}
		}},
		{[]string{"validate", "--sizes", "100,2000"}, func(t *testing.T, v map[string]any) {
			sz, _ := v["sizes"].([]any)
			if len(sz) != 2 {
				t.Fatalf("sizes: %v", v["sizes"])
			}
			for _, s := range sz {
				if m := s.(map[string]any); m["equal"] != true {
					t.Errorf("%v messages: source and target compared unequal", m["messages"])
				}
			}
		}},
	}
	for _, s := range suites {
		t.Run(s.args[0], func(t *testing.T) {
			t.Parallel()
			code, out, errs := run(t, append([]string{"bench", s.args[0], "--json"}, s.args[1:]...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
			for _, k := range []string{"suite", "durability", "ours", "baseline", "ratio", "target"} {
				if _, ok := v[k]; !ok {
					t.Fatalf("missing %q in %s", k, out)
				}
			}
			if v["suite"] != s.args[0] || v["durability"] == "" {
				t.Fatalf("suite %v, durability %v", v["suite"], v["durability"])
			}
			s.check(t, v)
		})
	}
}

// allCompleted checks that a figure's migrations all completed.
func allCompleted(t *testing.T, fig any) {
	t.Helper()
	m, ok := fig.(map[string]any)
	if !ok {
		t.Fatalf("figure is %T", fig)
	}
	if m["migrations"] == nil || m["migrations"] != m["completed"] || m["migrations"].(float64) < 1 {
		t.Errorf("migrations %v, completed %v", m["migrations"], m["completed"])
	}
}

// TestBenchProfiles checks --cpuprofile/--memprofile write pprof files,
// --trace an execution trace, and that a missing file name is a usage
// error that runs nothing.
func TestBenchProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem, tr := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "heap.pprof"), filepath.Join(dir, "run.trace")
	code, _, errs := run(t, "bench", "--cpuprofile", cpu, "--memprofile="+mem, "--trace", tr, "validate", "--json", "--sizes", "100")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, f := range []string{cpu, mem, tr} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("profile %s: %v", f, err)
		}
	}
	if b, err := os.ReadFile(tr); err != nil || !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Errorf("trace %s does not start with an execution trace's header: %.20q %v", tr, b, err)
	}
	if code, _, errs := run(t, "bench", "--trace", filepath.Join(dir, "missing", "run.trace"), "validate", "--json", "--sizes", "100"); code == 0 || !strings.Contains(errs, "trace") {
		t.Errorf("--trace into a missing directory: exit %d, %s", code, errs)
	}
	if code, _, _ := run(t, "bench", "--trace"); code != 2 {
		t.Errorf("--trace without a file: exit %d, want 2", code)
	}
	if code, _, _ := run(t, "bench", "--cpuprofile"); code != 2 {
		t.Errorf("--cpuprofile without a file: exit %d, want 2", code)
	}
	for _, bad := range [][]string{{"--cluster", "2"}, {"--background-steps", "-1"}, {"--cluster", "3", "--lazy-fsync"}, {"--runs", "0"}, {"--runs", "-2"}} {
		if code, _, _ := run(t, append([]string{"bench", "throughput"}, bad...)...); code != 2 {
			t.Errorf("bench throughput %v: exit %d, want 2", bad, code)
		}
	}
	if code, _, _ := run(t, "bench", "--memprofile=", "validate"); code != 2 {
		t.Errorf("--memprofile= : exit %d, want 2", code)
	}
}

package metrics

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The middleware counts responses by status and 423s by what refused them,
// read from the API's error body, without changing the response.
func TestMetricsMiddleware(t *testing.T) {
	m := New()
	h := m.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/locked":
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusLocked)
			_, _ = io.WriteString(w, `{"error":{"code":"locked","message":"resource locked (write lock); retry later","lock":"write lock","retry_after_ms":3000}}`)
		case "/secondary":
			w.WriteHeader(http.StatusLocked)
			_, _ = io.WriteString(w, `{"error":{"code":"locked","lock":"locked secondary"}}`)
		case "/garbled":
			w.WriteHeader(http.StatusLocked)
			_, _ = io.WriteString(w, `not json`)
		default:
			_, _ = io.WriteString(w, "ok")
		}
	}))
	for _, p := range []string{"/locked", "/locked", "/secondary", "/garbled", "/"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		if p == "/locked" && (rec.Code != http.StatusLocked || rec.Header().Get("Retry-After") != "3" || rec.Body.Len() == 0) {
			t.Fatalf("response changed: %d %v %q", rec.Code, rec.Header(), rec.Body.String())
		}
	}
	for lock, want := range map[string]float64{"write-lock": 2, "locked-secondary": 1, "other": 1, "fence-write": 0} {
		if got := value(t, m.rejected.WithLabelValues(lock)); got != want {
			t.Errorf("423 %s: %v, want %v", lock, got, want)
		}
	}
	if got := value(t, m.responses.WithLabelValues("423")); got != 4 {
		t.Errorf("423 responses: %v", got)
	}
	if got := value(t, m.responses.WithLabelValues("200")); got != 1 {
		t.Errorf("200 responses: %v", got)
	}
}

func TestMetricsObserveEvents(t *testing.T) {
	m := New()
	for _, e := range []*events.Envelope{
		{Body: events.Completed{Figures: events.Figures{PreLockMs: 1100, HistoricalMs: 40, WriteLockMs: 30, CutoverMs: 5, TotalMs: 1200}}, State: &events.State{}},
		// A tenant fan-out's Completed is not a migration's.
		{Body: events.Completed{Figures: events.Figures{TotalMs: 9000}}, State: &events.State{Fanout: &events.TenantState{}}},
		{Body: events.Validated{OK: false, Detail: "messages: slice 2026-01-01T00:00:00Z: count 3 at source, 2 at target"}},
		{Body: events.Validated{OK: true}},
		{Body: events.RolledBack{Reason: "validation failed: messages: ..."}},
		{Body: events.RolledBack{Reason: "3 transient failures in historical-copy: timeout"}},
		{Body: events.Failed{Reason: "cancelled"}},
		// Steering: an operator's pause of a tenant move counts once, not
		// once more per child it pauses; its brake counts as a brake.
		{Body: events.Paused{Reason: "peak"}, State: &events.State{Fanout: &events.TenantState{}}},
		{Body: events.Paused{ByParent: true}, State: &events.State{Parent: "t"}},
		{Body: events.Resumed{}, State: &events.State{}},
		{Body: events.Throttled{Concurrency: 2, Auto: true}, State: &events.State{Fanout: &events.TenantState{}}},
		{Body: events.Throttled{Rate: 10}, State: &events.State{Parent: "t"}},
		{Body: events.Throttled{Rate: 10}, State: &events.State{}},
	} {
		m.Observe(e)
	}
	for action, want := range map[string]float64{"paused": 1, "resumed": 1, "brake": 1, "throttled": 1} {
		if got := value(t, m.steering.WithLabelValues(action)); got != want {
			t.Errorf("steering %s: %v, want %v", action, got, want)
		}
	}
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == MetricPhaseDuration && len(f.GetMetric()) != 5 {
			t.Errorf("phase series: %d", len(f.GetMetric()))
		}
		if f.GetName() == MetricWriteLock && f.GetMetric()[0].GetHistogram().GetSampleCount() != 1 {
			t.Errorf("write-lock samples: %v", f.GetMetric()[0].GetHistogram().GetSampleCount())
		}
	}
	if got := value(t, m.migrations.WithLabelValues("completed")); got != 1 {
		t.Errorf("completed: %v", got)
	}
	if got := value(t, m.validations.WithLabelValues("count")); got != 1 {
		t.Errorf("validation count failures: %v", got)
	}
	for reason, want := range map[string]float64{"validation": 1, "transient-failures": 1, "cancelled": 0} {
		if got := value(t, m.rollbacks.WithLabelValues(reason)); got != want {
			t.Errorf("rollbacks %s: %v, want %v", reason, got, want)
		}
	}
}

func TestReasonClasses(t *testing.T) {
	for reason, want := range map[string]string{
		"validation failed: x": "validation", "cancelled: by op": "cancelled", "force-released": "force-released",
		"write lock expired": "write-lock-expired", "lock expired": "lock-expired", "pre-lock lost": "lock-lost",
		"lock lost: kvrouting: lock token mismatch": "lock-lost", "3 transient failures in delta-copy: x": "transient-failures", "?": "other",
		"write-block budget 250ms spent (writes blocked 300ms)": "write-block-budget", "paused past the lock's bound: x": "paused-past-bound",
	} {
		if got := RollbackClass(reason); got != want {
			t.Errorf("RollbackClass(%q) = %q, want %q", reason, got, want)
		}
	}
	for detail, want := range map[string]string{
		"validation budget 5s exceeded":                  "budget",
		"messages: digests: source x, target y":          "read-error",
		"messages: slice s: 3 records missing at target": "missing",
		"messages: slice s: 2 extra records at target":   "extra",
		"messages: slice s: content differs":             "content",
	} {
		if got := ValidationClass(detail); got != want {
			t.Errorf("ValidationClass(%q) = %q, want %q", detail, got, want)
		}
	}
}

// value reads a counter.
func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

// ObserveQueued counts the write queue's outcomes (every outcome present
// at 0 from the start) and observes the waits of applied and timed-out
// writes, not of overflows.
func TestObserveQueued(t *testing.T) {
	m := New()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, o := range []string{"applied", "timeout", "overflow"} {
		if !strings.Contains(rec.Body.String(), MetricQueuedWrites+`{outcome="`+o+`"} 0`) {
			t.Fatalf("%s{outcome=%q} not exported at 0", MetricQueuedWrites, o)
		}
	}
	m.ObserveQueued("applied", 30*time.Millisecond)
	m.ObserveQueued("timeout", 2*time.Second)
	m.ObserveQueued("overflow", 0)
	var c dto.Metric
	if err := m.queued.WithLabelValues("applied").Write(&c); err != nil || c.GetCounter().GetValue() != 1 {
		t.Fatalf("applied %v %v", c.GetCounter().GetValue(), err)
	}
	var h dto.Metric
	if err := m.queueWait.Write(&h); err != nil {
		t.Fatal(err)
	}
	if n := h.GetHistogram().GetSampleCount(); n != 2 {
		t.Fatalf("%d waits observed, want 2 (overflows have none)", n)
	}
}

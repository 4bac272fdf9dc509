// Package metrics is a cutover process's Prometheus registry: migration phase
// durations and rollbacks from the events, HTTP responses and 423s from the
// API, routing-cache counters from the resolvers, and the SDK clients' 423
// outcomes (names listed in docs/operations.md).
package metrics

import (
	"bytes"
	"context"
	"encoding/json"

	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/eventlog"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/httproute"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metric names, listed in docs/operations.md.
const (
	MetricPhaseDuration   = "cutover_migration_phase_duration_seconds"
	MetricWriteLock       = "cutover_migration_write_lock_seconds"
	MetricMigrations      = "cutover_migrations_total"
	MetricRollbacks       = "cutover_migration_rollbacks_total"
	MetricValidationFails = "cutover_migration_validation_failures_total"
	MetricSteering        = "cutover_migration_steering_total"
	MetricHTTPResponses   = "cutover_http_responses_total"
	MetricHTTPRejected    = "cutover_http_rejected_423_total"
	MetricQueuedWrites    = "cutover_api_queued_writes_total"
	MetricQueueWait       = "cutover_api_queued_wait_seconds"
	MetricCacheHits       = "cutover_routing_cache_hits_total"
	MetricCacheMisses     = "cutover_routing_cache_misses_total"
	MetricReadThroughs    = "cutover_routing_read_throughs_total"
	MetricMirrorSkips     = "cutover_routing_mirror_skips_total"
	MetricClientRejected  = "cutover_client_423_rejected_total"
	MetricClientRecovered = "cutover_client_423_recovered_total"
	MetricClientUnrecov   = "cutover_client_423_unrecovered_total"
)

// Closed label sets: reasons and lock names are classified so that free-form
// error text never becomes a label value (bounded cardinality).
var (
	rollbackReasons = []string{"validation", "cancelled", "force-released", "write-lock-expired", "lock-expired", "lock-lost", "transient-failures",
		"write-block-budget", "paused-past-bound", "other"}
	steeringActions   = []string{"paused", "resumed", "throttled", "brake"}
	validationReasons = []string{"budget", "count", "missing", "extra", "content", "read-error", "other"}
	lockLabels        = []string{"write-lock", "locked-secondary", "not-authoritative", "fence-write", "moved", "fence-hard-delete", "other"}
	outcomes          = []string{string(events.StatusCompleted), string(events.StatusFailed), string(events.StatusDropped)}
)

// Metrics is the process's Prometheus registry, served on /metrics. Its
// collectors are fed by FollowEvents (migration events), Middleware (HTTP
// responses) and WatchResolvers (routing caches). Safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	phase       *prometheus.HistogramVec
	writeLock   prometheus.Histogram
	migrations  *prometheus.CounterVec
	rollbacks   *prometheus.CounterVec
	validations *prometheus.CounterVec
	steering    *prometheus.CounterVec
	responses   *prometheus.CounterVec
	rejected    *prometheus.CounterVec
	queued      *prometheus.CounterVec
	queueWait   prometheus.Histogram

	routing *routingCollector
	clients *clientCollector
}

// New returns a registry with every collector registered (and every closed
// label value present at 0).
func New() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		reg: reg,
		// Buckets span the dev timings (seconds) and the production ones
		// (paper 001 Table 6: hours for the historical copy).
		phase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricPhaseDuration,
			Help:    "Duration of each phase of completed migrations (paper 001 §6.2): pre-lock, historical-copy, write-lock, cutover, total.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800},
		}, []string{"phase"}),
		writeLock: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    MetricWriteLock,
			Help:    "Time completed migrations held the write lock: the window in which users' writes get 423 (paper 001 §4.1.3).",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
		}),
		migrations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricMigrations, Help: "Migrations (not tenant fan-outs) that ended, by outcome.",
		}, []string{"outcome"}),
		rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricRollbacks, Help: "Migration rollbacks (paper 001 Algorithm 1 line 16), by reason class.",
		}, []string{"reason"}),
		validations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricValidationFails, Help: "Failed pre-cutover validations (paper 001 §5.3), by reason class.",
		}, []string{"reason"}),
		steering: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricSteering, Help: "Operators' and the brake's steering of migrations and tenant moves, by action: paused, resumed, throttled (an operator's throttle), brake (a tenant move halved its concurrency on its write-lock p99).",
		}, []string{"action"}),
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricHTTPResponses, Help: "HTTP responses of the user-facing API, by status code.",
		}, []string{"code"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricHTTPRejected, Help: "Requests the API refused with 423 Locked, by what refused them. Whether the client recovered is only known client-side (" + MetricClientRecovered + ").",
		}, []string{"lock"}),
		queued: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricQueuedWrites, Help: "Writes the API parked behind a write lock or fence, by outcome: applied (run again after the wait), timeout (the 423 went out after --queue-writes), overflow (the queue was full; the 423 went out at once).",
		}, []string{"outcome"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    MetricQueueWait,
			Help:    "How long parked writes waited (applied and timed out).",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10},
		}),
		routing: &routingCollector{},
		clients: &clientCollector{},
	}
	for _, o := range []string{httproute.QueueApplied, httproute.QueueTimeout, httproute.QueueOverflow} {
		m.queued.WithLabelValues(o)
	}
	for _, r := range rollbackReasons {
		m.rollbacks.WithLabelValues(r)
	}
	for _, r := range validationReasons {
		m.validations.WithLabelValues(r)
	}
	for _, l := range lockLabels {
		m.rejected.WithLabelValues(l)
	}
	for _, o := range outcomes {
		m.migrations.WithLabelValues(o)
	}
	for _, a := range steeringActions {
		m.steering.WithLabelValues(a)
	}
	reg.MustRegister(m.phase, m.writeLock, m.migrations, m.rollbacks, m.validations, m.steering, m.responses, m.rejected, m.queued, m.queueWait, m.routing, m.clients)
	return m
}

// ObserveQueued counts a parked write's outcome and its wait
// (httproute.QueueObserver).
func (m *Metrics) ObserveQueued(outcome string, wait time.Duration) {
	m.queued.WithLabelValues(outcome).Inc()
	if outcome != httproute.QueueOverflow {
		m.queueWait.Observe(wait.Seconds())
	}
}

// Handler serves the registry.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// --- migration events ---

// Observe folds one migration event into the collectors.
func (m *Metrics) Observe(e *events.Envelope) {
	switch b := e.Body.(type) {
	case events.Paused:
		if !b.ByParent { // the children of a paused tenant move: one pause
			m.steering.WithLabelValues("paused").Inc()
		}
	case events.Resumed:
		if !b.ByParent {
			m.steering.WithLabelValues("resumed").Inc()
		}
	case events.Throttled:
		if b.Auto {
			m.steering.WithLabelValues("brake").Inc()
		} else if e.State == nil || e.State.Fanout != nil || e.State.Parent == "" {
			m.steering.WithLabelValues("throttled").Inc() // not a tenant's share passed to a child
		}
	}
	if e.State != nil && e.State.Fanout != nil {
		return // a tenant fan-out's figures are not a migration's
	}
	switch b := e.Body.(type) {
	case events.Completed:
		f := b.Figures
		for phase, ms := range map[string]int64{"pre-lock": f.PreLockMs, "historical-copy": f.HistoricalMs,
			"write-lock": f.WriteLockMs, "cutover": f.CutoverMs, "total": f.TotalMs} {
			m.phase.WithLabelValues(phase).Observe(float64(ms) / 1e3)
		}
		m.writeLock.Observe(float64(f.WriteLockMs) / 1e3)
		m.migrations.WithLabelValues(string(events.StatusCompleted)).Inc()
	case events.Failed:
		m.migrations.WithLabelValues(string(events.StatusFailed)).Inc()
	case events.Dropped:
		m.migrations.WithLabelValues(string(events.StatusDropped)).Inc()
	case events.RolledBack:
		m.rollbacks.WithLabelValues(RollbackClass(b.Reason)).Inc()
	case events.Validated:
		if !b.OK {
			m.validations.WithLabelValues(ValidationClass(b.Detail)).Inc()
		}
	}
}

// RollbackClass maps a rollback reason (see orchestrator/engine.go) onto
// rollbackReasons.
func RollbackClass(reason string) string {
	switch {
	case strings.HasPrefix(reason, "validation failed"):
		return "validation"
	case strings.HasPrefix(reason, "cancelled"):
		return "cancelled"
	case strings.HasPrefix(reason, "force-released"):
		return "force-released"
	case strings.HasPrefix(reason, "write lock expired"):
		return "write-lock-expired"
	case strings.HasPrefix(reason, "lock expired"):
		return "lock-expired"
	case strings.HasPrefix(reason, "lock lost"), strings.HasPrefix(reason, "pre-lock lost"):
		return "lock-lost"
	case strings.Contains(reason, "transient failures"):
		return "transient-failures"
	case strings.HasPrefix(reason, "write-block budget"):
		return "write-block-budget"
	case strings.HasPrefix(reason, "paused past"):
		return "paused-past-bound"
	}
	return "other"
}

// ValidationClass maps a Validated detail (orchestrator/validate.go) onto
// validationReasons; the first matching class wins.
func ValidationClass(detail string) string {
	switch {
	case strings.Contains(detail, "budget"):
		return "budget"
	case strings.Contains(detail, "digests:"):
		return "read-error"
	case strings.Contains(detail, "missing at target"):
		return "missing"
	case strings.Contains(detail, "extra records"):
		return "extra"
	case strings.Contains(detail, "count "):
		return "count"
	case strings.Contains(detail, "content differs"):
		return "content"
	}
	return "other"
}

// FollowEvents feeds every event of MIGRATION_EVENTS, from sequence 1, into
// the collectors until ctx ends, so the histograms describe the stream's
// history as the projector's read models do. A stream that does not exist
// yet is waited for. It returns nil when ctx ends.
func (m *Metrics) FollowEvents(ctx context.Context, js jetstream.JetStream, log *slog.Logger) error {
	l := eventlog.New(nil, js)
	var last uint64
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		err := l.Follow(ctx, "", last+1, func(e eventlog.Entry) error {
			last = e.Seq
			if e.Err == nil {
				m.Observe(e.Event)
			}
			return nil
		})
		if ctx.Err() != nil {
			return nil
		}
		log.Debug("metrics: following the events stream", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
	}
}

// --- HTTP ---

// Middleware counts h's responses by status code and its 423s by what
// refused them (the "lock" field of the API's error body). Mount it around
// the API handler, not around /metrics.
func (m *Metrics) Middleware(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		code := sw.status
		if code == 0 {
			code = http.StatusOK
		}
		m.responses.WithLabelValues(strconv.Itoa(code)).Inc()
		if code == http.StatusLocked {
			m.rejected.WithLabelValues(lockLabel(sw.body.Bytes())).Inc()
		}
	})
}

// statusWriter records the status and, for a 423, the start of the body.
type statusWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

// lockBodyLimit bounds how much of a 423 body is kept to find its lock.
const lockBodyLimit = 1024

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.status == http.StatusLocked && w.body.Len() < lockBodyLimit {
		w.body.Write(p[:min(len(p), lockBodyLimit-w.body.Len())])
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// lockLabel maps a 423 body's lock ("write lock", "locked secondary", "not
// authoritative", "fence write", ...; docs/api.md) onto lockLabels.
func lockLabel(body []byte) string {
	var b struct {
		Error struct {
			Lock string `json:"lock"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "other"
	}
	l := strings.ReplaceAll(b.Error.Lock, " ", "-")
	for _, known := range lockLabels {
		if l == known {
			return l
		}
	}
	return "other"
}

// --- routing caches ---

// WatchResolvers exposes the cache-tier hits and misses and the
// read-throughs of rs's resolvers. Calling it again adds more resolvers.
func (m *Metrics) WatchResolvers(rs map[string]*kvrouting.Resolver) {
	m.routing.mu.Lock()
	defer m.routing.mu.Unlock()
	for region, r := range rs {
		m.routing.mu.resolvers = append(m.routing.mu.resolvers, regionResolver{region: region, r: r})
	}
}

type regionResolver struct {
	region string
	r      *kvrouting.Resolver
}

// routingCollector reads the resolvers' own counters at scrape time.
type routingCollector struct {
	mu struct {
		sync.Mutex
		resolvers []regionResolver
	}
}

var (
	descCacheHits    = prometheus.NewDesc(MetricCacheHits, "Routing-document cache hits, per region and cache tier.", []string{"region", "tier"}, nil)
	descCacheMisses  = prometheus.NewDesc(MetricCacheMisses, "Routing-document cache misses, per region and cache tier.", []string{"region", "tier"}, nil)
	descReadThroughs = prometheus.NewDesc(MetricReadThroughs, "Resolutions that read through to the routing stream leader because of an active lock (paper 000 §3.2).", []string{"region"}, nil)
	descMirrorSkips  = prometheus.NewDesc(MetricMirrorSkips, "Misses that skipped the region's read replica because it exceeded the staleness bound.", []string{"region"}, nil)
)

// Describe implements prometheus.Collector.
func (c *routingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCacheHits
	ch <- descCacheMisses
	ch <- descReadThroughs
	ch <- descMirrorSkips
}

// Collect implements prometheus.Collector.
func (c *routingCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	rs := append([]regionResolver(nil), c.mu.resolvers...)
	c.mu.Unlock()
	for _, x := range rs {
		for _, t := range x.r.Config().Tiers {
			hits, misses := t.Hits()
			ch <- prometheus.MustNewConstMetric(descCacheHits, prometheus.CounterValue, float64(hits), x.region, t.Name())
			ch <- prometheus.MustNewConstMetric(descCacheMisses, prometheus.CounterValue, float64(misses), x.region, t.Name())
		}
		rt, skips := x.r.ReadThroughs()
		ch <- prometheus.MustNewConstMetric(descReadThroughs, prometheus.CounterValue, float64(rt), x.region)
		ch <- prometheus.MustNewConstMetric(descMirrorSkips, prometheus.CounterValue, float64(skips), x.region)
	}
}

// --- client SDK ---

// WatchClient exposes an SDK client's 423 counters (rejected, recovered,
// unrecovered; paper 001 §6.2) under the label client=name: only a client
// knows whether a rejected operation later succeeded. stats is typically
// (*client.Client).Stats.
func (m *Metrics) WatchClient(name string, stats func() client.Stats) {
	m.clients.mu.Lock()
	defer m.clients.mu.Unlock()
	m.clients.mu.clients = append(m.clients.mu.clients, namedClient{name: name, stats: stats})
}

type namedClient struct {
	name  string
	stats func() client.Stats
}

type clientCollector struct {
	mu struct {
		sync.Mutex
		clients []namedClient
	}
}

var (
	descClientRejected  = prometheus.NewDesc(MetricClientRejected, "423 responses an SDK client received.", []string{"client"}, nil)
	descClientRecovered = prometheus.NewDesc(MetricClientRecovered, "Operations that got a 423 and later succeeded (delayed, not lost).", []string{"client"}, nil)
	descClientUnrecov   = prometheus.NewDesc(MetricClientUnrecov, "Operations still refused at the SDK's retry threshold: user-visible errors.", []string{"client"}, nil)
)

// Describe implements prometheus.Collector.
func (c *clientCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descClientRejected
	ch <- descClientRecovered
	ch <- descClientUnrecov
}

// Collect implements prometheus.Collector.
func (c *clientCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	cs := append([]namedClient(nil), c.mu.clients...)
	c.mu.Unlock()
	for _, x := range cs {
		s := x.stats()
		ch <- prometheus.MustNewConstMetric(descClientRejected, prometheus.CounterValue, float64(s.Rejected423), x.name)
		ch <- prometheus.MustNewConstMetric(descClientRecovered, prometheus.CounterValue, float64(s.Recovered), x.name)
		ch <- prometheus.MustNewConstMetric(descClientUnrecov, prometheus.CounterValue, float64(s.Unrecovered), x.name)
	}
}

// --- wiring ---

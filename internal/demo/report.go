package demo

import (
	"fmt"
	"io"
	"strings"

	"github.com/cutover/cutover/internal/check"
	"github.com/cutover/cutover/internal/workload"
)

// Report is what `cutover demo` prints and writes with --json.
type Report struct {
	Setup struct {
		Conversations int     `json:"conversations"`
		Messages      int     `json:"messages_seeded"`
		Cluster       int     `json:"nats_nodes"`
		Durability    string  `json:"durability"`
		Source        string  `json:"source"`
		Target        string  `json:"target"`
		DurationS     float64 `json:"duration_s"`
		// Convergence is Phase 1's wait (fence or ttl) and ResolverTTLMs
		// the services' routing-cache TTL.
		Convergence   string  `json:"convergence"`
		ResolverTTLMs float64 `json:"resolver_ttl_ms"`
		// QueueWritesMs is how long the API parks a write behind a lock
		// (0: no queueing).
		QueueWritesMs float64 `json:"queue_writes_ms"`
		// Messages says where the messages service keeps its records when
		// not on Pebble (--postgres).
		MessagesStore string `json:"messages_store,omitempty"`
		// Topology and WAN are set with --supercluster only.
		Topology string `json:"topology,omitempty"`
		WAN      string `json:"wan,omitempty"`
	} `json:"setup"`
	Migrations struct {
		Total        int `json:"total"`
		Completed    int `json:"completed"`
		FirstAttempt int `json:"first_attempt"`
		RolledBack   int `json:"rolled_back"`
		Failed       int `json:"failed"`
	} `json:"migrations"`
	PhasesMs struct {
		PreLock        Pct `json:"pre_lock"`
		HistoricalCopy Pct `json:"historical_copy"`
		WriteLock      Pct `json:"write_lock"`
		Cutover        Pct `json:"cutover"`
		Total          Pct `json:"total"`
	} `json:"phases_ms"`
	Writes struct {
		Attempted    int64 `json:"attempted"`
		Acknowledged int64 `json:"acknowledged"`
		Rejected423  int64 `json:"rejected_423"`
		Recovered    int64 `json:"recovered"`
		Unrecovered  int64 `json:"unrecovered"`
		Failed       int64 `json:"failed_other"`
		// FailedBy breaks failed_other down by operation and answer.
		FailedBy   map[string]int64 `json:"failed_by,omitempty"`
		MaxFenceMs float64          `json:"max_client_fence_ms"`
		Reads      int64            `json:"reads"`
		// QueuedServerSide counts the writes (SDK and raw) the API parked
		// behind a write lock or fence instead of answering 423.
		QueuedServerSide int64 `json:"queued_server_side"`
	} `json:"writes"`
	// Raw are the plain HTTP clients' outcomes (--raw-clients).
	Raw        workload.RawStats `json:"raw"`
	Validation struct {
		Runs     int `json:"runs"`
		Failures int `json:"failures"`
	} `json:"validation"`
	Invariants check.Invariants `json:"invariants"`
}

// Failures lists every failed invariant, incomplete migration and
// unrecovered 423.
func (r *Report) Failures() []string {
	bad := r.Invariants.Failures()
	if n := r.Migrations.Total - r.Migrations.Completed; n != 0 {
		bad = append(bad, fmt.Sprintf("%d migrations not completed", n))
	}
	if r.Writes.Unrecovered != 0 {
		bad = append(bad, fmt.Sprintf("%d unrecovered 423s", r.Writes.Unrecovered))
	}

	return bad
}

// Print writes the report as text.
func (r *Report) Print(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	s := r.Setup
	p("\n== cutover demo: %d conversations (%d messages) %s → %s, %d NATS node(s), %s, %.1f s", s.Conversations, s.Messages, s.Source, s.Target, s.Cluster, s.Durability, s.DurationS)
	m := r.Migrations
	p("migrations: %d total, %d completed, %d first attempt (%.1f%%), %d rolled back, %d failed", m.Total, m.Completed, m.FirstAttempt, 100*float64(m.FirstAttempt)/float64(max(1, m.Total)), m.RolledBack, m.Failed)
	p("\nper-phase durations (paper 001 Table 6 shape), milliseconds")
	p("  %-22s %9s %9s %9s %9s %9s", "metric", "avg", "p50", "p75", "p99", "max")
	row := func(name string, q Pct) {
		p("  %-22s %9.1f %9.1f %9.1f %9.1f %9.1f", name, q.Avg, q.P50, q.P75, q.P99, q.Max)
	}
	row("Total duration", r.PhasesMs.Total)
	row("Phase 1 (pre-lock)", r.PhasesMs.PreLock)
	row("Phase 2 (hist. copy)", r.PhasesMs.HistoricalCopy)
	row("Phase 3 (write lock)", r.PhasesMs.WriteLock)
	row("Phase 4 (cutover)", r.PhasesMs.Cutover)
	wr := r.Writes
	p("\nlive traffic: %d writes attempted, %d acknowledged, %d reads; 423: %d rejected, %d writes recovered, %d unrecovered; %d other failures; longest client-felt fence %.0f ms",
		wr.Attempted, wr.Acknowledged, wr.Reads, wr.Rejected423, wr.Recovered, wr.Unrecovered, wr.Failed, wr.MaxFenceMs)
	p("server-side queueing (%.0f ms): %d writes parked instead of a 423", r.Setup.QueueWritesMs, wr.QueuedServerSide)
	if rw := r.Raw; rw.WritesAttempted > 0 {
		p("raw HTTP clients (never retry): %d writes attempted, %d acknowledged (%d after a wait in the queue), %d saw 423 (%d of them \"moved\"), %d other failures",
			rw.WritesAttempted, rw.Acknowledged, rw.Queued, rw.Saw423, rw.SawMoved, rw.FailedOther)
	}
	p("validation: %d runs, %d failures", r.Validation.Runs, r.Validation.Failures)
	p("\ninvariants (checked from acknowledged client operations, the stores and the routing revisions, not the engine):")
	r.Invariants.Print(w)
	if bad := r.Failures(); len(bad) == 0 {
		p("\nOK: every invariant holds")
	} else {
		p("\nFAIL: %s", strings.Join(bad, "; "))
	}
}

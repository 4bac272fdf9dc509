package chaos

import (
	"fmt"
	"io"

	"github.com/cutover/cutover/internal/check"
)

// Report is what `cutover chaos` prints, and with --json writes; its JSON
// keys are the command's interface (docs/chaos.md).
type Report struct {
	Seed      uint64  `json:"seed"`
	DurationS float64 `json:"duration_s"`
	// Topology names the NATS deployment: "cluster" (three nodes) or
	// "supercluster"; WAN its gateways' shaping ("" unshaped).
	Topology string `json:"topology"`
	WAN      string `json:"wan,omitempty"`
	Nemesis  struct {
		LeaderKills     int `json:"leader_kills"`
		WorkerKills     int `json:"worker_kills"`
		WorkersStarted  int `json:"workers_started"`
		Partitions      int `json:"partitions"`
		PartitionLeaks  int `json:"partitions_leaked"`
		Pauses          int `json:"pauses"`
		PausesTriggered int `json:"pauses_triggered"`
		// PausePoints counts the triggered pauses by step boundary.
		PausePoints map[string]int `json:"pause_points,omitempty"`
		// MaxClockOffsetMs is the largest worker clock offset (± half the
		// skew margin; 0 with --no-clock-skew).
		MaxClockOffsetMs float64 `json:"max_clock_offset_ms"`
		// SlowFsyncs counts the store fsyncs the slow-disk fault stretched.
		SlowFsyncs      int64 `json:"slow_fsyncs"`
		DuplicateStarts int   `json:"duplicate_starts"`
		// Steers counts the operator steerings: a migration or tenant
		// move paused, throttled and resumed.
		Steers int `json:"steers"`
		// PostgresRestarts counts the PostgreSQL crashes and restarts
		// (--postgres: the messages service's database).
		PostgresRestarts int      `json:"postgres_restarts,omitempty"`
		StaleRequests    int      `json:"stale_api_requests"`
		Schedule         []string `json:"schedule,omitempty"`
	} `json:"nemesis"`
	Migrations struct {
		Started    int `json:"started"`
		Completed  int `json:"completed"`
		RolledBack int `json:"rolled_back_cleanly"`
		Unfinished int `json:"unfinished"`
		Tenants    int `json:"tenants"`
		// PostSwapStarts are migrations started of a resource right after
		// its previous migration swapped, before that one completed.
		PostSwapStarts int `json:"post_swap_starts"`
		// Reasons counts why migrations ended without completing.
		Reasons map[string]int `json:"end_reasons,omitempty"`
		// StepErrors samples the step failures behind them.
		StepErrors []string `json:"step_error_samples,omitempty"`
	} `json:"migrations"`
	Writes struct {
		Attempted    int64   `json:"attempted"`
		Acknowledged int64   `json:"acknowledged"`
		Rejected423  int64   `json:"rejected_423"`
		Unrecovered  int64   `json:"unrecovered"`
		Failed       int64   `json:"failed_other"`
		Reads        int64   `json:"reads"`
		MaxFenceMs   float64 `json:"max_client_fence_ms"`
		Conversation int     `json:"conversations"`
	} `json:"writes"`
	Observed struct {
		Revisions int `json:"routing_revisions"`
	} `json:"observed"`
	// Invariants are the shared checker's: its unified keys, with chaos's
	// older names for two of them written beside (check.Invariants).
	Invariants check.Invariants `json:"invariants"`
}

// Failures lists every violated invariant, one phrase each.
func (r *Report) Failures() []string { return r.Invariants.Failures() }

// Print writes the report as text.
func (r *Report) Print(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	n := r.Nemesis
	p("\n== cutover chaos: seed %d, %.1f s", r.Seed, r.DurationS)
	p("nemesis: %d leader kills, %d worker kills (%d started), %d partitions, %d pauses (%d hit a write lock), %d duplicate starts, %d steerings (pause, throttle, resume), %d stale-API requests",
		n.LeaderKills, n.WorkerKills, n.WorkersStarted, n.Partitions, n.Pauses, n.PausesTriggered, n.DuplicateStarts, n.Steers, n.StaleRequests)
	m := r.Migrations
	p("worker clocks off by up to %.0f ms; %d store fsyncs slowed by 5–50 ms", n.MaxClockOffsetMs, n.SlowFsyncs)
	if len(n.PausePoints) > 0 {
		p("pauses by step boundary: %v", n.PausePoints)
	}
	p("migrations: %d started (%d tenants, %d right after a swap), %d completed, %d rolled back cleanly, %d unfinished", m.Started, m.Tenants, m.PostSwapStarts, m.Completed, m.RolledBack, m.Unfinished)
	wr := r.Writes
	p("traffic: %d writes attempted, %d acknowledged, %d reads over %d conversations; 423: %d, unrecovered %d, other failures %d; longest client-felt fence %.0f ms",
		wr.Attempted, wr.Acknowledged, wr.Reads, wr.Conversation, wr.Rejected423, wr.Unrecovered, wr.Failed, wr.MaxFenceMs)
	p("invariants (from acknowledged operations, the stores and the routing revisions; %d revisions observed):", r.Observed.Revisions)
	r.Invariants.Print(w)
	if bad := r.Failures(); len(bad) == 0 {
		p("OK: every invariant holds (reproduce with --seed %d)", r.Seed)
	} else {
		p("FAIL: %v (reproduce with --seed %d)", bad, r.Seed)
	}
}

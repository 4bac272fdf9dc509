package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cutover/cutover/events"
)

// TenantRequest is `cutover migrate tenant`: migrate a tenant's resources.
type TenantRequest struct {
	// NATS is the deployment's URL (several comma separated).
	NATS string
	// Tenant names the tenant.
	Tenant string
	// Target is the region to move the resources to.
	Target string
	// Resources lists the tenant's resources ("kind/id"), comma separated.
	// Exactly one of Resources and ResourcesFile is given.
	Resources string
	// ResourcesFile is a file with one resource per line; blank lines and
	// # comments are skipped.
	ResourcesFile string
	// Concurrency is how many migrations run at once; 0 is the
	// orchestrator's default.
	Concurrency int
	// Timeout bounds the following; 0 follows for ever. The migration goes
	// on either way.
	Timeout time.Duration
	// JSON prints the progress as JSON lines.
	JSON bool
	// MaxWriteBlock is every child's write-block budget (0: the write
	// lease).
	MaxWriteBlock time.Duration
	// Rate caps the copy of all the children together, in records a
	// second (0: no cap).
	Rate int
	// MaxWriteLockP99 is the brake: the move halves its concurrency when
	// its children's write-blocked p99 passes it (0: no brake).
	MaxWriteLockP99 time.Duration
	// MaxSourceLatency is the brake on the source stores: the move halves
	// its concurrency when a running migration's slowest export page takes
	// longer (0: no brake).
	MaxSourceLatency time.Duration
}

// StartTenant asks the orchestrator to migrate a tenant's resources and
// follows the fan-out to its end: a redrawn progress bar when stdout is a
// terminal, one line per finished resource otherwise. It returns an error
// wrapping ErrUsage for a bad tenant, target, concurrency or resource list,
// before connecting; any other error when the deployment cannot be
// reached, no contract service answers in the target region, the
// orchestrator refuses, following gives up, or any of the migrations
// failed. Any goroutine may call it.
func StartTenant(ctx context.Context, r TenantRequest, stdout, stderr io.Writer) error {
	tenant := r.Tenant
	if strings.TrimSpace(tenant) == "" {
		return fmt.Errorf("%w: empty tenant", ErrUsage)
	}
	if err := CheckRegion("to", r.Target); err != nil {
		return err
	}
	if r.Concurrency < 0 {
		return fmt.Errorf("%w: --concurrency must be >= 0", ErrUsage)
	}
	if r.MaxWriteBlock < 0 {
		return fmt.Errorf("%w: --max-write-block must be >= 0", ErrUsage)
	}
	if r.Rate < 0 || r.MaxWriteLockP99 < 0 || r.MaxSourceLatency < 0 {
		return fmt.Errorf("%w: --rate, --max-write-lock-p99 and --max-source-latency must be >= 0", ErrUsage)
	}
	resources, err := tenantResources(r.Resources, r.ResourcesFile)
	if err != nil {
		return err
	}
	o, err := dial(ctx, r.NATS)
	if err != nil {
		return err
	}
	defer o.Close()
	if err := preflightAll(ctx, o, resources, r.Target); err != nil {
		return err
	}
	id, err := o.orch.StartTenant(ctx, events.StartTenant{Tenant: tenant, Target: r.Target, Resources: resources, Concurrency: r.Concurrency,
		MaxWriteBlock: r.MaxWriteBlock, Rate: r.Rate, MaxWriteLockP99: r.MaxWriteLockP99,
		MaxSourceLatency: r.MaxSourceLatency})
	if err != nil {
		return fmt.Errorf("start tenant: %w", err)
	}
	if !r.JSON {
		fmt.Fprintf(stdout, "tenant migration %s: %s, %d resources → %s\n", id, tenant, len(resources), r.Target)
	}
	p := &progress{out: stdout, total: len(resources), tty: isTerminal(stdout), json: r.JSON, ids: map[string]string{}}
	fctx, cancel := withTimeout(ctx, r.Timeout)
	defer cancel()
	var last *events.State
	err = followEvents(fctx, o, id, 0, stderr, func(_ uint64, e *events.Envelope) bool {
		if e.State == nil || e.State.Fanout == nil {
			return false
		}
		last = e.State
		p.update(e)
		return e.State.Status.Terminal()
	})
	p.finish()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && last != nil {
			return fmt.Errorf("tenant migration %s still running after %s (%d of %d finished); it goes on", id, r.Timeout, last.Fanout.Finished(), len(resources))
		}
		return noStream(err)
	}
	f := last.Fanout
	took := last.EndedAt.Sub(last.RequestedAt).Round(time.Millisecond)
	blocked := writeBlocked(ctx, o, p.ids)
	if r.JSON {
		_ = writeJSONLine(stdout, map[string]any{"tenant_migration_id": id, "tenant": tenant, "target": r.Target, "status": last.Status,
			"total": len(resources), "completed": f.Completed, "failed": f.Failed, "dropped": f.Dropped, "took": took.String(),
			"write_blocked_ms": blocked})
	} else {
		fmt.Fprintf(stdout, "tenant %s → %s done in %s: %d completed, %d failed, %d dropped\n", tenant, r.Target, took, f.Completed, f.Failed, f.Dropped)
		fmt.Fprintln(stdout, blocked.String())
	}
	if f.Failed > 0 {
		return fmt.Errorf("tenant %s: %d of %d migrations failed (%s)", tenant, f.Failed, len(resources), strings.Join(p.failedList(), ", "))
	}
	return nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress renders a tenant fan-out's progress: a redrawn bar on a
// terminal, one line per finished child otherwise.
type progress struct {
	out    io.Writer
	total  int
	tty    bool
	json   bool
	drawn  bool
	ids    map[string]string // resource → migration id
	failed []string
	// start is when the fan-out began (its first event's time), for the
	// ETA: the rest at the completion rate observed so far.
	start time.Time
}

// eta is the expected time left at the observed completion rate ("" until
// one has finished).
func (p *progress) eta(f *events.TenantState, now time.Time) string {
	done := f.Finished()
	if done == 0 || p.start.IsZero() || done >= p.total {
		return ""
	}
	left := time.Duration(float64(now.Sub(p.start)) / float64(done) * float64(p.total-done))
	return "ETA " + left.Round(100*time.Millisecond).String()
}

func (p *progress) update(e *events.Envelope) {
	f := e.State.Fanout
	if p.start.IsZero() {
		p.start = e.Time
	}
	b, _ := e.Body.(events.TenantProgress)
	if b.Started != "" {
		p.ids[b.Started] = b.StartedID
	}
	if b.Finished == "" {
		if p.tty && !p.json {
			p.draw(f)
		}
		return
	}
	if b.Outcome == events.StatusFailed {
		p.failed = append(p.failed, b.Finished)
	}
	switch {
	case p.json:
		_ = writeJSONLine(p.out, map[string]any{"resource": b.Finished, "migration_id": p.ids[b.Finished], "outcome": b.Outcome,
			"finished": f.Finished(), "total": p.total, "completed": f.Completed, "failed": f.Failed, "dropped": f.Dropped, "active": len(f.Active),
			"eta": p.eta(f, e.Time)})
	case p.tty:
		if b.Outcome == events.StatusFailed {
			fmt.Fprintf(p.out, "\r\033[K  %s failed (%s)\n", b.Finished, p.ids[b.Finished])
		}
		p.draw(f)
	default:
		fmt.Fprintf(p.out, "  [%d/%d] %s %s (%s) %s\n", f.Finished(), p.total, b.Finished, b.Outcome, p.ids[b.Finished], p.eta(f, e.Time))
	}
}

func (p *progress) draw(f *events.TenantState) {
	const width = 30
	n := 0
	if p.total > 0 {
		n = f.Finished() * width / p.total
	}
	fmt.Fprintf(p.out, "\r\033[K[%s%s] %d/%d  completed %d  failed %d  dropped %d  active %d  %s",
		strings.Repeat("#", n), strings.Repeat(".", width-n), f.Finished(), p.total, f.Completed, f.Failed, f.Dropped, len(f.Active), p.eta(f, time.Now()))
	p.drawn = true
}

func (p *progress) finish() {
	if p.drawn {
		fmt.Fprintln(p.out)
	}
}

func (p *progress) failedList() []string {
	out := make([]string, 0, len(p.failed))
	for _, r := range p.failed {
		out = append(out, r+" "+p.ids[r])
	}
	return out
}

// BlockedJSON is how long a tenant move blocked its resources' writes:
// the distribution over its migrations (each over all its attempts).
type BlockedJSON struct {
	Migrations int   `json:"migrations"`
	P50        int64 `json:"p50"`
	P99        int64 `json:"p99"`
	Max        int64 `json:"max"`
	// Histogram counts the migrations per bucket, by upper bound ("≤50ms"
	// … "≤10s", ">10s"), in order.
	Histogram []BlockedBucket `json:"histogram"`
}

// BlockedBucket is one bucket of BlockedJSON's histogram.
type BlockedBucket struct {
	Le    string `json:"le"`
	Count int    `json:"count"`
}

var blockedBounds = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 10 * time.Second}

// writeBlocked reads each child migration's state (ids: resource →
// migration id) and summarises how long each blocked its writes.
func writeBlocked(ctx context.Context, o *conn, ids map[string]string) BlockedJSON {
	var ms []int64
	for _, id := range ids {
		st, _, err := o.orch.State(ctx, id)
		if err != nil || st == nil {
			continue
		}
		ms = append(ms, st.WriteBlocked.Milliseconds())
	}
	return blockedOf(ms)
}

// blockedOf summarises write-blocked times in milliseconds.
func blockedOf(ms []int64) BlockedJSON {
	b := BlockedJSON{Migrations: len(ms)}
	for _, le := range blockedBounds {
		b.Histogram = append(b.Histogram, BlockedBucket{Le: "≤" + le.String()})
	}
	b.Histogram = append(b.Histogram, BlockedBucket{Le: ">" + blockedBounds[len(blockedBounds)-1].String()})
	if len(ms) == 0 {
		return b
	}
	slices.Sort(ms)
	at := func(q float64) int64 { return ms[min(len(ms)-1, int(q*float64(len(ms))))] }
	b.P50, b.P99, b.Max = at(0.50), at(0.99), ms[len(ms)-1]
	for _, v := range ms {
		i := len(blockedBounds)
		for j, le := range blockedBounds {
			if time.Duration(v)*time.Millisecond <= le {
				i = j
				break
			}
		}
		b.Histogram[i].Count++
	}
	return b
}

// String is the tenant report's lines: the distribution, then the
// histogram's non-empty buckets.
func (b BlockedJSON) String() string {
	var parts []string
	for _, h := range b.Histogram {
		if h.Count > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", h.Le, h.Count))
		}
	}
	return fmt.Sprintf("writes blocked per migration (%d): p50 %d ms, p99 %d ms, max %d ms\n  histogram: %s",
		b.Migrations, b.P50, b.P99, b.Max, strings.Join(parts, ", "))
}

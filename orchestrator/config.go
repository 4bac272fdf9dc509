package orchestrator

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/orchestrator/approval"
)

// Defaults applied by Config.EnsureDefaults (paper 001 Table 5 where the
// paper gives a value).
const (
	DefaultConvergenceBuffer = 10 * time.Minute
	// ConvergenceFence and ConvergenceTTL are the values of
	// Config.Convergence.
	ConvergenceFence         = "fence"
	ConvergenceTTL           = "ttl"
	DefaultReplicationBound  = 5 * time.Minute
	DefaultRenewMargin       = time.Hour
	DefaultValidationBudget  = 5 * time.Second
	DefaultPhaseRetries      = 3
	DefaultMaxAttempts       = 3
	DefaultRetryBackoff      = time.Second
	DefaultRescheduleBackoff = time.Minute
	DefaultCleanupWindow     = 15 * 24 * time.Hour
	DefaultAckWait           = time.Minute
	DefaultStepTimeout       = 30 * time.Second
	DefaultParallel          = 16
	DefaultBackgroundSteps   = 8
	DefaultPagesPerStep      = 8
	DefaultTenantPoll        = time.Second
	DefaultTenantConcurrency = 10
	DefaultPartitions        = 16
)

// Config configures a Worker. Locker and Directory are required; every
// other zero value means the documented default.
type Config struct {
	// Locker performs the routing-document lock lifecycle.
	Locker *kvrouting.Locker
	// Directory finds the service endpoints of a region.
	Directory Directory
	// Convergence selects Phase 1's wait: ConvergenceFence (the default)
	// waits for no cache — the hard-delete escalation follows the
	// pre-lock as soon as its event is durable, and the stores' authority
	// records (contract.Admit refuses a request routed by an older
	// revision) and the API's re-resolution stand in for the caches'
	// expiry; ConvergenceTTL waits for every routing cache to expire, the
	// paper's wait (pre-lock not-before + ConvergenceBuffer, at least the
	// replication bound), for services whose store cannot keep an
	// authority record.
	Convergence string
	// ConvergenceBuffer is the safety buffer added to the pre-lock's
	// not-before (paper 001 §4.1.1: ≈10 min); ConvergenceTTL only.
	ConvergenceBuffer time.Duration
	// ReplicationBound is the routing store's replication-lag bound; the
	// convergence wait is never shorter than it (paper 001 Table 5: 5 min).
	ReplicationBound time.Duration
	// RenewMargin: the hard-delete lock is renewed when it is within this
	// of its expiry (paper 001 §5.2).
	RenewMargin time.Duration
	// ValidationBudget bounds the pre-cutover validation (paper 001 §5.3).
	ValidationBudget time.Duration
	// PhaseRetries is how many transient failures in one phase roll the
	// migration back (paper 001 §3.5: 3).
	PhaseRetries int
	// MaxAttempts bounds the fresh attempts after rollbacks.
	MaxAttempts int
	// RetryBackoff is the delay after the first transient failure of a
	// phase; it triples with each further one (1×, 3×, 9×).
	RetryBackoff time.Duration
	// RescheduleBackoff is the delay before a fresh attempt.
	RescheduleBackoff time.Duration
	// CleanupWindow is how long after the swap the source data is deleted
	// (paper 001 §4.1.4: 15 days).
	CleanupWindow time.Duration
	// FullCopyBack turns the reverse window off: a move back to the
	// resource's previous location copies everything, resetting the old
	// copy, as any other migration does (reverse.go). The default (false)
	// copies only what changed since the swap when that is proven safe.
	FullCopyBack bool
	// AckWait is the work consumer's ack wait: how soon a migration whose
	// worker died is picked up again.
	AckWait time.Duration
	// StepTimeout bounds one step's I/O.
	StepTimeout time.Duration
	// PageLimit is the export page size (0: the contract's default).
	PageLimit int
	// PagesPerStep is how many consecutive pages of one service a copy
	// step may copy (pipelined: the next export runs during the previous
	// import) before it checkpoints them all in one event. 1 copies one
	// page per service per step.
	PagesPerStep int
	// Parallel is how many migrations one worker drives at once.
	Parallel int
	// BackgroundSteps bounds how many steps of migrations NOT holding the
	// write lock one worker runs at once; steps of Phase 3 (write-locked,
	// delta, validated) never wait for it. Every step ends in a synced
	// append to one stream, served first come first served: without the
	// bound, a write-locked migration's three steps queue behind up to
	// Parallel other appends each, and users feel that queue as the write
	// fence (write-lock p99 1.8 s with 128 in flight). Steps without such
	// work do not wait either: a timer re-armed, the completion after the
	// swap (queues, decide.go).
	BackgroundSteps int
	// TenantPoll is how often a tenant fan-out checks its children.
	TenantPoll time.Duration
	// TenantConcurrency is the default concurrency of a tenant fan-out.
	TenantConcurrency int
	// Partitions and PartitionInterval rate-limit tenant starts: at most one
	// start per PartitionInterval in each of Partitions hash partitions of
	// the resource ids (0 interval: no limit).
	Partitions        int
	PartitionInterval time.Duration
	// Operators is the registry of operator keys that the approvals of
	// two-person commands (force-release, fence clear) are verified
	// against (admin.go); approval.File re-reads operators.json for every
	// command, so an operator added or removed counts at once. Nil: see
	// UnsignedApprovals.
	Operators approval.Source
	// UnsignedApprovals, with no Operators, accepts two-person commands
	// approved by unsigned names (still two distinct ones in their
	// canonical form, approval.CheckUnsigned), logs a warning for each
	// and records no approval ids: development deployments only
	// (--insecure-dev-auth). With neither, every two-person command is
	// refused.
	UnsignedApprovals bool
	// Clock is the time source (default time.Now).
	Clock func() time.Time
	// Logger receives step logs (default: discard). Tokens are never
	// logged whole.
	Logger *slog.Logger
	// AfterAppend, if set, is called after every event a worker appends; a
	// non-nil error simulates a crash right after that event (tests).
	AfterAppend func(*events.Envelope) error
	// BeforeAppend, if set, is called after a step's side effect and before
	// its event is appended; a non-nil error simulates a crash that loses
	// the event (tests).
	BeforeAppend func(st *events.State, next events.Body) error
}

// EnsureDefaults fills zero fields with the defaults.
func (c *Config) EnsureDefaults() {
	def := func(p *time.Duration, d time.Duration) {
		if *p == 0 {
			*p = d
		}
	}
	if c.Convergence == "" {
		c.Convergence = ConvergenceFence
	}
	def(&c.ConvergenceBuffer, DefaultConvergenceBuffer)
	def(&c.ReplicationBound, DefaultReplicationBound)
	def(&c.RenewMargin, DefaultRenewMargin)
	def(&c.ValidationBudget, DefaultValidationBudget)
	def(&c.RetryBackoff, DefaultRetryBackoff)
	def(&c.RescheduleBackoff, DefaultRescheduleBackoff)
	def(&c.CleanupWindow, DefaultCleanupWindow)
	def(&c.AckWait, DefaultAckWait)
	def(&c.StepTimeout, DefaultStepTimeout)
	def(&c.TenantPoll, DefaultTenantPoll)
	if c.PhaseRetries == 0 {
		c.PhaseRetries = DefaultPhaseRetries
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Parallel == 0 {
		c.Parallel = DefaultParallel
	}
	if c.PagesPerStep == 0 {
		c.PagesPerStep = DefaultPagesPerStep
	}
	if c.BackgroundSteps == 0 {
		c.BackgroundSteps = DefaultBackgroundSteps
	}
	if c.TenantConcurrency == 0 {
		c.TenantConcurrency = DefaultTenantConcurrency
	}
	if c.Partitions == 0 {
		c.Partitions = DefaultPartitions
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports missing or inconsistent settings (after EnsureDefaults)
// as ErrInvalid.
func (c *Config) Validate() error {
	if c.Locker == nil || c.Directory == nil {
		return fmt.Errorf("%w: Locker and Directory are required", ErrInvalid)
	}
	if c.Convergence != ConvergenceFence && c.Convergence != ConvergenceTTL {
		return fmt.Errorf("%w: convergence %q: want %q or %q", ErrInvalid, c.Convergence, ConvergenceFence, ConvergenceTTL)
	}
	for name, d := range map[string]time.Duration{"convergence buffer": c.ConvergenceBuffer, "replication bound": c.ReplicationBound,
		"renew margin": c.RenewMargin, "validation budget": c.ValidationBudget, "ack wait": c.AckWait, "step timeout": c.StepTimeout} {
		if d < 0 {
			return fmt.Errorf("%w: negative %s", ErrInvalid, name)
		}
	}
	if c.AckWait < c.StepTimeout {
		// A step may run for StepTimeout without telling the consumer it is
		// alive; a shorter ack wait hands the same migration to a second
		// worker while the first is still copying (two workers importing
		// for one attempt). The target's authority record makes that safe
		// (an import of an attempt that has ended changes nothing), this
		// keeps it rare.
		return fmt.Errorf("%w: ack wait %s shorter than the step timeout %s", ErrInvalid, c.AckWait, c.StepTimeout)
	}
	if c.PhaseRetries < 1 || c.MaxAttempts < 1 || c.Parallel < 1 || c.Partitions < 1 || c.BackgroundSteps < 1 || c.PagesPerStep < 1 {
		return fmt.Errorf("%w: retries, attempts, parallelism, background steps, pages per step and partitions must be positive", ErrInvalid)
	}
	return nil
}

// withDefaultTimeout applies DefaultStepTimeout when ctx has no deadline.
func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultStepTimeout)
}

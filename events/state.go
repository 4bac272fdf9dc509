package events

import (
	"log/slog"
	"time"
)

// Phase is where a migration stands: the phase engine's position in paper
// 001 Algorithm 1.
type Phase string

// Phases, in order. Rollback may follow any phase before PhaseSwapped.
const (
	PhaseRequested        Phase = "requested"         // token persisted, pre-lock next
	PhasePreLocked        Phase = "pre-locked"        // waiting for convergence (line 3)
	PhaseConverged        Phase = "converged"         // hard-delete lock next (line 5)
	PhaseHistorical       Phase = "historical-copy"   // pages (lines 6-10)
	PhaseDelta            Phase = "delta-copy"        // delta, then validation (lines 13-14)
	PhaseValidated        Phase = "validated"         // swap next (line 19)
	PhaseSwapped          Phase = "swapped"           // the regions' authority, cleanup schedule (line 20)
	PhaseCleanupScheduled Phase = "cleanup-scheduled" // completion next
	PhaseRolledBack       Phase = "rolled-back"       // reschedule or fail next
	PhaseDone             Phase = "done"              // terminal (see Status)
	PhaseTenant           Phase = "tenant"            // a tenant fan-out aggregate
)

// Status is the coarse outcome of a migration.
type Status string

// Statuses. Only StatusActive is not terminal.
const (
	StatusActive    Status = "active"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusDropped   Status = "dropped"
)

// Terminal reports whether s ends the migration.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusDropped
}

// ServiceProgress is the copy checkpoint of one service.
type ServiceProgress struct {
	Service        string `msgpack:"svc"`
	SyncToken      uint64 `msgpack:"tok"`
	Cursor         uint64 `msgpack:"cur"`
	HistoricalDone bool   `msgpack:"hdone"`
	Started        bool   `msgpack:"started"`
	DeltaCursor    uint64 `msgpack:"dcur"`
	DeltaDone      bool   `msgpack:"ddone"`
	Pages          int    `msgpack:"pages"`
	Records        int    `msgpack:"recs"`
	// Since: the historical copy starts after this change sequence (a
	// move back within the reverse window; HardDeleteLocked.Since), the
	// target not reset. 0: a full copy.
	Since uint64 `msgpack:"since,omitempty"`
	// TargetSeq, TargetSum: the target's copy when validated
	// (DeltaCopied).
	TargetSeq uint64 `msgpack:"tseq,omitempty"`
	TargetSum uint64 `msgpack:"tsum,omitempty"`
}

// TenantChild is one resource of a tenant fan-out.
type TenantChild struct {
	Resource    string `msgpack:"res"`
	MigrationID string `msgpack:"mid"`
	Outcome     Status `msgpack:"outcome,omitempty"`
}

// TenantState is the state of a tenant fan-out aggregate.
type TenantState struct {
	Tenant      string        `msgpack:"tenant"`
	Target      string        `msgpack:"tgt"`
	Resources   []string      `msgpack:"res"`
	Concurrency int           `msgpack:"conc"`
	Next        int           `msgpack:"next"`
	Active      []TenantChild `msgpack:"active"`
	Completed   int           `msgpack:"completed"`
	Failed      int           `msgpack:"failed"`
	Dropped     int           `msgpack:"dropped"`
	// LastStart is the last start time per rate-limit partition.
	LastStart []time.Time `msgpack:"last,omitempty"`
	// MaxWriteBlock is every child's write-block budget.
	MaxWriteBlock time.Duration `msgpack:"mwb,omitempty"`
	// Rate caps the children's copy together, in records a second (0:
	// none); each child copies at ChildRate.
	Rate int `msgpack:"rate,omitempty"`
	// MaxWriteLockP99 is the brake's threshold (0: no brake); Blocked are
	// the write-blocked times (ms) of the children that ended since the
	// last brake, at most BrakeWindow of them; Brakes counts the brakes
	// and BrakeReason says why the last one tripped.
	MaxWriteLockP99 time.Duration `msgpack:"brake,omitempty"`
	Blocked         []int64       `msgpack:"blk,omitempty"`
	Brakes          int           `msgpack:"brakes,omitempty"`
	BrakeReason     string        `msgpack:"brakewhy,omitempty"`
	// MaxSourceLatency is the source-latency brake's threshold (0: none);
	// LastBrakeAt is when the last brake tripped (the latency brake waits
	// BrakeCooldown after it, for samples at the new concurrency).
	MaxSourceLatency time.Duration `msgpack:"brakelat,omitempty"`
	LastBrakeAt      time.Time     `msgpack:"tbrake,omitempty"`
}

// BrakeWindow is how many ended children's write-blocked times the brake
// looks at; BrakeMinSamples how many it needs before it decides.
// BrakeCooldown is the least time between two source-latency brakes.
const (
	BrakeWindow     = 50
	BrakeMinSamples = 5
	BrakeCooldown   = 10 * time.Second
)

// ChildRate is the copy rate of each child: the move's Rate shared by the
// children that run at once (0: no cap).
func (t *TenantState) ChildRate() int {
	if t.Rate <= 0 {
		return 0
	}
	return max(t.Rate/max(t.Concurrency, 1), 1)
}

// Finished is how many children have ended.
func (t *TenantState) Finished() int { return t.Completed + t.Failed + t.Dropped }

// State is a migration's full state: the fold of its events. Every event
// carries the state after it (state-carrying events).
type State struct {
	ID       string `msgpack:"id"`
	Resource string `msgpack:"res,omitempty"`
	Source   string `msgpack:"src,omitempty"`
	Target   string `msgpack:"tgt,omitempty"`
	Parent   string `msgpack:"parent,omitempty"`
	Tenant   string `msgpack:"tenant,omitempty"`
	Phase    Phase  `msgpack:"phase"`
	Status   Status `msgpack:"status"`
	// Attempt counts from 1; MaxAttempts bounds rescheduling.
	Attempt     int `msgpack:"attempt"`
	MaxAttempts int `msgpack:"max"`
	// Token is the current attempt's lock token, whole. Never log it.
	Token string `msgpack:"tok,omitempty"`
	// WaitUntil is the earliest time the next step may run (convergence
	// wait, reschedule backoff, cleanup window).
	WaitUntil time.Time `msgpack:"until,omitempty"`
	// LockExpiry is the current migration lock's expiry (hard-delete or
	// write lock).
	LockExpiry time.Time         `msgpack:"lockex,omitempty"`
	Services   []ServiceProgress `msgpack:"svcs,omitempty"`
	// Failures counts transient failures in the current phase.
	Failures int `msgpack:"fails,omitempty"`
	// Abort, when set before the swap, makes the next step a rollback.
	Abort string `msgpack:"abort,omitempty"`
	// Cancelled stops rescheduling after the rollback.
	Cancelled       bool      `msgpack:"cancelled,omitempty"`
	PendingChildren []string  `msgpack:"pending,omitempty"`
	Children        []string  `msgpack:"children,omitempty"`
	CleanupAt       time.Time `msgpack:"cleanup,omitempty"`
	// SwapRev is the routing revision of this migration's swap (Swapped.Rev).
	SwapRev       uint64 `msgpack:"swaprev,omitempty"`
	SourceCleaned bool   `msgpack:"cleaned,omitempty"`
	// Reason explains a Failed or Dropped end, or the last rollback.
	Reason  string   `msgpack:"reason,omitempty"`
	Figures *Figures `msgpack:"fig,omitempty"`
	// Phase timestamps of the current attempt (RequestedAt: the first).
	RequestedAt   time.Time `msgpack:"t0,omitempty"`
	AttemptAt     time.Time `msgpack:"ta,omitempty"`
	PreLockedAt   time.Time `msgpack:"tpre,omitempty"`
	ConvergedAt   time.Time `msgpack:"tconv,omitempty"`
	HardDeleteAt  time.Time `msgpack:"thd,omitempty"`
	WriteLockedAt time.Time `msgpack:"twl,omitempty"`
	SwappedAt     time.Time `msgpack:"tswap,omitempty"`
	EndedAt       time.Time `msgpack:"tend,omitempty"`
	// Fanout is set on a tenant fan-out aggregate.
	Fanout *TenantState `msgpack:"tstate,omitempty"`
	// Events counts the events folded so far.
	// MaxWriteBlock is the write-block budget (Requested); 0: the write
	// lease. WriteBlocked is how long the resource's writes have been
	// blocked over every attempt: from each write lock to its swap or its
	// rollback.
	MaxWriteBlock time.Duration `msgpack:"mwb,omitempty"`
	WriteBlocked  time.Duration `msgpack:"wblk,omitempty"`
	// Paused holds the migration (Paused, until Resumed) since PausedAt,
	// PausedByParent when its tenant move paused it; PauseReason is the
	// operator's. PausedFor is the time spent paused before PausedAt.
	Paused         bool          `msgpack:"paused,omitempty"`
	PausedByParent bool          `msgpack:"pbyp,omitempty"`
	PausedAt       time.Time     `msgpack:"tpause,omitempty"`
	PauseReason    string        `msgpack:"pwhy,omitempty"`
	PausedFor      time.Duration `msgpack:"pfor,omitempty"`
	// Rate caps the historical copy in records a second (0: none).
	Rate int `msgpack:"rate,omitempty"`
	// PauseSentAt and ThrottleSentAt are the send times of the last
	// operator's pause or resume, and throttle, applied: an older command
	// delivered late is stale.
	PauseSentAt    time.Time `msgpack:"tpsent,omitempty"`
	ThrottleSentAt time.Time `msgpack:"ttsent,omitempty"`
	// SourceLatency is the slowest export page of the last historical
	// step (PageCopied.ExportMs).
	SourceLatency time.Duration `msgpack:"srclat,omitempty"`

	Events int `msgpack:"n"`
}

// Service returns the progress entry of svc, or nil.
func (s *State) Service(svc string) *ServiceProgress {
	for i := range s.Services {
		if s.Services[i].Service == svc {
			return &s.Services[i]
		}
	}
	return nil
}

// Pending returns the services whose historical copy (delta: their delta
// copy) is not done yet, in order.
func (s *State) Pending(delta bool) []ServiceProgress {
	var out []ServiceProgress
	for _, p := range s.Services {
		if (delta && !p.DeltaDone) || (!delta && !p.HistoricalDone) {
			out = append(out, p)
		}
	}
	return out
}

// Clone returns a deep copy.
func (s *State) Clone() *State {
	c := *s
	c.Services = append([]ServiceProgress(nil), s.Services...)
	c.PendingChildren = append([]string(nil), s.PendingChildren...)
	c.Children = append([]string(nil), s.Children...)
	if s.Figures != nil {
		f := *s.Figures
		c.Figures = &f
	}
	if s.Fanout != nil {
		t := *s.Fanout
		t.Resources = append([]string(nil), t.Resources...)
		t.Active = append([]TenantChild(nil), t.Active...)
		t.LastStart = append([]time.Time(nil), t.LastStart...)
		t.Blocked = append([]int64(nil), t.Blocked...)
		c.Fanout = &t
	}
	return &c
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// LogValue implements slog.LogValuer: a state is logged without its token.
func (s *State) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", s.ID), slog.String("resource", s.Resource),
		slog.String("phase", string(s.Phase)), slog.String("status", string(s.Status)),
		slog.Int("attempt", s.Attempt), slog.String("token", redact(s.Token)))
}

// redact keeps the first 4 characters of a token.
func redact(tok string) string {
	if len(tok) <= 4 {
		return "…"
	}
	return tok[:4] + "…"
}

// LogValue implements slog.LogValuer without the token.
func (r Requested) LogValue() slog.Value {
	return slog.GroupValue(slog.String("resource", r.Resource), slog.String("target", r.Target),
		slog.Int("attempt", r.Attempt), slog.String("token", redact(r.Token)))
}

// LogValue implements slog.LogValuer without the token.
func (r Rescheduled) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("attempt", r.Attempt), slog.Time("at", r.At), slog.String("token", redact(r.Token)))
}

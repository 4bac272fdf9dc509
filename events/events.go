package events

import (
	"time"
)

// Event type names.
const (
	TypeRequested        = "requested"
	TypePreLocked        = "pre-locked"
	TypeConverged        = "converged"
	TypeDropped          = "dropped"
	TypeHardDeleteLocked = "hard-delete-locked"
	TypePageCopied       = "page-copied"
	TypeRenewed          = "renewed"
	TypeWriteLocked      = "write-locked"
	TypeDeltaCopied      = "delta-copied"
	TypePagesCopied      = "pages-copied"
	TypeDeltasCopied     = "deltas-copied"
	TypeValidated        = "validated"
	TypeSwapped          = "swapped"
	TypeCleanupScheduled = "cleanup-scheduled"
	TypeCompleted        = "completed"
	TypeCleanedUp        = "cleaned-up"
	TypeStepFailed       = "step-failed"
	TypeRolledBack       = "rolled-back"
	TypeRescheduled      = "rescheduled"
	TypeFailed           = "failed"
	TypeChildStarted     = "child-started"
	TypeCancelRequested  = "cancel-requested"
	TypeTenantStarted    = "tenant-started"
	TypeTenantProgress   = "tenant-progress"
	TypeForceReleased    = "force-released"
	TypeFenceCleared     = "fence-force-cleared"
	TypeAdminRefused     = "admin-refused"
	TypePaused           = "paused"
	TypeResumed          = "resumed"
	TypeThrottled        = "throttled"
)

// Requested opens a migration. Token is generated and persisted here,
// BEFORE the pre-lock is attempted, so that a retry after an unknown outcome
// recognises its own lock (kvrouting.WithToken). It is stored whole (any
// worker must be able to resume) and must never be logged whole.
type Requested struct {
	Resource    string `msgpack:"res"`
	Target      string `msgpack:"tgt"`
	Parent      string `msgpack:"parent,omitempty"`
	Tenant      string `msgpack:"tenant,omitempty"`
	Attempt     int    `msgpack:"attempt"`
	MaxAttempts int    `msgpack:"max"`
	Token       string `msgpack:"tok"`
	// MaxWriteBlock is the write-block budget (Start.MaxWriteBlock).
	MaxWriteBlock time.Duration `msgpack:"mwb,omitempty"`
	// Rate is the historical copy's cap in records a second (Start.Rate).
	Rate int `msgpack:"rate,omitempty"`
}

// PreLocked records the pre-lock (paper 001 Algorithm 1 line 2).
type PreLocked struct {
	Source    string    `msgpack:"src"`
	NotBefore time.Time `msgpack:"nb"`
	Expiry    time.Time `msgpack:"ex"`
	// WaitUntil is NotBefore plus the safety buffer: the convergence wait
	// (line 3) ends no earlier.
	WaitUntil time.Time `msgpack:"until"`
}

// Converged records that the convergence wait has elapsed.
type Converged struct{}

// Dropped ends a migration that has nothing to do (the resource is already
// at the target; paper 000 §5.4).
type Dropped struct {
	Reason string `msgpack:"reason"`
}

// HardDeleteLocked records the hard-delete lock (Algorithm 1 line 5): the
// historical copy starts, of every service in Services (the source's
// services that own the resource's kind). The source's stores learn the
// lock from the historical export requests, which carry it as their
// authority (contract.ExportRequest.Authority): the first one installs it
// before it issues the sync token. The escalation of a migration whose
// convergence wait has just elapsed is the same step (no Converged event);
// ConvergedAt is then the escalation's At.
type HardDeleteLocked struct {
	Expiry time.Time `msgpack:"ex"`
	// At is when the escalation was written (before this event's append).
	At       time.Time `msgpack:"at,omitempty"`
	Services []string  `msgpack:"svcs,omitempty"`
	// Since is, per service, the change sequence its historical copy
	// starts after: a move back within the reverse window copies only what
	// changed at the source since the swap that moved the resource away
	// (the old location still holds the rest). A service absent here
	// copies everything, resetting the target first.
	Since map[string]uint64 `msgpack:"since,omitempty"`
	// ReverseOf names that earlier migration (with Since).
	ReverseOf string `msgpack:"revof,omitempty"`
}

// PageCopied checkpoints one historical page exported from the source and
// imported at the target (Algorithm 1 line 8).
type PageCopied struct {
	Service    string   `msgpack:"svc"`
	Mode       uint8    `msgpack:"mode"`
	Cursor     uint64   `msgpack:"cur"`
	Next       uint64   `msgpack:"next"`
	SyncToken  uint64   `msgpack:"tok"`
	Count      int      `msgpack:"n"`
	More       bool     `msgpack:"more"`
	Dependents []string `msgpack:"deps,omitempty"`
	// ExportMs is how long the source took to export the page: the
	// tenant brake's source-latency sample (State.SourceLatency).
	ExportMs int64 `msgpack:"exms,omitempty"`
}

// PagesCopied checkpoints the next historical page of each of several
// services, copied concurrently: still one checkpoint per page (Algorithm 1
// line 8), but one synced append for all of them.
type PagesCopied struct {
	Pages []PageCopied `msgpack:"pages"`
}

// DeltasCopied is PagesCopied for delta pages (Algorithm 1 line 13).
type DeltasCopied struct {
	Pages []DeltaCopied `msgpack:"pages"`
}

// Renewed records an extension of the hard-delete lock (paper 001 §5.2).
type Renewed struct {
	Expiry time.Time `msgpack:"ex"`
}

// WriteLocked records the write lock (Algorithm 1 line 12); Expiry is the
// Phase 3 abort threshold and is never extended. The delta starts: its
// export requests carry the write lock as the source's authority
// (exporting), which each installs before it reads. At is when the
// escalation was written, the start of the write-blocked window.
type WriteLocked struct {
	Expiry time.Time `msgpack:"ex"`
	At     time.Time `msgpack:"at,omitempty"`
}

// DeltaCopied checkpoints one delta page (Algorithm 1 line 13).
type DeltaCopied struct {
	Service string `msgpack:"svc"`
	Cursor  uint64 `msgpack:"cur"`
	Next    uint64 `msgpack:"next"`
	Count   int    `msgpack:"n"`
	More    bool   `msgpack:"more"`
	// Dependents are resources referenced by the page's records.
	Dependents []string `msgpack:"deps,omitempty"`
	// TargetSeq and TargetSum, on a service's last delta page, are the
	// target's change sequence after its import and a sum of its slice
	// digests then: what the resource's copy at the target was when it
	// was validated (0: not known). A move back within the reverse window
	// starts after TargetSeq, and only where the old location's digests
	// still sum to TargetSum.
	TargetSeq uint64 `msgpack:"tseq,omitempty"`
	TargetSum uint64 `msgpack:"tsum,omitempty"`
}

// Validated records the pre-cutover validation (paper 001 §5.3).
type Validated struct {
	OK       bool          `msgpack:"ok"`
	Detail   string        `msgpack:"detail,omitempty"`
	Duration time.Duration `msgpack:"dur"`
	Slices   int           `msgpack:"slices"`
}

// Swapped records the atomic cutover (paper 001 §4.1.4).
//
// The step that swaps right after a successful validation records the
// validation here (Validation non-nil) instead of in a Validated event of
// its own; and when it could also tell both regions their authority at the
// swap's revision, it schedules the cleanup here (CleanupAt non-zero)
// instead of in a CleanupScheduled event. One synced append for what were
// three.
//
// When the step that copied the last delta pages also validated and
// swapped, Swapped checkpoints those pages too (Deltas, applied before the
// swap): the write-blocked window is then two synced appends long.
type Swapped struct {
	// At is when the swap's conditional write returned: the write-blocked
	// window ends there, whatever the step did after it (the regions'
	// authority) before it appended this event. Zero in a
	// swap recognised after the fact; the event's time stands in.
	At time.Time `msgpack:"at,omitempty"`
	// Rev is the routing revision the swap committed, at which the old
	// source is a secondary (0 in a swap recognised after the fact): the
	// source's cleanup is stamped with it without reading the document.
	Rev        uint64        `msgpack:"rev,omitempty"`
	Validation *Validated    `msgpack:"val,omitempty"`
	CleanupAt  time.Time     `msgpack:"cleanup,omitempty"`
	Deltas     []DeltaCopied `msgpack:"deltas,omitempty"`
}

// CleanupScheduled records when the source data will be deleted (the
// cleanup window after the swap).
type CleanupScheduled struct {
	At time.Time `msgpack:"at"`
}

// Completed ends a successful migration, with its figures.
type Completed struct {
	Figures Figures `msgpack:"fig"`
}

// Figures are the per-migration measurements (paper 001 §6.2).
type Figures struct {
	PreLockMs    int64 `msgpack:"pre"`
	HistoricalMs int64 `msgpack:"hist"`
	WriteLockMs  int64 `msgpack:"wl"`
	CutoverMs    int64 `msgpack:"cut"`
	TotalMs      int64 `msgpack:"total"`
	Attempts     int   `msgpack:"attempts"`
	Records      int   `msgpack:"recs"`
	// WriteBlockedMs is how long the resource's writes were blocked over
	// every attempt (State.WriteBlocked): the successful one's write lock
	// and those of attempts rolled back in Phase 3.
	WriteBlockedMs int64 `msgpack:"wblk,omitempty"`
}

// CleanedUp records that the source data was deleted after the window.
type CleanedUp struct {
	Records int `msgpack:"n"`
}

// StepFailed records a transient failure of a step; the third in one phase
// rolls the migration back (paper 001 §3.5).
type StepFailed struct {
	Phase Phase  `msgpack:"phase"`
	Error string `msgpack:"err"`
}

// RolledBack records a completed rollback: locks released, the source told
// its authority again, the target cleaned (Algorithm 1 line 16).
type RolledBack struct {
	Reason string `msgpack:"reason"`
	Phase  Phase  `msgpack:"phase"`
}

// Rescheduled starts a fresh attempt with a fresh token after a backoff.
type Rescheduled struct {
	Attempt int       `msgpack:"attempt"`
	Token   string    `msgpack:"tok"`
	At      time.Time `msgpack:"at"`
}

// Failed ends a migration that will not be retried.
type Failed struct {
	Reason string `msgpack:"reason"`
}

// ChildStarted records the start of a child migration for a dependent
// resource (Algorithm 1 line 9).
type ChildStarted struct {
	Resource    string `msgpack:"res"`
	MigrationID string `msgpack:"mid"`
}

// CancelRequested asks the migration to roll back and stop.
type CancelRequested struct {
	Reason string `msgpack:"reason,omitempty"`
}

// TenantStarted opens a tenant fan-out.
type TenantStarted struct {
	Tenant      string   `msgpack:"tenant"`
	Target      string   `msgpack:"tgt"`
	Resources   []string `msgpack:"res"`
	Concurrency int      `msgpack:"conc"`
	// MaxWriteBlock is every child's write-block budget.
	MaxWriteBlock time.Duration `msgpack:"mwb,omitempty"`
	// Rate, MaxWriteLockP99 and MaxSourceLatency are StartTenant's.
	Rate             int           `msgpack:"rate,omitempty"`
	MaxWriteLockP99  time.Duration `msgpack:"brake,omitempty"`
	MaxSourceLatency time.Duration `msgpack:"brakelat,omitempty"`
}

// TenantProgress records a child started or finished by a tenant fan-out.
type TenantProgress struct {
	// Started is the resource whose migration was started ("" if none).
	Started string `msgpack:"started,omitempty"`
	// StartedID is its migration id.
	StartedID string `msgpack:"sid,omitempty"`
	// Finished is the resource whose migration ended ("" if none).
	Finished string `msgpack:"finished,omitempty"`
	// Outcome is the finished migration's status.
	Outcome Status `msgpack:"outcome,omitempty"`
	// Partition is the rate-limit partition of Started.
	Partition int `msgpack:"part,omitempty"`
	// BlockedMs is the finished migration's write-blocked time
	// (State.WriteBlocked), the brake's sample.
	BlockedMs int64 `msgpack:"blk,omitempty"`
}

// Paused holds a migration (or a tenant move) where it stands: it takes
// no step until Resumed, except renewing the locks it holds. Recorded in
// any phase; in Phase 3 it takes effect after the swap or the rollback.
type Paused struct {
	Reason string `msgpack:"reason,omitempty"`
	// ByParent marks a child paused by its tenant move's pause (which
	// resumes it); an operator's own pause of a child is left alone.
	ByParent bool `msgpack:"parent,omitempty"`
	// Sent is the operator's command's (Pause.Sent; zero from a tenant
	// move).
	Sent time.Time `msgpack:"sent,omitempty"`
}

// Resumed ends a pause.
type Resumed struct {
	ByParent bool      `msgpack:"parent,omitempty"`
	Sent     time.Time `msgpack:"sent,omitempty"` // as Paused.Sent
}

// Throttled sets a migration's copy rate, or a tenant move's concurrency
// and rate: by an operator, by the tenant move for its children, or by the
// brake (Auto, with the Reason that tripped it).
type Throttled struct {
	// Concurrency is a tenant move's children at once (0 on a migration).
	Concurrency int `msgpack:"conc,omitempty"`
	// Rate is the copy cap in records a second (0: none).
	Rate   int    `msgpack:"rate,omitempty"`
	Auto   bool   `msgpack:"auto,omitempty"`
	Reason string `msgpack:"reason,omitempty"`
	// Sent is the operator's command's (Throttle.Sent; zero otherwise).
	Sent time.Time `msgpack:"sent,omitempty"`
}

// ForceReleased is the audit event of an admin force-release.
type ForceReleased struct {
	Resource string `msgpack:"res"`
	// Approvers are the approving operators' canonical names
	// (approval.Canonical).
	Approvers []string `msgpack:"approvers"`
	// ApprovalIDs are the ids of the signed approvals the orchestrator
	// verified (approval.Approval.ID), one per approver; none when a
	// development orchestrator took unsigned names.
	ApprovalIDs []string `msgpack:"aids,omitempty"`
	Reason      string   `msgpack:"reason"`
}

// FenceForceCleared is the audit event of an operator's repair of a
// resource's authority records at a region (`cutover fence clear`),
// recorded by the orchestrator that repaired them on an admin aggregate of
// its own.
type FenceForceCleared struct {
	Resource string `msgpack:"res"`
	Region   string `msgpack:"region"`
	// Services are the services at Region whose record was repaired.
	Services []string `msgpack:"svcs"`
	// Previous is the record replaced (the first service's), and
	// Repaired the record installed, as the admission table writes them
	// (contract.Authority.String).
	Previous string `msgpack:"prev,omitempty"`
	Repaired string `msgpack:"auth,omitempty"`
	// Repairs are the records replaced, one per service of Services.
	Repairs     []RepairedRecord `msgpack:"repairs,omitempty"`
	Approvers   []string         `msgpack:"approvers"`
	ApprovalIDs []string         `msgpack:"aids,omitempty"`
	Reason      string           `msgpack:"reason"`
	// Failed says why the repair stopped before every stranded record was
	// repaired ("" when it did not).
	Failed string `msgpack:"failed,omitempty"`
	// Note qualifies the event: a command delivered again after an
	// earlier delivery was authorised finds nothing left to repair.
	Note string `msgpack:"note,omitempty"`
}

// RepairedRecord is one service's authority record replaced by a fence
// clear: its role and until (Unix ms; 0: none) and the record as the
// admission table writes it.
type RepairedRecord struct {
	Service  string `msgpack:"svc"`
	Role     string `msgpack:"role"`
	Until    int64  `msgpack:"until,omitempty"`
	Previous string `msgpack:"prev"`
}

// AdminRefused is the audit event of a two-person command the
// orchestrator refused (force-release, fence clear): nothing was changed.
// It is the first and only event of the command's admin aggregate.
type AdminRefused struct {
	// Command is the command's type (TypeForceRelease, TypeFenceClear).
	Command   string   `msgpack:"cmd"`
	Resource  string   `msgpack:"res"`
	Region    string   `msgpack:"region,omitempty"`
	Approvers []string `msgpack:"approvers"`
	Reason    string   `msgpack:"reason"`
	// Code classifies the refusal (RefusedApprovals, …); Refusal says
	// why, naming what was refused.
	Code    string `msgpack:"code"`
	Refusal string `msgpack:"refusal"`
}

// Codes of AdminRefused.
const (
	// RefusedApprovals: the approvals do not authorise the command.
	RefusedApprovals = "approvals"
	// RefusedInvalid: a malformed resource or region.
	RefusedInvalid = "invalid"
	// RefusedNotFound: no routing document.
	RefusedNotFound = "not-found"
	// RefusedUnserved: no service answers at the region.
	RefusedUnserved = "unserved"
	// RefusedInUse: a migration in flight holds the region.
	RefusedInUse = "in-use"
	// RefusedNothing: nothing to repair.
	RefusedNothing = "nothing"
	// RefusedFailed: the operation failed before it changed anything.
	RefusedFailed = "failed"
)

// Type implements Body.
func (AdminRefused) Type() string { return TypeAdminRefused }

// Type implements Body.
func (FenceForceCleared) Type() string { return TypeFenceCleared }

// Type implements Body.
func (Requested) Type() string { return TypeRequested }

// Type implements Body.
func (PreLocked) Type() string { return TypePreLocked }

// Type implements Body.
func (Converged) Type() string { return TypeConverged }

// Type implements Body.
func (Dropped) Type() string { return TypeDropped }

// Type implements Body.
func (HardDeleteLocked) Type() string { return TypeHardDeleteLocked }

// Type implements Body.
func (PageCopied) Type() string { return TypePageCopied }

// Type implements Body.
func (PagesCopied) Type() string { return TypePagesCopied }

// Type implements Body.
func (DeltasCopied) Type() string { return TypeDeltasCopied }

// Type implements Body.
func (Renewed) Type() string { return TypeRenewed }

// Type implements Body.
func (WriteLocked) Type() string { return TypeWriteLocked }

// Type implements Body.
func (DeltaCopied) Type() string { return TypeDeltaCopied }

// Type implements Body.
func (Validated) Type() string { return TypeValidated }

// Type implements Body.
func (Swapped) Type() string { return TypeSwapped }

// Type implements Body.
func (CleanupScheduled) Type() string { return TypeCleanupScheduled }

// Type implements Body.
func (Completed) Type() string { return TypeCompleted }

// Type implements Body.
func (CleanedUp) Type() string { return TypeCleanedUp }

// Type implements Body.
func (StepFailed) Type() string { return TypeStepFailed }

// Type implements Body.
func (RolledBack) Type() string { return TypeRolledBack }

// Type implements Body.
func (Rescheduled) Type() string { return TypeRescheduled }

// Type implements Body.
func (Failed) Type() string { return TypeFailed }

// Type implements Body.
func (ChildStarted) Type() string { return TypeChildStarted }

// Type implements Body.
func (CancelRequested) Type() string { return TypeCancelRequested }

// Type implements Body.
func (Paused) Type() string { return TypePaused }

// Type implements Body.
func (Resumed) Type() string { return TypeResumed }

// Type implements Body.
func (Throttled) Type() string { return TypeThrottled }

// Type implements Body.
func (TenantStarted) Type() string { return TypeTenantStarted }

// Type implements Body.
func (TenantProgress) Type() string { return TypeTenantProgress }

// Type implements Body.
func (ForceReleased) Type() string { return TypeForceReleased }

package events

import "time"

// Command type names (the last token of cutover.cmd.<type>).
const (
	TypeStart        = "start"
	TypeStartTenant  = "start-tenant"
	TypeCancel       = "cancel"
	TypeForceRelease = "force-release"
	TypeFenceClear   = "fence-clear"
	TypePause        = "pause"
	TypeResume       = "resume"
	TypeThrottle     = "throttle"
)

// Start asks for one resource's migration to Target (paper 001 Algorithm 1).
type Start struct {
	// Resource is "kind/id".
	Resource string `msgpack:"res"`
	// Target is the target region.
	Target string `msgpack:"tgt"`
	// Parent is the migration (or tenant migration) that started this one;
	// with a parent the migration id is derived from (parent, resource,
	// target), so a replayed start creates nothing new.
	Parent string `msgpack:"parent,omitempty"`
	// Tenant names the tenant fan-out this start belongs to, if any.
	Tenant string `msgpack:"tenant,omitempty"`
	// Attempt is the first attempt number (0 means 1).
	Attempt int `msgpack:"attempt,omitempty"`
	// MigrationID, when set, is the id to use (callers that need to know it
	// up front); otherwise it is derived from the command id.
	MigrationID string `msgpack:"mid,omitempty"`
	// MaxWriteBlock is the write-block budget: Phase 3 rolls back rather
	// than hold the resource's writes longer (0: the write lease bounds
	// it).
	MaxWriteBlock time.Duration `msgpack:"mwb,omitempty"`
	// Rate caps the historical copy at this many records a second (0: no
	// cap). Phase 3's delta is never throttled: it holds the write lock.
	Rate int `msgpack:"rate,omitempty"`
}

// StartTenant fans a tenant's resources out into one migration each, at
// most Concurrency at a time.
type StartTenant struct {
	Tenant      string   `msgpack:"tenant"`
	Target      string   `msgpack:"tgt"`
	Resources   []string `msgpack:"res"`
	Concurrency int      `msgpack:"conc,omitempty"`
	// MigrationID, when set, is the tenant migration's id.
	MigrationID string `msgpack:"mid,omitempty"`
	// MaxWriteBlock is every child's write-block budget (Start).
	MaxWriteBlock time.Duration `msgpack:"mwb,omitempty"`
	// Rate caps the copy of all the children together, in records a
	// second (0: no cap): each of Concurrency children copies at
	// Rate/Concurrency.
	Rate int `msgpack:"rate,omitempty"`
	// MaxWriteLockP99 is the brake: when the write-blocked time of the
	// children that ended lately passes it at the 99th percentile, the
	// move halves its concurrency (0: no brake).
	MaxWriteLockP99 time.Duration `msgpack:"brake,omitempty"`
	// MaxSourceLatency is the brake on the source stores: when a running
	// child's slowest export page of its last step took longer, the move
	// halves its concurrency (0: no brake).
	MaxSourceLatency time.Duration `msgpack:"brakelat,omitempty"`
}

// Cancel rolls a migration back (before its swap) and fails it.
type Cancel struct {
	MigrationID string `msgpack:"mid"`
	Reason      string `msgpack:"reason,omitempty"`
}

// Pause holds a migration, or a tenant move, where it stands until Resume
// (recorded as Paused; a pause asked in Phase 3 takes effect after the swap
// or the rollback).
type Pause struct {
	MigrationID string `msgpack:"mid"`
	Reason      string `msgpack:"reason,omitempty"`
	// Sent is when the operator sent it: commands are applied
	// concurrently and may be redelivered, so a pause or resume sent
	// before the last one applied is stale and changes nothing.
	Sent time.Time `msgpack:"sent,omitempty"`
}

// Resume ends a Pause (recorded as Resumed).
type Resume struct {
	MigrationID string    `msgpack:"mid"`
	Sent        time.Time `msgpack:"sent,omitempty"` // as Pause.Sent
}

// Throttle changes a running migration's or tenant move's copy rate and a
// tenant move's concurrency (recorded as Throttled).
type Throttle struct {
	MigrationID string `msgpack:"mid"`
	// Concurrency is a tenant move's new number of children at once (0:
	// unchanged).
	Concurrency int `msgpack:"conc,omitempty"`
	// Rate is the new copy rate in records a second (0: unchanged,
	// NoRate: no cap).
	Rate int `msgpack:"rate,omitempty"`
	// Sent orders throttles as Pause.Sent orders pauses.
	Sent time.Time `msgpack:"sent,omitempty"`
}

// NoRate is Throttle.Rate asking for no cap.
const NoRate = -1

// ForceRelease clears a stuck lock without its token; it needs approvals
// from at least two distinct operators (paper 000 §8) and leaves an audit
// event (ForceReleased, or AdminRefused).
type ForceRelease struct {
	Resource string `msgpack:"res"`
	// Approvers name the approving operators (`--approver`); with
	// Approvals they must be exactly the operators who signed.
	Approvers []string `msgpack:"approvers"`
	// Approvals are the operators' signed approvals (orchestrator/approval
	// tokens); an orchestrator with an operator registry verifies them and
	// refuses a command without them. Only a development orchestrator
	// takes Approvers alone.
	Approvals []string `msgpack:"approvals,omitempty"`
	Reason    string   `msgpack:"reason"`
}

// FenceClear repairs a resource's stranded authority records at a region
// (`cutover fence clear`): the orchestrator verifies the approvals as for
// ForceRelease, repairs through the contract and records the audit event
// (FenceForceCleared, or AdminRefused).
type FenceClear struct {
	Resource  string   `msgpack:"res"`
	Region    string   `msgpack:"region"`
	Approvers []string `msgpack:"approvers"`
	Approvals []string `msgpack:"approvals,omitempty"`
	Reason    string   `msgpack:"reason"`
}

// Type implements Body.
func (Start) Type() string { return TypeStart }

// Type implements Body.
func (StartTenant) Type() string { return TypeStartTenant }

// Type implements Body.
func (Cancel) Type() string { return TypeCancel }

// Type implements Body.
func (Pause) Type() string { return TypePause }

// Type implements Body.
func (Resume) Type() string { return TypeResume }

// Type implements Body.
func (Throttle) Type() string { return TypeThrottle }

// Type implements Body.
func (ForceRelease) Type() string { return TypeForceRelease }

// Type implements Body.
func (FenceClear) Type() string { return TypeFenceClear }

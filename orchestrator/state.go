package orchestrator

import (
	"fmt"
	"slices"
	"time"

	"github.com/cutover/cutover/events"
)

// Fold replays a migration's events from the first and returns its state;
// nil for no events. Fold(all events) equals the State carried by the last
// event (state-carrying events). Errors: Apply's, with the event's place.
func Fold(evs []*events.Envelope) (*events.State, error) {
	var s *events.State
	for i, e := range evs {
		var err error
		if s, err = Apply(s, e); err != nil {
			return nil, fmt.Errorf("event %d (%s): %w", i+1, e.ID, err)
		}
	}
	return s, nil
}

// Apply returns the state after e. s is not modified (nil is the empty
// state). Apply is pure: time comes from the envelope only. Errors:
// ErrIllegalTransition when the transition table (transitions.txt) does
// not allow e in s's phase or the phase e leads to.
func Apply(s *events.State, e *events.Envelope) (*events.State, error) {
	var n *events.State
	from := phaseNew
	if s == nil {
		n = &events.State{ID: e.MigrationID, Status: events.StatusActive}
	} else {
		n = s.Clone()
		from = s.Phase
	}
	if e.Body == nil {
		return nil, fmt.Errorf("%w: an event without a body", ErrIllegalTransition)
	}
	n.Events++
	at := e.Time.UTC()
	prev := n.Phase
	switch b := e.Body.(type) {
	case events.Requested:
		n.Resource, n.Target, n.Parent, n.Tenant = b.Resource, b.Target, b.Parent, b.Tenant
		n.Attempt, n.MaxAttempts, n.Token = b.Attempt, b.MaxAttempts, b.Token
		n.MaxWriteBlock, n.Rate = b.MaxWriteBlock, b.Rate
		n.Phase, n.Status = events.PhaseRequested, events.StatusActive
		n.RequestedAt, n.AttemptAt = at, at
	case events.PreLocked:
		n.Source, n.WaitUntil, n.LockExpiry = b.Source, b.WaitUntil.UTC(), b.Expiry.UTC()
		n.Phase, n.PreLockedAt = events.PhasePreLocked, at
	case events.Converged:
		n.Phase, n.ConvergedAt, n.WaitUntil = events.PhaseConverged, at, at
	case events.Dropped:
		n.Phase, n.Status, n.Reason, n.EndedAt = events.PhaseDone, events.StatusDropped, b.Reason, at
	case events.HardDeleteLocked:
		lockedAt := at
		if !b.At.IsZero() {
			lockedAt = b.At.UTC()
		}
		if n.ConvergedAt.IsZero() { // escalated in the step the wait ended
			n.ConvergedAt = lockedAt
		}
		n.HardDeleteAt, n.LockExpiry = lockedAt, b.Expiry.UTC()
		startHistorical(n, b.Services)
		for i := range n.Services {
			n.Services[i].Since = b.Since[n.Services[i].Service]
		}
	case events.PageCopied:
		n.SourceLatency = 0
		applyPage(n, b)
	case events.PagesCopied:
		n.SourceLatency = 0
		for _, pg := range b.Pages {
			applyPage(n, pg)
		}
	case events.Renewed:
		n.LockExpiry = b.Expiry.UTC()
	case events.WriteLocked:
		lockedAt := at
		if !b.At.IsZero() {
			lockedAt = b.At.UTC()
		}
		n.Phase, n.WriteLockedAt, n.LockExpiry = events.PhaseDelta, lockedAt, b.Expiry.UTC()
	case events.DeltaCopied:
		applyDelta(n, b)
	case events.DeltasCopied:
		for _, pg := range b.Pages {
			applyDelta(n, pg)
		}
	case events.Validated:
		if b.OK {
			n.Phase = events.PhaseValidated
		} else if n.Abort == "" {
			n.Abort = "validation failed: " + b.Detail
		}
	case events.Swapped:
		for _, pg := range b.Deltas {
			applyDelta(n, pg)
		}
		n.Phase, n.SwappedAt, n.LockExpiry = events.PhaseSwapped, at, zeroTime
		n.SwapRev = b.Rev
		if !b.At.IsZero() {
			n.SwappedAt = b.At.UTC() // the swap's commit, not the step's end
		}
		if !n.WriteLockedAt.IsZero() {
			n.WriteBlocked += n.SwappedAt.Sub(n.WriteLockedAt)
		}
		if !b.CleanupAt.IsZero() {
			n.Phase, n.CleanupAt = events.PhaseCleanupScheduled, b.CleanupAt.UTC()
		}
	case events.CleanupScheduled:
		n.Phase, n.CleanupAt = events.PhaseCleanupScheduled, b.At.UTC()
	case events.Completed:
		f := b.Figures
		n.Phase, n.Status, n.Figures, n.EndedAt = events.PhaseDone, events.StatusCompleted, &f, at
	case events.CleanedUp:
		n.SourceCleaned = true
	case events.StepFailed:
		n.Failures++
		n.Reason = b.Error
	case events.RolledBack:
		if !n.WriteLockedAt.IsZero() { // writes were blocked until the release
			n.WriteBlocked += at.Sub(n.WriteLockedAt)
		}
		n.Phase, n.Reason, n.Abort = events.PhaseRolledBack, b.Reason, ""
		n.PendingChildren = nil
	case events.Rescheduled:
		n.Attempt, n.Token, n.WaitUntil = b.Attempt, b.Token, b.At.UTC()
		n.Phase, n.AttemptAt = events.PhaseRequested, at
		n.Services, n.Source, n.LockExpiry = nil, "", at
		n.PreLockedAt, n.ConvergedAt, n.HardDeleteAt, n.WriteLockedAt = zeroTime, zeroTime, zeroTime, zeroTime
	case events.Failed:
		n.Phase, n.Status, n.Reason, n.EndedAt = events.PhaseDone, events.StatusFailed, b.Reason, at
	case events.ChildStarted:
		n.PendingChildren = slices.DeleteFunc(n.PendingChildren, func(r string) bool { return r == b.Resource })
		if !slices.Contains(n.Children, b.Resource) {
			n.Children = append(n.Children, b.Resource)
		}
	case events.CancelRequested:
		if !n.Status.Terminal() {
			n.Cancelled = true
			if n.Abort == "" {
				n.Abort = "cancelled"
				if b.Reason != "" {
					n.Abort += ": " + b.Reason
				}
			}
		}
	case events.ForceReleased:
		if !n.Status.Terminal() && n.Phase != events.PhaseSwapped && n.Phase != events.PhaseCleanupScheduled {
			n.Cancelled = true
			if n.Abort == "" {
				n.Abort = "force-released"
			}
		}
	case events.Paused:
		n.PauseSentAt = later(n.PauseSentAt, b.Sent)
		if !n.Status.Terminal() && !n.Paused {
			n.Paused, n.PausedAt, n.PauseReason, n.PausedByParent = true, at, b.Reason, b.ByParent
		}
	case events.Resumed:
		n.PauseSentAt = later(n.PauseSentAt, b.Sent)
		if n.Paused && (!b.ByParent || n.PausedByParent) { // a tenant resumes only what it paused
			n.PausedFor += at.Sub(n.PausedAt)
			n.Paused, n.PausedAt, n.PauseReason, n.PausedByParent = false, zeroTime, "", false
		}
	case events.Throttled:
		n.Rate, n.ThrottleSentAt = b.Rate, later(n.ThrottleSentAt, b.Sent)
		if f := n.Fanout; f != nil {
			f.Rate = b.Rate
			if b.Concurrency > 0 {
				f.Concurrency = b.Concurrency
			}
			if b.Auto {
				f.Brakes++
				f.BrakeReason, f.Blocked, f.LastBrakeAt = b.Reason, nil, at // fresh evidence at the new concurrency
			}
		}
	case events.TenantStarted:
		n.Phase, n.Status, n.Tenant, n.Target = events.PhaseTenant, events.StatusActive, b.Tenant, b.Target
		n.RequestedAt, n.AttemptAt, n.Attempt = at, at, 1
		n.Fanout = &events.TenantState{Tenant: b.Tenant, Target: b.Target, Resources: slices.Clone(b.Resources), Concurrency: b.Concurrency,
			MaxWriteBlock: b.MaxWriteBlock, Rate: b.Rate, MaxWriteLockP99: b.MaxWriteLockP99,
			MaxSourceLatency: b.MaxSourceLatency}
	case events.TenantProgress:
		if f := n.Fanout; f != nil {
			if b.Started != "" {
				f.Next++
				f.Active = append(f.Active, events.TenantChild{Resource: b.Started, MigrationID: b.StartedID})
				for len(f.LastStart) <= b.Partition {
					f.LastStart = append(f.LastStart, zeroTime)
				}
				f.LastStart[b.Partition] = at
			}
			if b.Finished != "" {
				i := slices.IndexFunc(f.Active, func(c events.TenantChild) bool { return c.Resource == b.Finished })
				if i >= 0 {
					f.Active = slices.Delete(f.Active, i, i+1)
					if f.MaxWriteLockP99 > 0 && b.Outcome == events.StatusCompleted {
						f.Blocked = append(f.Blocked, b.BlockedMs)
						if len(f.Blocked) > events.BrakeWindow {
							f.Blocked = slices.Delete(f.Blocked, 0, len(f.Blocked)-events.BrakeWindow)
						}
					}
					switch b.Outcome {
					case events.StatusCompleted:
						f.Completed++
					case events.StatusDropped:
						f.Dropped++
					default:
						f.Failed++
					}
				}
			}
		}
	}
	if err := allows(e.Body.Type(), from, n.Phase); err != nil {
		return nil, err
	}
	if n.Phase != prev {
		n.Failures = 0
	}
	return n, nil
}

var zeroTime time.Time

// later is the later of a and b, in UTC.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b.UTC()
	}
	return a
}

// addPending queues dependents for child migrations (paper 001 Algorithm 1
// line 9), each once.
func addPending(n *events.State, deps []string) {
	for _, d := range deps {
		if !slices.Contains(n.Children, d) && !slices.Contains(n.PendingChildren, d) && d != n.Resource {
			n.PendingChildren = append(n.PendingChildren, d)
		}
	}
}

// startHistorical records the hard-delete lock: the historical copy of
// svcs starts, one progress entry per service.
func startHistorical(n *events.State, svcs []string) {
	n.Phase = events.PhaseHistorical
	n.Services = nil
	for _, svc := range svcs {
		n.Services = append(n.Services, events.ServiceProgress{Service: svc})
	}
}

// applyPage checkpoints one historical page into n.
func applyPage(n *events.State, b events.PageCopied) {
	if p := n.Service(b.Service); p != nil {
		p.Started, p.SyncToken, p.Cursor, p.HistoricalDone = true, b.SyncToken, b.Next, !b.More
		p.Pages++
		p.Records += b.Count
	}
	n.SourceLatency = max(n.SourceLatency, time.Duration(b.ExportMs)*time.Millisecond)
	addPending(n, b.Dependents)
}

// applyDelta checkpoints one delta page into n.
func applyDelta(n *events.State, b events.DeltaCopied) {
	if p := n.Service(b.Service); p != nil {
		p.DeltaCursor, p.DeltaDone = b.Next, !b.More
		if b.TargetSeq != 0 {
			p.TargetSeq, p.TargetSum = b.TargetSeq, b.TargetSum
		}
		p.Pages++
		p.Records += b.Count
	}
	addPending(n, b.Dependents)
}

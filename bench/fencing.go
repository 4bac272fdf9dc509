package bench

import (
	"fmt"

	"github.com/cutover/cutover/orchestrator"
)

// Fencing strategies of the fence suite. Only FencingProtocol is the
// design; the others exist so that `cutover bench fence` can migrate one
// workload each way and measure what the paper could only infer (paper 001
// §6.5). FencePolicy gives each one's orchestrator.FencePolicy.
const (
	// FencingProtocol is this design: the source is hard-delete fenced in
	// Phase 2 (deletes become tombstones, writes flow) and write fenced only
	// in Phase 3 (paper 001 Algorithm 1).
	FencingProtocol = "protocol"
	// FencingStopAndCopy write-fences the source before the historical copy:
	// writes are refused in Phases 2–3. The routing lock still follows the
	// protocol (hard-delete lock in Phase 2); the stores' authority
	// (exporting from the hard-delete lock on) is what users
	// hit (HTTP 423).
	FencingStopAndCopy = "stop-and-copy"
	// FencingReadOnly write-fences the source right after the pre-lock:
	// writes are refused in Phases 1–3. The routing lock cannot take a write
	// lock before convergence (paper 000 §4.1), so the store fence alone
	// carries the block during the convergence wait, set on the first step
	// after the PreLocked event.
	FencingReadOnly = "read-only"
	// FencingDeleteBlocking stands for a design that refuses deletes instead
	// of tombstoning them in Phases 2–3. The stores have no such fence level,
	// so the engine runs the protocol unchanged and the bench measures the
	// window in which such a design would refuse a delete (hard-delete lock
	// to swap).
	FencingDeleteBlocking = "delete-blocking"
)

// FencePolicy returns the orchestrator fence policy of a fencing strategy
// ("" is FencingProtocol). Errors: ErrUnknownStrategy.
func FencePolicy(strategy string) (orchestrator.FencePolicy, error) {
	switch strategy {
	case "", FencingProtocol, FencingDeleteBlocking:
		return orchestrator.ProtocolFencing(), nil
	case FencingStopAndCopy:
		return stopAndCopy{}, nil
	case FencingReadOnly:
		return readOnly{}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownStrategy, strategy)
}

// stopAndCopy write-fences the source from the hard-delete lock on.
type stopAndCopy struct{}

var _ orchestrator.FencePolicy = stopAndCopy{}

func (stopAndCopy) WriteFenceAtPreLock() bool { return false }
func (stopAndCopy) WriteFenceInPhase2() bool  { return true }

// readOnly write-fences the source from the pre-lock on.
type readOnly struct{}

var _ orchestrator.FencePolicy = readOnly{}

func (readOnly) WriteFenceAtPreLock() bool { return true }
func (readOnly) WriteFenceInPhase2() bool  { return true }

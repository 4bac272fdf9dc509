package orchestrator

import "github.com/cutover/cutover/services/store"

// FencePolicy decides the store fences a worker sets at the source before
// Phase 3 (paper 001 Table 4). The protocol's policy (ProtocolFencing) is
// the default; other policies exist so that `cutover bench fence` can
// migrate one workload each way and measure what the paper could only
// infer (paper 001 §6.5); they live with the bench (package bench), and a
// worker is given one with WithFencePolicy. Phase 3's write fence and the
// post-swap fence are the protocol's in every policy. Implementations must
// be safe for concurrent use.
type FencePolicy interface {
	// WriteFenceAtPreLock reports whether the source is write fenced from
	// the pre-lock on: set on the first step after the PreLocked event,
	// before the convergence wait (the routing lock cannot be a write lock
	// before convergence, paper 000 §4.1, so the store fence alone carries
	// the block). The protocol: false (paper 001 §4.1.1).
	WriteFenceAtPreLock() bool
	// Phase2Fence is the fence level set at the source for the historical
	// copy, with the hard-delete lock and each renewal of it. The event
	// still records the hard-delete fence (it starts the historical copy).
	// The protocol: store.FenceHardDelete, deletes become tombstones and
	// writes flow (paper 001 §4.1.2, §4.3).
	Phase2Fence() store.FenceLevel
}

// ProtocolFencing returns the protocol's fence policy, the default: the
// source is hard-delete fenced in Phase 2 and write fenced only in Phase 3
// (paper 001 Algorithm 1).
func ProtocolFencing() FencePolicy { return protocolFencing{} }

type protocolFencing struct{}

var _ FencePolicy = protocolFencing{}

func (protocolFencing) WriteFenceAtPreLock() bool     { return false }
func (protocolFencing) Phase2Fence() store.FenceLevel { return store.FenceHardDelete }

package contract

import "context"

// FenceAdmin is the operator's side of the fence (`cutover fence clear`):
// removing a stranded fence whatever its token, for instance a post-swap
// fence left at what has become the primary (issue 14 #2). Participants
// and endpoints that support it implement it next to Participant and
// Endpoint; the caller checks the approvals and records the audit event.
// Implementations must be safe for concurrent use by any goroutine.
type FenceAdmin interface {
	// ForceClearFence removes resource's active fence whatever its token,
	// retires that token (a late fence request under it changes nothing),
	// and returns the fence it removed. No active fence (none, or only an
	// expired one): a *Error with CodeNotFound, and nothing changes.
	ForceClearFence(ctx context.Context, resource string) (Fence, error)
}

package services

import (
	"context"
	"sync"
)

// Routed carries, through a request's context, the routing revision the
// request's resource was routed by (set once the API has routed it). A
// service's reads of that resource pass it to the store, which refuses them
// with store.ErrMoved where a fence says that routing is too old
// (contract.Fence.RefusesRead, issue 15 #3): the resource is moving or has
// moved away from that region, and the API resolves it again. Reads of
// other resources (a message's media), and reads without one (a migration's
// own validation, tools), are never refused.
type Routed struct {
	mu       sync.Mutex
	resource string
	rev      uint64
}

type routedKey struct{}

// WithRouted returns ctx carrying a fresh *Routed, and it.
func WithRouted(ctx context.Context) (context.Context, *Routed) {
	r := &Routed{}
	return context.WithValue(ctx, routedKey{}, r), r
}

// SetRouted records that ctx's request on resource ("kind/id") was routed by
// revision rev, if ctx carries a *Routed.
func SetRouted(ctx context.Context, resource string, rev uint64) {
	if r, ok := ctx.Value(routedKey{}).(*Routed); ok {
		r.mu.Lock()
		r.resource, r.rev = resource, rev
		r.mu.Unlock()
	}
}

// RoutedRevision is the revision ctx's request on resource was routed by,
// 0 if none.
func RoutedRevision(ctx context.Context, resource string) uint64 {
	if r, ok := ctx.Value(routedKey{}).(*Routed); ok {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.resource == resource {
			return r.rev
		}
	}
	return 0
}

package services

import (
	"context"
	"sync"

	"github.com/cutover/cutover/services/contract"
)

// Routed carries, through a request's context, the authority the request's
// resource was routed by (kvrouting.Decision.Authority, set once the API
// has routed it). A service's reads of that resource pass it to the store,
// which admits them against its own authority record (contract.Admit): a
// read routed by an older revision, or reaching a store that is no longer
// the resource's location, is refused as moved and the API resolves it
// again. Reads of other resources (a message's media), and reads without
// one (a migration's own validation, tools), carry no stamp.
type Routed struct {
	mu       sync.Mutex
	resource string
	auth     contract.Authority
}

type routedKey struct{}

// WithRouted returns ctx carrying a fresh *Routed, and it.
func WithRouted(ctx context.Context) (context.Context, *Routed) {
	r := &Routed{}
	return context.WithValue(ctx, routedKey{}, r), r
}

// SetRouted records that ctx's request on resource ("kind/id") was routed
// with authority a, if ctx carries a *Routed.
func SetRouted(ctx context.Context, resource string, a contract.Authority) {
	if r, ok := ctx.Value(routedKey{}).(*Routed); ok {
		r.mu.Lock()
		r.resource, r.auth = resource, a
		r.mu.Unlock()
	}
}

// RoutedAuthority is the authority ctx's request on resource was routed
// with, zero if none.
func RoutedAuthority(ctx context.Context, resource string) contract.Authority {
	if r, ok := ctx.Value(routedKey{}).(*Routed); ok {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.resource == resource {
			return r.auth
		}
	}
	return contract.Authority{}
}

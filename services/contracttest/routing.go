package contracttest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cutover/cutover/kvrouting"
)

// Routing is an in-memory table of routing documents for a Harness whose
// implementation guards Cleanup with services.RoutingCleanupGuard: the
// guard reads it (Get) as it reads the routing bucket's leader, and the
// kit sets it (Route). The real bucket cannot cheaply be put in every
// state the kit needs (a swapped document takes a whole lock lifecycle).
// Safe for concurrent use.
type Routing struct {
	mu struct {
		sync.Mutex
		docs map[string]*kvrouting.Document
	}
}

// NewRouting returns an empty Routing: every resource is unknown.
func NewRouting() *Routing {
	r := &Routing{}
	r.mu.docs = map[string]*kvrouting.Document{}
	return r
}

// Get returns a copy of res's document. Errors: kvrouting.ErrNotFound.
func (r *Routing) Get(ctx context.Context, res kvrouting.Resource) (*kvrouting.Document, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.mu.docs[res.String()]
	if !ok {
		return nil, fmt.Errorf("%w: %s", kvrouting.ErrNotFound, res)
	}
	return d.Clone(), nil
}

// Route is a Harness.Route: resource's primary is primary and, unless
// target is "", a migration to target is in flight (the target is then the
// locked secondary). Errors: kvrouting.ErrInvalid for a malformed resource.
func (r *Routing) Route(resource, primary, target string) error {
	res, err := kvrouting.ParseResource(resource)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	d := &kvrouting.Document{Resource: res.String(), Primary: kvrouting.Location{Region: primary}, UpdatedAt: now}
	if target != "" {
		d.MigrationID, d.Target = "kit-migration", target
		d.Secondary = &kvrouting.Location{Region: target, Lock: kvrouting.Lock{Type: kvrouting.LockSecondary, Token: "kit-token", NotBefore: now, Expiry: now.Add(time.Hour)}}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.docs[res.String()] = d
	return nil
}

// Package httproute is what any service's HTTP API needs to take part in
// migrations, apart from the service: the routing decision per request
// (paper 001 §5.2, Table 4, taken at the region that executes, with its own
// routing view), re-resolution when a store says the resource has moved (a
// stale cache costs one leader read, never a 423 for its TTL), server-side
// write queueing behind a write lock, and the 423 shape with an honest
// Retry-After (paper 001 §4.4). The chat reference API (app/api) uses it as
// an outside service would:
//
//	rt, _ := httproute.New(httproute.Config{Resolver: rv, Serves: served, KV: kv, QueueWrites: 2 * time.Second})
//	mux.HandleFunc("POST /v1/notes/{id}", func(w http.ResponseWriter, r *http.Request) {
//		res := kvrouting.Resource{Kind: "notes", ID: r.PathValue("id")}
//		err := rt.Serve(w, r, &res, func(w http.ResponseWriter, r *http.Request) error {
//			route, err := rt.Route(w, r, res, kvrouting.OpNewWrite, "note")
//			if err != nil {
//				return err
//			}
//			... // write at route.Region with route.Decision.Authority
//		})
//		if err != nil {
//			httproute.WriteError(w, r, err, nil)
//		}
//	})
package httproute

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
)

// RegionHeader pins a request to a region when Config.AllowRegionPin is set
// (tests and the dev harness: it shows what a client routed to the wrong
// region by stale routing gets). The Table 4 decision is still taken at the
// pinned region, so a pin never bypasses a lock: mutations at a region that
// is not the primary are refused with 423.
const RegionHeader = "X-Cutover-Region"

// ServedByHeader names, on the response to every request on a resource, the
// region that served it: the primary in the server's routing view, or the
// pinned region. A client (and the chaos checker) learns from it where a
// write was accepted.
const ServedByHeader = "X-Cutover-Served-By"

// DefaultMaxBodyBytes caps the body buffered for a re-run.
const DefaultMaxBodyBytes = 1 << 20

// ErrInvalidConfig is returned by New for an unusable Config.
var ErrInvalidConfig = errors.New("httproute: invalid config")

// Config configures a Router. Zero values mean the documented defaults.
type Config struct {
	// Resolver resolves routing documents for every region that has no
	// entry in Resolvers (required unless every region has one).
	Resolver *kvrouting.Resolver
	// Resolvers are per-region resolvers (each region's services resolve
	// with their own caches and mirror). A request is first resolved with
	// DefaultRegion's resolver to find the primary, then re-resolved with
	// the primary's resolver, which decides.
	Resolvers map[string]*kvrouting.Resolver
	// DefaultRegion is the region whose resolver finds a request's primary
	// (required).
	DefaultRegion string
	// Serves reports whether this server executes requests for region
	// (required).
	Serves func(region string) bool
	// AllowRegionPin honours RegionHeader (tests, dev).
	AllowRegionPin bool
	// KV is the routing bucket: the write queue watches it (required when
	// QueueWrites > 0).
	KV jetstream.KeyValue
	// QueueWrites is how long a write refused by a write lock or fence in
	// force is parked, waiting for the resource's routing to change, before
	// the 423 goes out (0: no queueing, the 423 at once).
	QueueWrites time.Duration
	// QueueMax bounds the writes parked at once (default DefaultQueueMax);
	// QueuePerResource, those on one resource (default
	// DefaultQueuePerResource, at most QueueMax). A write that finds the
	// queue full gets its 423 at once.
	QueueMax, QueuePerResource int
	// QueueObserver, if set, sees every parked write's outcome and wait.
	QueueObserver QueueObserver
	// MaxBodyBytes caps a body buffered so that its request can run again
	// (default DefaultMaxBodyBytes); a longer one is not re-run.
	MaxBodyBytes int64
}

// Router routes a service's HTTP requests by their resources' routing
// documents. Safe for concurrent use.
type Router struct {
	cfg        Config
	queue      *writeQueue // nil: QueueWrites is 0
	reresolved atomic.Uint64
}

// New returns the Router of cfg. Errors: ErrInvalidConfig.
func New(cfg Config) (*Router, error) {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.QueueWrites > 0 {
		if cfg.QueueMax <= 0 {
			cfg.QueueMax = DefaultQueueMax
		}
		if cfg.QueuePerResource <= 0 {
			cfg.QueuePerResource = min(DefaultQueuePerResource, cfg.QueueMax)
		}
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case cfg.Serves == nil:
		return nil, bad("no Serves")
	case cfg.Resolver == nil && cfg.Resolvers[cfg.DefaultRegion] == nil:
		return nil, bad("no resolver for the default region %q", cfg.DefaultRegion)
	case cfg.QueueWrites < 0:
		return nil, bad("negative QueueWrites %s", cfg.QueueWrites)
	case cfg.QueueWrites > 0 && cfg.KV == nil:
		return nil, bad("QueueWrites without the routing bucket (KV)")
	}
	rt := &Router{cfg: cfg}
	if cfg.QueueWrites > 0 {
		rt.queue = newWriteQueue(cfg.KV, cfg.QueueMax, cfg.QueuePerResource)
	}
	return rt, nil
}

// Route is where a request goes and what it may do there.
type Route struct {
	// Region executes the request.
	Region string
	// Doc is the routing document the decision was taken on.
	Doc *kvrouting.Document
	// Decision is the Table 4 decision for the request's operation class
	// at Region, taken before any storage mutation; its Authority is the
	// stamp the region's stores admit the operation by.
	Decision kvrouting.Decision
}

// ResolverFor returns the resolver of region (Config.Resolvers, else
// Config.Resolver).
func (rt *Router) ResolverFor(region string) *kvrouting.Resolver {
	if rv := rt.cfg.Resolvers[region]; rv != nil {
		return rv
	}
	return rt.cfg.Resolver
}

// Route resolves res, picks the region that serves it (the primary, or the
// pinned region), names it in w's ServedByHeader (w may be nil: a side
// lookup that serves nothing), and takes the decision for op there (paper
// 001 §5.2); a request served at the primary carries the decision's
// authority to the stores' reads (services.SetRouted, in a context Serve
// prepared). what names the resource in a not-found message. Errors:
// *contract.Error — not_found (no routing document), invalid (bad id,
// unknown pinned region), unavailable (routing store down, or a region
// this server does not serve), locked "moved" (the region's own view names
// another primary).
func (rt *Router) Route(w http.ResponseWriter, r *http.Request, res kvrouting.Resource, op kvrouting.OpClass, what string) (Route, error) {
	ctx := r.Context()
	front := rt.ResolverFor(rt.cfg.DefaultRegion)
	rs, err := front.Resolve(ctx, res)
	if err != nil {
		return Route{}, RoutingError(err, what, res.ID)
	}
	if set, ok := ctx.Value(routedSetKey{}).(*routedSet); ok {
		set.add(res)
	}
	region := rs.Doc.Primary.Region
	pinned := false
	if pin := r.Header.Get(RegionHeader); pin != "" && rt.cfg.AllowRegionPin {
		pinned = true
		if !rt.cfg.Serves(pin) {
			return Route{}, contract.Errorf(contract.CodeInvalid, "pinned region %q is not served here", pin)
		}
		region = pin
	}
	if !rt.cfg.Serves(region) {
		return Route{}, contract.Errorf(contract.CodeUnavailable, "%s %q lives in region %s, which this server does not serve", what, res.ID, region)
	}
	// Which region served the request, on every response from here on
	// (also a 423 or an error of the region's services).
	if w != nil {
		w.Header().Set(ServedByHeader, region)
	}
	// The region that executes decides, with its own routing view.
	rv := rt.ResolverFor(region)
	if rv != front {
		if rs, err = rv.Resolve(ctx, res); err != nil {
			return Route{}, RoutingError(err, what, res.ID)
		}
	}
	if !pinned && region != rs.Doc.Primary.Region {
		// The front resolver's view sent the request to a region whose own
		// view names another primary: one of them is stale. Unrouted, the
		// region's services would serve their copy as it is (a read would
		// miss writes acknowledged at the primary), so the request
		// resolves again from the leader ("moved").
		return Route{}, &contract.Error{Code: contract.CodeLocked, Lock: contract.LockMoved,
			Message: "resource has moved to another region; resolve it again"}
	}
	d := rt.Decide(rs.Doc, region, op)
	if w != nil && region == rs.Doc.Primary.Region {
		// The services' reads carry this routing's authority to the
		// stores' admission; a read pinned elsewhere reads that region's
		// copy as it is.
		services.SetRouted(ctx, res.String(), d.Authority)
	}
	return Route{Region: region, Doc: rs.Doc, Decision: d}, nil
}

// Decide takes the decision for op at region on doc (a document just
// written: a new resource registered by this request).
func (rt *Router) Decide(doc *kvrouting.Document, region string, op kvrouting.OpClass) kvrouting.Decision {
	c := rt.ResolverFor(region).Config()
	return kvrouting.Decide(doc, region, op, c.Clock(), c.ClockSkew)
}

// RoutingError is a routing store's error as an API answers it: not_found
// (no routing document), invalid (a bad resource: "invalid resource id:
// longer than 200 bytes", never the routing library's own text), or the
// store's own (services.ToError: unavailable, ...). what names the
// resource.
func RoutingError(err error, what, id string) error {
	var ie *kvrouting.InvalidError
	switch {
	case errors.Is(err, kvrouting.ErrNotFound):
		return contract.Errorf(contract.CodeNotFound, "%s %q not found", what, id)
	case errors.As(err, &ie):
		return contract.Errorf(contract.CodeInvalid, "invalid %s", ie.Reason)
	case errors.Is(err, kvrouting.ErrInvalid):
		return contract.Errorf(contract.CodeInvalid, "invalid %s id %q", what, id)
	}
	return services.ToError(err)
}

// Serve runs h for one request and gives the request its second chances:
// r's context carries the routed authorities (services.WithRouted); with
// res not nil (a request on that resource that may run again), a refusal
// because the resource moved is run once more after the resource's routing
// is read from the leader, and a write refused by a write lock or fence in
// force is parked until the routing changes (Config.QueueWrites) and run
// again. A body is buffered (at most MaxBodyBytes) so that it can be read
// again; a longer one is not re-run. It returns the last run's error, for
// the caller to write (WriteError).
func (rt *Router) Serve(w http.ResponseWriter, r *http.Request, res *kvrouting.Resource, h func(http.ResponseWriter, *http.Request) error) error {
	ctx, _ := services.WithRouted(r.Context())
	set := &routedSet{}
	ctx = context.WithValue(ctx, routedSetKey{}, set)
	r = r.WithContext(ctx)
	rerun := res != nil
	var body []byte
	if rerun && r.Method != http.MethodGet {
		body, rerun = rt.bufferBody(r)
	}
	run := func() error {
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		return h(w, r)
	}
	err := h(w, r)
	if !rerun {
		return err
	}
	err = rt.reresolve(ctx, set, *res, run, err)
	if rt.queue != nil && r.Method != http.MethodGet && Queueable(err) {
		err = rt.park(w, r, *res, func() error { return rt.reresolve(ctx, set, *res, run, run()) }, err)
	}
	return err
}

// reresolve runs a request refused as "moved" (err) again, after reading
// from the leader every resource it routed by: the refusal may come from
// any of them (a media download routes by the media, then by its
// conversation), a run may reach a resource the previous one did not, and
// a migration step may land between the leader read and the run. Each
// round either reads a resource no run had reached or follows a routing
// change made during the previous run, so maxReResolveRounds rounds cover
// a request on two stale resources with a swap racing its re-run; a
// request that re-resolved counts once.
func (rt *Router) reresolve(ctx context.Context, set *routedSet, on kvrouting.Resource, run func() error, err error) error {
	for round := 0; Moved(err) && round < maxReResolveRounds; round++ {
		if !rt.refresh(ctx, set.all(on)) {
			return err
		}
		if round == 0 {
			rt.reresolved.Add(1)
		}
		err = run()
	}
	return err
}

// maxReResolveRounds bounds the leader reads and re-runs of one request
// refused as "moved" (reresolve).
const maxReResolveRounds = 3

// routedSet is every resource one request's runs routed by (Route).
type routedSet struct {
	mu     sync.Mutex
	routed []kvrouting.Resource
}

type routedSetKey struct{}

func (s *routedSet) add(res kvrouting.Resource) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.routed, res) {
		s.routed = append(s.routed, res)
	}
}

// all returns the resources routed by, and on (the resource the request
// is on) if no run routed by it.
func (s *routedSet) all(on kvrouting.Resource) []kvrouting.Resource {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.routed)
	if !slices.Contains(out, on) {
		out = append(out, on)
	}
	return out
}

// Moved reports whether err is a 423 saying the resource is no longer at
// the region that refused it: a store's authority newer than the routing
// the request was decided on, or a decision there that it is not the
// primary (a locked secondary, not authoritative).
func Moved(err error) bool {
	if err == nil {
		return false
	}
	e := services.ToError(err)
	if e.Code != contract.CodeLocked {
		return false
	}
	switch e.Lock {
	case contract.LockMoved, kvrouting.ReasonLockedSecondary, kvrouting.ReasonNotAuthoritative:
		return true
	}
	return false
}

// bufferBody reads r's body (at most MaxBodyBytes) so that the request can
// be run again, and reports whether it could: a longer body is put back as
// it was (the handler then refuses it) and is not re-run.
func (rt *Router) bufferBody(r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, rt.cfg.MaxBodyBytes+1))
	if err != nil || int64(len(b)) > rt.cfg.MaxBodyBytes {
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), r.Body))
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, true
}

// Refresh reads res's routing from the leader into the default resolver's
// and every region resolver's caches. It reports whether at least one read
// succeeded.
func (rt *Router) Refresh(ctx context.Context, res kvrouting.Resource) bool {
	if !rt.refresh(ctx, []kvrouting.Resource{res}) {
		return false
	}
	rt.reresolved.Add(1)
	return true
}

// refresh is Refresh of every resource in res, uncounted: it reports
// whether at least one read succeeded.
func (rt *Router) refresh(ctx context.Context, res []kvrouting.Resource) bool {
	seen := map[*kvrouting.Resolver]bool{}
	ok := false
	rvs := []*kvrouting.Resolver{rt.cfg.Resolver}
	for _, rv := range rt.cfg.Resolvers {
		rvs = append(rvs, rv)
	}
	for _, rv := range rvs {
		if rv == nil || seen[rv] {
			continue
		}
		seen[rv] = true
		for _, one := range res {
			if _, err := rv.ResolveLeader(ctx, one); err == nil {
				ok = true
			}
		}
	}
	return ok
}

// ReResolved is how many requests were re-run after a "moved" refusal.
func (rt *Router) ReResolved() uint64 { return rt.reresolved.Load() }

// Refusal is the 423 for a decision that rejects its operation (paper 001
// §4.4): Retry-After is the decision's hint — under a write lock the
// expected rest of the switch, never the lease; at a region that is not
// the primary, 0: the resource has moved, resolve its routing again (Moved
// reports it). Nil for a decision that does not reject.
func Refusal(d kvrouting.Decision) *contract.Error {
	if d.Outcome != kvrouting.Reject {
		return nil
	}
	reason := d.Reason
	if reason == "" {
		reason = "locked"
	}
	msg := fmt.Sprintf("resource locked (%s) while a migration switches regions; retry in a moment", reason)
	switch {
	case d.Primary != "" && (d.Reason == kvrouting.ReasonNotAuthoritative || d.Reason == kvrouting.ReasonLockedSecondary):
		msg = fmt.Sprintf("resource has moved: it is served by region %s; resolve it again", d.Primary)
	case d.Reason == kvrouting.ReasonNotAuthoritative || d.Reason == kvrouting.ReasonLockedSecondary:
		msg = "resource has moved to another region; resolve it again"
	}
	return &contract.Error{Code: contract.CodeLocked, Message: msg, RetryAfter: d.RetryHint, Lock: reason}
}

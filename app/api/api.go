// Package api is the user-facing HTTP API of the chat reference services:
// one base URL for clients, JSON in and out. Every request is authenticated,
// resolves the conversation's routing document through kvrouting, takes the
// paper 001 Table 4 decision for its operation class at the resolved primary
// region before any storage mutation (paper 001 §5.2), and is dispatched to
// that region's services. A refused operation is HTTP 423 with Retry-After
// (paper 001 §4.4); docs/api.md lists the routes.
package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/httproute"
)

// Defaults applied by Config.EnsureDefaults.
const (
	// DefaultMaxBodyBytes caps a request body.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxPageSize caps the limit of a message listing.
	DefaultMaxPageSize = 200
	// DefaultPageSize is the limit of a message listing that names none.
	DefaultPageSize = 50
)

// MaxHeaderBytes caps the request line and headers of a request to the
// API: the http.Server that serves it sets it as its MaxHeaderBytes
// (internal/system). Beyond it the server answers 431 itself, before the
// API runs, in plain text (docs/api.md "Errors").
const MaxHeaderBytes = 64 << 10

// RegionHeader pins a request to a region when Config.AllowRegionPin is set
// (httproute.RegionHeader).
const RegionHeader = httproute.RegionHeader

// ServedByHeader names the region that served a request on a resource
// (httproute.ServedByHeader).
const ServedByHeader = httproute.ServedByHeader

// QueuedHeader is set on the response to every write that was parked
// (httproute.QueuedHeader).
const QueuedHeader = httproute.QueuedHeader

// DeleteHeader tells the client how a delete was performed: "tombstone"
// (under a hard-delete lock or fence, paper 001 §4.3) or "hard".
const DeleteHeader = "X-Cutover-Delete"

// ErrInvalidConfig is returned by New for an unusable Config.
var ErrInvalidConfig = errors.New("api: invalid config")

// Config configures a Server. Zero values mean the documented defaults.
type Config struct {
	// Regions are the regions this server dispatches to (required).
	Regions map[string]*chat.Region
	// Resolver resolves routing documents for every region that has no
	// entry in Resolvers.
	Resolver *kvrouting.Resolver
	// Resolvers are per-region resolvers (each region's services resolve
	// with their own caches and mirror). A request is first resolved with
	// DefaultRegion's resolver to find the primary, then re-resolved with
	// the primary's resolver, which decides.
	Resolvers map[string]*kvrouting.Resolver
	// Locker registers the routing documents of new conversations and media
	// (required).
	Locker *kvrouting.Locker
	// DefaultRegion is where new conversations are created; it must be in
	// Regions (default: the only region, if there is one).
	DefaultRegion string
	// Auth authenticates requests (required; DevAuth for development).
	Auth Authenticator
	// MaxBodyBytes caps request bodies (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// MaxPageSize caps a listing's limit (default DefaultMaxPageSize).
	MaxPageSize int
	// AllowRegionPin honours RegionHeader (tests, dev).
	AllowRegionPin bool
	// Logger receives internal errors (default slog.Default()).
	Logger *slog.Logger
	// QueueWrites is how long a write refused by a write lock or fence in
	// force is parked, waiting for the resource's routing to change, before
	// the 423 goes out (httproute; 0: no queueing, the 423 at once).
	QueueWrites time.Duration
	// QueueMax bounds the writes parked at once (default DefaultQueueMax);
	// QueuePerResource, those on one resource (default
	// DefaultQueuePerResource, at most QueueMax). A write that finds the
	// queue full gets its 423 at once.
	QueueMax, QueuePerResource int
	// QueueObserver, if set, sees every parked write's outcome and wait.
	QueueObserver httproute.QueueObserver
}

// EnsureDefaults fills zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxPageSize <= 0 {
		c.MaxPageSize = DefaultMaxPageSize
	}
	if c.DefaultRegion == "" && len(c.Regions) == 1 {
		for name := range c.Regions {
			c.DefaultRegion = name
		}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.QueueWrites > 0 {
		if c.QueueMax <= 0 {
			c.QueueMax = httproute.DefaultQueueMax
		}
		if c.QueuePerResource <= 0 {
			c.QueuePerResource = min(httproute.DefaultQueuePerResource, c.QueueMax)
		}
	}
}

// Validate reports a missing or inconsistent setting (after
// EnsureDefaults) as ErrInvalidConfig.
func (c *Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case len(c.Regions) == 0:
		return bad("no regions")
	case c.Regions[c.DefaultRegion] == nil:
		return bad("default region %q is not served", c.DefaultRegion)
	case c.Locker == nil:
		return bad("no Locker")
	case c.Auth == nil:
		return bad("no Authenticator")
	case c.QueueWrites < 0:
		return bad("negative QueueWrites %s", c.QueueWrites)
	}
	for name, r := range c.Regions {
		if r == nil {
			return bad("region %q is nil", name)
		}
		if r.Name() != name {
			return bad("region %q is keyed as %q", r.Name(), name)
		}
		if c.Resolvers[name] == nil && c.Resolver == nil {
			return bad("no resolver for region %q", name)
		}
	}
	return nil
}

// Server is the HTTP API. It is an http.Handler, safe for concurrent use.
type Server struct {
	cfg    Config
	mux    *http.ServeMux
	log    *slog.Logger
	router *httproute.Router
}

var _ http.Handler = (*Server)(nil)

// New returns the API over cfg. Errors: ErrInvalidConfig.
func New(cfg Config) (*Server, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rc := httproute.Config{Resolver: cfg.Resolver, Resolvers: cfg.Resolvers, DefaultRegion: cfg.DefaultRegion,
		Serves: func(region string) bool { return cfg.Regions[region] != nil }, AllowRegionPin: cfg.AllowRegionPin,
		QueueWrites: cfg.QueueWrites, QueueMax: cfg.QueueMax, QueuePerResource: cfg.QueuePerResource,
		QueueObserver: cfg.QueueObserver, MaxBodyBytes: cfg.MaxBodyBytes}
	if cfg.QueueWrites > 0 {
		rc.KV = cfg.Locker.Store().KV()
	}
	router, err := httproute.New(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), log: cfg.Logger, router: router}
	s.routes()
	return s, nil
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", s.healthz)

	s.handle("POST /v1/conversations", s.createConversation)
	s.handle("GET /v1/conversations/{id}", s.getConversation)
	s.handle("POST /v1/conversations/{id}/members", s.addMember)
	s.handle("GET /v1/conversations/{id}/members", s.listMembers)

	s.handle("POST /v1/conversations/{id}/messages", s.postMessage)
	s.handle("GET /v1/conversations/{id}/messages", s.listMessages)
	s.handle("GET /v1/conversations/{id}/messages/{mid}", s.getMessage)
	s.handle("PATCH /v1/conversations/{id}/messages/{mid}", s.editMessage)
	s.handle("DELETE /v1/conversations/{id}/messages/{mid}", s.deleteMessage)

	s.handle("GET /v1/conversations/{id}/messages/{mid}/reactions", s.listReactions)
	s.handle("PUT /v1/conversations/{id}/messages/{mid}/reactions/{emoji}", s.react)
	s.handle("DELETE /v1/conversations/{id}/messages/{mid}/reactions/{emoji}", s.unreact)

	s.handle("PUT /v1/conversations/{id}/read", s.markRead)
	s.handle("GET /v1/conversations/{id}/read", s.getRead)

	s.handle("POST /v1/conversations/{id}/media", s.uploadMedia)
	s.handle("GET /v1/media/{id}", s.getMedia)

	s.handle("GET /v1/routing/{kind}/{id}", s.getRouting)

	for kind, coll := range internalCollections {
		s.handle("GET /v1/internal/regions/{region}/"+coll+"/{id}/digests", s.internalDigests(kind))
		s.handle("GET /v1/internal/regions/{region}/"+coll+"/{id}/slice", s.internalSlice(kind))
	}
}

// handlerFunc is an authenticated handler; a returned error is written as
// the JSON error body.
type handlerFunc func(w http.ResponseWriter, r *http.Request, who Identity) error

// The requests on an existing conversation run through the router's
// second chances (httproute.Router.Serve): re-run once after a "moved"
// refusal, parked behind a write lock (reresolve.go says which routes).
func (s *Server) handle(pattern string, h handlerFunc) {
	again := reresolvable(pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		who, err := s.cfg.Auth.Authenticate(r)
		if err != nil {
			s.writeError(w, r, authError(err))
			return
		}
		var res *kvrouting.Resource
		if again != nil {
			res = again(r)
		}
		err = s.router.Serve(w, r, res, func(w http.ResponseWriter, r *http.Request) error { return h(w, r, who) })
		if err != nil {
			s.writeError(w, r, err)
		}
	})
}

// QueueStats returns the write queue's counters (zero when queueing is
// off).
func (s *Server) QueueStats() httproute.QueueStats { return s.router.QueueStats() }

// Close stops the write queue's routing watcher; parked writes run once
// more and answer. The Server keeps serving without queueing.
func (s *Server) Close() { s.router.Close() }

// ServeHTTP implements http.Handler: routes, with JSON bodies for unknown
// routes and methods, and a 500 instead of a dropped connection on a panic.
// It never redirects: a path that is not canonical (an empty, "." or ".."
// segment, which http.ServeMux would answer with a redirect to the cleaned
// path) is 400.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.Error("api: panic", "method", r.Method, "path", r.URL.Path, "panic", v)
			s.writeError(w, r, fmt.Errorf("panic: %v", v))
		}
	}()
	if !canonicalPath(r.URL.EscapedPath()) {
		s.writeError(w, r, contract.Errorf(contract.CodeInvalid, "path %q is not canonical: no empty, \".\" or \"..\" segments", r.URL.EscapedPath()))
		return
	}
	// Handler only looks the route up; the mux's ServeHTTP below sets the
	// path values.
	h, pattern := s.mux.Handler(r)
	if pattern == "" {
		// Let the mux decide between 404 and 405 (with Allow), then replace
		// its plain-text body with the JSON error shape.
		rec := &statusRecorder{header: http.Header{}}
		h.ServeHTTP(rec, r)
		if rec.status == http.StatusMethodNotAllowed {
			w.Header()["Allow"] = rec.header["Allow"]
			s.writeError(w, r, contract.Errorf(contract.CodeMethodNotAllowed, "method %s not allowed; allowed: %s", r.Method, strings.Join(rec.header.Values("Allow"), ", ")))
			return
		}
		// Not found, or anything else the mux would answer (it cannot
		// redirect a canonical path to any of the routes: none ends in
		// '/').
		s.writeError(w, r, contract.Errorf(contract.CodeNotFound, "no such route: %s %s", r.Method, r.URL.Path))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// statusRecorder captures what the mux's own not-found and
// method-not-allowed handlers would write.
type statusRecorder struct {
	header http.Header
	status int
}

func (r *statusRecorder) Header() http.Header { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return len(b), nil
}
func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	names := make([]string, 0, len(s.cfg.Regions))
	for n := range s.cfg.Regions {
		names = append(names, n)
	}
	slices.Sort(names)
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "regions": names})
}

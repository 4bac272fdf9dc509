package system

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/cutover/cutover/app/api"
	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/app/chat/messages"
	"github.com/cutover/cutover/internal/metrics"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/projector"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/cutover/cutover/services/httproute"
	"github.com/cutover/cutover/services/pgstore"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/fx"
)

// Endpoint is the NATS deployment the process talks to.
type Endpoint struct {
	// URL is the process's own cluster (a supercluster's home region).
	URL string
	// Regions, in a supercluster, are each region's cluster URLs: a
	// region's services connect there only.
	Regions map[string]string
}

type (
	// Regions are the regions a process serves, by name.
	Regions map[string]*chat.Region
	// Resolvers are the regions' routing resolvers, by region.
	Resolvers map[string]*kvrouting.Resolver
)

// HTTPServer is a running HTTP listener (its address once started).
type HTTPServer struct{ Addr string }

// URL is the server's base URL.
func (h *HTTPServer) URL() string { return "http://" + h.Addr }

// Core wires the shared pieces of an all-in-one process: NATS (embedded
// unless cfg.NATSURL is set), the routing store, resolvers and locker, the
// regions' chat services, their contract servers and the metrics registry.
func Core(cfg *Config) fx.Option {
	return fx.Options(
		fx.Supply(cfg),
		fx.Provide(provideNATS, provideConn, provideRoutingStore, provideResolvers, provideLocker, provideRegions, metrics.New),
		fx.Invoke(serveContracts),
	)
}

// Orchestration adds the orchestrator workers (the phase engine), the
// directory they reach the services through and a client.
func Orchestration() fx.Option {
	return fx.Options(fx.Provide(provideDirectory, provideWorkers, provideOrchClient),
		fx.Invoke(func([]*orchestrator.Worker) {}))
}

// Projection adds the projector (the migration read models).
func Projection() fx.Option {
	return fx.Options(fx.Provide(provideProjector), fx.Invoke(func(*projector.Projector) {}))
}

// API adds the user-facing HTTP API (with /metrics beside it, for service
// identities).
func API() fx.Option {
	return fx.Options(fx.Provide(provideAPI, serveHTTP), fx.Invoke(func(*HTTPServer) {}))
}

// Metrics feeds the process's metrics: the routing caches of its resolvers
// (when it has any) and, with migrationEvents, the migration events stream.
func Metrics(migrationEvents bool) fx.Option {
	return fx.Invoke(func(in metricsFeed) {
		if in.Resolvers != nil {
			in.Metrics.WatchResolvers(in.Resolvers)
		}
		if !migrationEvents {
			return
		}
		log := in.Config.Logger
		in.Actors.Add("metrics events feed", func(ctx context.Context) error {
			return in.Metrics.FollowEvents(ctx, in.JS, log)
		}, nil)
	})
}

type metricsFeed struct {
	fx.In
	Actors    *Actors
	Metrics   *metrics.Metrics
	JS        jetstream.JetStream
	Config    *Config
	Resolvers Resolvers `optional:"true"`
}

// provideDirectory is the workers' directory over the NATS contract,
// validating through this process's API once it listens.
func provideDirectory(cfg *Config, nc *nats.Conn, js jetstream.JetStream, hs *HTTPServer) *contractnats.Directory {
	return newDirectory(cfg, nc, js, func() string {
		if hs == nil || hs.Addr == "" {
			return ""
		}
		return hs.URL()
	})
}

// newDirectory is the orchestrator's directory over the NATS contract for
// the chat services, validating through the API at apiURL() ("" = through
// the contract's digests).
func newDirectory(cfg *Config, nc *nats.Conn, js jetstream.JetStream, apiURL func() string) *contractnats.Directory {
	return contractnats.NewDirectory(nc, js, chat.ServicesFor, contractnats.DirectoryOptions{
		APIURL: apiURL, APIDigestsPath: api.InternalDigestsPath, Secret: cfg.ServiceSecret, Keys: cfg.contractKeys()})
}

func provideOrchClient(nc *nats.Conn, js jetstream.JetStream) *orchestrator.Client {
	return orchestrator.NewClient(nc, js)
}

// provideWorkers builds cfg.Workers workers (none for -1) and runs each as
// an actor: a worker whose consumers fail stops the process.
func provideWorkers(cfg *Config, nc *nats.Conn, js jetstream.JetStream, lk *kvrouting.Locker, dir *contractnats.Directory, actors *Actors) ([]*orchestrator.Worker, error) {
	if !cfg.Provisioned {
		if err := Provision(context.Background(), js, ProvisionConfig{Nodes: cfg.Cluster, Migration: true, Logger: cfg.Logger}); err != nil {
			return nil, err
		}
	}
	var ws []*orchestrator.Worker
	for i := 0; i < cfg.Workers; i++ {
		w, err := NewWorker(cfg, nc, js, lk, dir)
		if err != nil {
			return nil, err
		}
		actors.Add(fmt.Sprintf("orchestrator worker %d", i), w.Run, func() { _ = w.Close() })
		ws = append(ws, w)
	}
	return ws, nil
}

// NewWorker builds one orchestrator worker of cfg's settings; the caller
// runs it (chaos starts and kills its own). Development auth with no
// operator registry accepts two-person commands approved by unsigned
// names (orchestrator.Config.UnsignedApprovals).
func NewWorker(cfg *Config, nc *nats.Conn, js jetstream.JetStream, lk *kvrouting.Locker, dir orchestrator.Directory) (*orchestrator.Worker, error) {
	oc := cfg.Orchestrator
	oc.Locker, oc.Directory, oc.Logger = lk, dir, cfg.Logger
	if oc.Operators == nil && cfg.InsecureDevAuth {
		oc.UnsignedApprovals = true
	}
	return orchestrator.NewWorker(nc, js, oc, cfg.WorkerOptions...)
}

func provideProjector(cfg *Config, js jetstream.JetStream, actors *Actors) *projector.Projector {
	p := projector.New(js, cfg.Logger)
	actors.Add("projector", p.Run, func() { _ = p.Close() })
	return p
}

func provideNATS(lc fx.Lifecycle, cfg *Config) (*Endpoint, error) {
	if cfg.NATSURL != "" {
		return &Endpoint{URL: cfg.NATSURL, Regions: cfg.RegionURLs}, nil
	}
	dir := ""
	if cfg.DataDir != "" && !cfg.InMemory {
		dir = filepath.Join(cfg.DataDir, "nats")
	}
	if cfg.Supercluster {
		sc, err := cnats.StartSupercluster(cnats.SuperclusterOptions{
			Regions: cfg.Regions, Nodes: cfg.Cluster, BaseDir: dir, WAN: cfg.WAN})
		if err != nil {
			return nil, err
		}
		lc.Append(fx.StopHook(sc.Shutdown))
		ep := &Endpoint{URL: sc.Regions[0].ClientURLs(), Regions: map[string]string{}}
		for _, r := range sc.Regions {
			ep.Regions[r.Name] = r.ClientURLs()
		}
		return ep, nil
	}
	if cfg.Cluster > 1 {
		cl, err := cnats.StartCluster(cnats.ClusterOptions{Nodes: cfg.Cluster, BaseDir: dir})
		if err != nil {
			return nil, err
		}
		lc.Append(fx.StopHook(cl.Shutdown))
		return &Endpoint{URL: cl.ClientURLs()}, nil
	}
	opts := cnats.Options{StoreDir: dir, Port: cfg.NATSPort}
	if cfg.NATSSyncLazy {
		lazy := false
		opts.SyncAlways = &lazy
	}
	srv, err := cnats.StartServer(opts)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(srv.Shutdown))
	return &Endpoint{URL: srv.ClientURL()}, nil
}

// connIn is provideConn's input: the connection's security is optional
// (the in-process system and TestValidateRoleApps have none).
type connIn struct {
	fx.In
	LC  fx.Lifecycle
	EP  *Endpoint
	Cfg *Config
	Sec *cnats.ClientSecurity `optional:"true"`
}

// connOptions are the options of the process's connections: sec's, and a
// handler that logs the server's asynchronous errors (a permission
// violation is reported that way only).
func connOptions(cfg *Config, sec *cnats.ClientSecurity) ([]nats.Option, error) {
	var opts []nats.Option
	if sec != nil {
		var err error
		if opts, err = sec.Options(); err != nil {
			return nil, err
		}
	}
	log := cfg.Logger
	return append(opts, nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
		if sub != nil {
			log.Warn("nats: asynchronous error", "subject", sub.Subject, "err", err)
			return
		}
		log.Warn("nats: asynchronous error", "err", err)
	})), nil
}

func provideConn(in connIn) (*nats.Conn, jetstream.JetStream, error) {
	opts, err := connOptions(in.Cfg, in.Sec)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, js, err := cnats.Connect(ctx, in.EP.URL, opts...)
	if err != nil {
		return nil, nil, err
	}
	in.LC.Append(fx.StopHook(nc.Close))
	return nc, js, nil
}

// provideRoutingStore provisions the routing bucket, the regions' mirrors
// and the PAGES stream (unless the admin has: cfg.Provisioned), and opens
// the routing store.
func provideRoutingStore(cfg *Config, nc *nats.Conn, js jetstream.JetStream) (*kvrouting.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	home, pages := cfg.placement()
	if !cfg.Provisioned {
		if err := Provision(ctx, js, ProvisionConfig{Nodes: cfg.Cluster, Routing: true, RoutingHistory: cfg.RoutingHistory,
			Pages: true, Mirrors: cfg.Regions[1:], Home: home, PagesRegion: pages, Logger: cfg.Logger}); err != nil {
			return nil, err
		}
	}
	return kvrouting.NewStore(ctx, nc, js, "")
}

// provideResolvers gives each region its own cache tiers; non-write
// regions read their mirror on a miss (within the staleness bound).
func provideResolvers(cfg *Config, st *kvrouting.Store, js jetstream.JetStream) (Resolvers, error) {
	return NewResolvers(cfg, st, js, cfg.Tiers, "t")
}

// NewResolvers builds one resolver per region of cfg with one cache tier
// per ttl (tier names "<region>-<tag><i>").
func NewResolvers(cfg *Config, st *kvrouting.Store, js jetstream.JetStream, ttls []time.Duration, tag string) (Resolvers, error) {
	out := Resolvers{}
	for i, r := range cfg.Regions {
		var tiers []*kvrouting.Tier
		for j, ttl := range ttls {
			tiers = append(tiers, kvrouting.NewTier(fmt.Sprintf("%s-%s%d", r, tag, j), ttl, 0))
		}
		rc := kvrouting.ResolverConfig{Region: r, Tiers: tiers, ReplicationBound: cfg.ReplicationBound, ClockSkew: cfg.ClockSkew, JS: js}
		if i > 0 {
			rc.MirrorRegion = r
		}
		res, err := kvrouting.NewResolver(st, rc)
		if err != nil {
			return nil, err
		}
		out[r] = res
	}
	return out, nil
}

func provideLocker(cfg *Config, st *kvrouting.Store, rs Resolvers) (*kvrouting.Locker, error) {
	lc := cfg.Locks
	if cfg.Orchestrator.Convergence == orchestrator.ConvergenceFence {
		// The stores' fences stand in for the caches' expiry.
		lc.FenceConvergence = true
	} else {
		// The paper's wait: the pre-lock's not-before is after every
		// cache's TTL. Fence-driven convergence (the default) waits for
		// none (orchestrator.Config.Convergence).
		for _, r := range rs {
			lc.ConvergenceDelay = max(lc.ConvergenceDelay, r.ConvergenceDelay())
		}
	}
	if lc.ClockSkew == 0 {
		lc.ClockSkew = cfg.ClockSkew
	}
	return kvrouting.NewLocker(st, lc)
}

func provideRegions(lc fx.Lifecycle, cfg *Config) (Regions, error) {
	out := Regions{}
	var pgs []*pgstore.Store
	closeAll := func() {
		for _, o := range out {
			_ = o.Close()
		}
		for _, pg := range pgs {
			pg.Close()
		}
	}
	for _, r := range cfg.Regions {
		opts := chat.RegionOptions{Name: r, InMemory: cfg.InMemory || cfg.DataDir == "", WrapFS: cfg.StoreFS}
		if !opts.InMemory {
			opts.Dir = filepath.Join(cfg.DataDir, "regions", r)
		}
		if cfg.Postgres != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			pg, err := pgstore.Open(ctx, cfg.Postgres, pgstore.Options{Service: messages.ServiceName + "@" + r})
			cancel()
			if err != nil {
				closeAll()
				return nil, fmt.Errorf("region %s: messages on PostgreSQL: %w", r, err)
			}
			pgs = append(pgs, pg)
			opts.MessagesStorage = pg
		}
		reg, err := chat.OpenRegion(opts)
		if err != nil {
			closeAll()
			return nil, err
		}
		out[r] = reg
	}
	lc.Append(fx.StopHook(func() error {
		var errs []error
		for _, r := range out {
			errs = append(errs, r.Close())
		}
		for _, pg := range pgs {
			pg.Close()
		}
		return errors.Join(errs...)
	}))
	return out, nil
}

// contractsIn is serveContracts' input: the security of the role's
// connection applies to the regions' own connections too.
type contractsIn struct {
	fx.In
	LC      fx.Lifecycle
	Cfg     *Config
	EP      *Endpoint
	NC      *nats.Conn
	JS      jetstream.JetStream
	Regions Regions
	Sec     *cnats.ClientSecurity `optional:"true"`
}

// serveContracts puts every service of every region on NATS (the migration
// contract; DESIGN.md "Services and the contract").
//
// In a supercluster each region's services get their own connection to
// their own region's cluster, so that what they exchange with another
// region crosses a gateway (the WAN) as it would in production.
func serveContracts(in contractsIn) error {
	lc, ep, nc, js, regions := in.LC, in.EP, in.NC, in.JS, in.Regions
	opts, err := connOptions(in.Cfg, in.Sec)
	if err != nil {
		return err
	}
	var servers []*contractnats.Server
	var conns []*nats.Conn
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			for name, reg := range regions {
				rnc, rjs := nc, js
				if url, ok := ep.Regions[name]; ok {
					cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					c, j, err := cnats.Connect(cctx, url, opts...)
					cancel()
					if err != nil {
						return fmt.Errorf("connect region %s: %w", name, err)
					}
					conns = append(conns, c)
					rnc, rjs = c, j
				}
				epoch, err := cnats.ServedEpoch(ctx, rjs)
				if err != nil {
					return fmt.Errorf("region %s: %w", name, err)
				}
				for _, p := range reg.Participants() {
					s, err := contractnats.Serve(context.Background(), rnc, rjs, name, p, contractnats.ServeOptions{Key: in.Cfg.contractKey(name), RoutingEpoch: epoch})
					if err != nil {
						return fmt.Errorf("serve %s/%s: %w", name, p.Service(), err)
					}
					servers = append(servers, s)
				}
			}
			return nil
		},
		OnStop: func(ctx context.Context) error {
			var errs []error
			for _, s := range servers {
				errs = append(errs, s.Stop())
			}
			for _, c := range conns {
				c.Close()
			}
			return errors.Join(errs...)
		},
	})
	return nil
}

// NewAPI is the user-facing API over regions with resolvers rs; obs (may
// be nil) sees the write queue's outcomes.
//
// Users authenticate with signed tokens for api.AudienceAPI (AuthSecret),
// or, with InsecureDevAuth and no AuthSecret, with development tokens
// (api.DevAuth). Errors: ErrConfig with neither; the API's.
func NewAPI(cfg *Config, regions Regions, rs Resolvers, lk *kvrouting.Locker, obs httproute.QueueObserver) (*api.Server, error) {
	svcs := map[string]string{"validator": cfg.ServiceSecret}
	var auth api.Authenticator
	switch {
	case cfg.AuthSecret != "":
		auth = api.SignedAuth{Secret: []byte(cfg.AuthSecret), Audience: api.AudienceAPI, ServiceSecrets: svcs}
	case cfg.InsecureDevAuth:
		auth = api.DevAuth{ServiceSecrets: svcs}
	default:
		return nil, fmt.Errorf("%w: the API needs an auth secret (signed user tokens) or insecure development auth", ErrConfig)
	}
	return api.New(api.Config{
		Regions: regions, Resolvers: rs, Locker: lk, DefaultRegion: cfg.Regions[0],
		Auth: auth, Logger: cfg.Logger,
		QueueWrites: max(cfg.QueueWrites, 0), QueueMax: cfg.QueueMax, QueueObserver: obs,
	})
}

func provideAPI(lc fx.Lifecycle, cfg *Config, regions Regions, rs Resolvers, lk *kvrouting.Locker, m *metrics.Metrics) (*api.Server, error) {
	s, err := NewAPI(cfg, regions, rs, lk, m)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(s.Close))
	return s, nil
}

// serveHTTP serves the API and, on exactly /metrics, the metrics for
// service identities only (api.Server.ServiceOnly: the API's routes all
// need authentication but /healthz). No http.ServeMux sits in front of
// the API: its path cleaning would answer a path with a "." or ".."
// segment with a redirect in HTML, before the API's JSON errors.
func serveHTTP(lc fx.Lifecycle, cfg *Config, h *api.Server, m *metrics.Metrics, actors *Actors) *HTTPServer {
	apiH, metricsH := m.Middleware(h), h.ServiceOnly(m.Handler())
	return listen(lc, actors, "HTTP API", cfg.HTTPAddr, cfg.HTTP, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			metricsH.ServeHTTP(w, r)
			return
		}
		apiH.ServeHTTP(w, r)
	}))
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/projector"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/api"
	"github.com/cutover/cutover/services/chat"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"
)

// systemConfig describes one process's share of a deployment. `cutover dev`
// fills every part; later roles fill some.
type systemConfig struct {
	// DataDir holds the NATS store and the regions' Pebble stores; "" means
	// a temporary directory removed at exit.
	DataDir string
	// NATSURL connects to an existing deployment; "" starts an embedded
	// server (or cluster, see Cluster).
	NATSURL  string
	NATSPort int
	Cluster  int
	// Regions served; the first is the write region of the routing bucket
	// and where new conversations are created.
	Regions  []string
	HTTPAddr string
	// Timings (paper 001 Table 5, dev values).
	Tiers            []time.Duration
	ReplicationBound time.Duration
	ClockSkew        time.Duration
	Locks            kvrouting.LockConfig
	ServiceSecret    string
	// AuthSecret, when set, makes the API accept only signed user tokens
	// (api.SignedAuth); empty means development tokens (api.DevAuth).
	AuthSecret string
	// Orchestrator settings (dev values when zero: see ensureDefaults).
	Orchestrator orchestrator.Config
	Workers      int
	InMemory     bool
	Logger       *slog.Logger
}

func (c *systemConfig) ensureDefaults() error {
	if len(c.Regions) == 0 {
		c.Regions = []string{"us-east", "eu-west"}
	}
	for _, r := range c.Regions {
		if err := cnats.ValidateRegion(r); err != nil || strings.ToLower(r) != r {
			return fmt.Errorf("%w: region %q", errUsage, r)
		}
	}
	if len(c.Tiers) == 0 {
		c.Tiers = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond}
	}
	if c.ReplicationBound == 0 {
		c.ReplicationBound = 500 * time.Millisecond
	}
	if c.ClockSkew == 0 {
		c.ClockSkew = 100 * time.Millisecond
	}
	if c.Cluster == 0 {
		c.Cluster = 1
	}
	if c.ServiceSecret == "" {
		c.ServiceSecret = "dev-secret"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Workers == 0 {
		c.Workers = 2
	}
	o := &c.Orchestrator
	if o.ConvergenceBuffer == 0 {
		o.ConvergenceBuffer = 100 * time.Millisecond
	}
	if o.ReplicationBound == 0 {
		o.ReplicationBound = c.ReplicationBound
	}
	if o.CleanupWindow == 0 {
		o.CleanupWindow = time.Minute
	}
	if o.RetryBackoff == 0 {
		o.RetryBackoff = 200 * time.Millisecond
	}
	if o.RescheduleBackoff == 0 {
		o.RescheduleBackoff = time.Second
	}
	if o.AckWait == 0 {
		o.AckWait = 5 * time.Second
	}
	if o.TenantPoll == 0 {
		o.TenantPoll = 100 * time.Millisecond
	}
	if o.Parallel == 0 {
		o.Parallel = 64
	}
	if c.Locks.PreLockLease == 0 {
		c.Locks = kvrouting.LockConfig{PreLockLease: 2 * time.Minute, HardDeleteLease: 30 * time.Second,
			WriteLease: 10 * time.Second, MaxLease: 30 * time.Minute, SecondaryLease: time.Hour}
	}
	return nil
}

// natsEndpoint is the NATS deployment the process talks to.
type natsEndpoint struct{ URL string }

type (
	regionMap   map[string]*chat.Region
	resolverMap map[string]*kvrouting.Resolver
)

// systemModule wires the shared pieces: NATS, the routing store, resolvers
// and locker, the regions' chat services, their contract servers.
func systemModule(cfg *systemConfig) fx.Option {
	return fx.Options(
		fx.Supply(cfg),
		fx.Provide(provideNATS, provideConn, provideRoutingStore, provideResolvers, provideLocker, provideRegions, provideMetrics),
		fx.Invoke(serveContracts),
	)
}

// orchestratorModule adds orchestrator workers (the phase engine) and the
// projector.
func orchestratorModule() fx.Option {
	return fx.Options(fx.Provide(provideDirectory, provideWorkers, provideProjector, provideOrchClient),
		fx.Invoke(func([]*orchestrator.Worker, *projector.Projector) {}))
}

func provideDirectory(cfg *systemConfig, nc *nats.Conn, js jetstream.JetStream, hs *httpServer) *contractnats.Directory {
	return contractnats.NewDirectory(nc, js, chat.ServicesFor, contractnats.DirectoryOptions{APIURL: func() string {
		if hs == nil || hs.addr == "" {
			return ""
		}
		return "http://" + hs.addr
	}, APIDigestsPath: api.InternalDigestsPath, Secret: cfg.ServiceSecret})
}

func provideOrchClient(nc *nats.Conn, js jetstream.JetStream) *orchestrator.Client {
	return orchestrator.NewClient(nc, js)
}

// provideWorkers starts cfg.Workers workers; each runs until stop.
func provideWorkers(lc fx.Lifecycle, cfg *systemConfig, nc *nats.Conn, js jetstream.JetStream, lk *kvrouting.Locker, dir *contractnats.Directory) ([]*orchestrator.Worker, error) {
	replicas := 1
	if cfg.Cluster > 1 {
		replicas = 3
	}
	// A just-formed cluster occasionally lets a stream create time out while
	// it places the replicas; creation is idempotent, so try again.
	var perr error
	for attempt := 0; attempt < 3; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		perr = orchestrator.Provision(ctx, js, orchestrator.StreamConfig{Replicas: replicas})
		cancel()
		if perr == nil {
			break
		}
	}
	if perr != nil {
		return nil, fmt.Errorf("provision orchestrator streams: %w", perr)
	}
	var ws []*orchestrator.Worker
	for i := 0; i < cfg.Workers; i++ {
		oc := cfg.Orchestrator
		oc.Locker, oc.Directory, oc.Logger = lk, dir, cfg.Logger
		w, err := orchestrator.NewWorker(nc, js, oc)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	runCtx, stop := context.WithCancel(context.Background())
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			for _, w := range ws {
				go func() { _ = w.Run(runCtx) }()
			}
			return nil
		},
		OnStop: func(ctx context.Context) error {
			stop()
			var errs []error
			for _, w := range ws {
				errs = append(errs, w.Close())
			}
			return errors.Join(errs...)
		},
	})
	return ws, nil
}

func provideProjector(lc fx.Lifecycle, cfg *systemConfig, js jetstream.JetStream) *projector.Projector {
	p := projector.New(js, cfg.Logger)
	runCtx, stop := context.WithCancel(context.Background())
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() { _ = p.Run(runCtx) }()
			return nil
		},
		OnStop: func(context.Context) error { stop(); return p.Close() },
	})
	return p
}

// apiModule adds the user-facing HTTP API.
func apiModule() fx.Option {
	return fx.Options(fx.Provide(provideAPI, serveHTTP), fx.Invoke(func(*httpServer) {}))
}

func newApp(out io.Writer, opts ...fx.Option) *fx.App {
	return fx.New(append(opts, fx.WithLogger(func() fxevent.Logger { return fxevent.NopLogger }))...)
}

func provideNATS(lc fx.Lifecycle, cfg *systemConfig) (*natsEndpoint, error) {
	if cfg.NATSURL != "" {
		return &natsEndpoint{URL: cfg.NATSURL}, nil
	}
	dir := ""
	if cfg.DataDir != "" && !cfg.InMemory {
		dir = filepath.Join(cfg.DataDir, "nats")
	}
	if cfg.Cluster > 1 {
		cl, err := cnats.StartCluster(cnats.ClusterOptions{Nodes: cfg.Cluster, BaseDir: dir})
		if err != nil {
			return nil, err
		}
		lc.Append(fx.StopHook(cl.Shutdown))
		return &natsEndpoint{URL: cl.ClientURLs()}, nil
	}
	srv, err := cnats.StartServer(cnats.Options{StoreDir: dir, Port: cfg.NATSPort})
	if err != nil {
		return nil, err
	}
	lc.Append(fx.StopHook(srv.Shutdown))
	return &natsEndpoint{URL: srv.ClientURL()}, nil
}

func provideConn(lc fx.Lifecycle, ep *natsEndpoint) (*nats.Conn, jetstream.JetStream, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, js, err := cnats.Connect(ctx, ep.URL)
	if err != nil {
		return nil, nil, err
	}
	lc.Append(fx.StopHook(nc.Close))
	return nc, js, nil
}

func provideRoutingStore(cfg *systemConfig, nc *nats.Conn, js jetstream.JetStream) (*kvrouting.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nodes := cfg.Cluster // with NATSURL, the caller says how many nodes the deployment has
	if _, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{Nodes: nodes}); err != nil {
		return nil, fmt.Errorf("provision routing: %w", err)
	}
	for _, r := range cfg.Regions[1:] {
		if _, err := cnats.ProvisionMirror(ctx, js, r, 1); err != nil {
			return nil, fmt.Errorf("provision mirror %s: %w", r, err)
		}
	}
	if _, err := contractnats.ProvisionPages(ctx, js, cnats.DefaultReplicas(nodes)); err != nil {
		return nil, fmt.Errorf("provision pages: %w", err)
	}
	return kvrouting.NewStore(ctx, nc, js, "")
}

// provideResolvers gives each region its own cache tiers; non-write
// regions read their mirror on a miss (within the staleness bound).
func provideResolvers(cfg *systemConfig, st *kvrouting.Store, js jetstream.JetStream) (resolverMap, error) {
	out := resolverMap{}
	for i, r := range cfg.Regions {
		var tiers []*kvrouting.Tier
		for j, ttl := range cfg.Tiers {
			tiers = append(tiers, kvrouting.NewTier(fmt.Sprintf("%s-t%d", r, j), ttl, 0))
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

func provideLocker(cfg *systemConfig, st *kvrouting.Store, rs resolverMap) (*kvrouting.Locker, error) {
	lc := cfg.Locks
	for _, r := range rs {
		lc.ConvergenceDelay = max(lc.ConvergenceDelay, r.ConvergenceDelay())
	}
	if lc.ClockSkew == 0 {
		lc.ClockSkew = cfg.ClockSkew
	}
	return kvrouting.NewLocker(st, lc)
}

func provideRegions(lc fx.Lifecycle, cfg *systemConfig, lk *kvrouting.Locker) (regionMap, error) {
	out := regionMap{}
	for _, r := range cfg.Regions {
		// A source cleanup keeps what a later migration brings back here
		// (decided under each store's lock: services.RoutingCleanupGuard).
		opts := chat.RegionOptions{Name: r, InMemory: cfg.InMemory || cfg.DataDir == "", KeepOnCleanup: services.RoutingCleanupGuard(lk, r)}
		if !opts.InMemory {
			opts.Dir = filepath.Join(cfg.DataDir, "regions", r)
		}
		reg, err := chat.OpenRegion(opts)
		if err != nil {
			for _, o := range out {
				_ = o.Close()
			}
			return nil, err
		}
		out[r] = reg
	}
	lc.Append(fx.StopHook(func() error {
		var errs []error
		for _, r := range out {
			errs = append(errs, r.Close())
		}
		return errors.Join(errs...)
	}))
	return out, nil
}

// serveContracts puts every service of every region on NATS (the migration
// contract; DESIGN.md "Services and the contract").
func serveContracts(lc fx.Lifecycle, nc *nats.Conn, js jetstream.JetStream, regions regionMap) error {
	var servers []*contractnats.Server
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			for name, reg := range regions {
				for _, p := range reg.Participants() {
					s, err := contractnats.Serve(context.Background(), nc, js, name, p, contractnats.ServeOptions{})
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
			return errors.Join(errs...)
		},
	})
	return nil
}

func provideAPI(cfg *systemConfig, regions regionMap, rs resolverMap, lk *kvrouting.Locker) (*api.Server, error) {
	svcs := map[string]string{"validator": cfg.ServiceSecret}
	var auth api.Authenticator = api.DevAuth{ServiceSecrets: svcs}
	if cfg.AuthSecret != "" {
		auth = api.SignedAuth{Secret: []byte(cfg.AuthSecret), ServiceSecrets: svcs}
	}
	return api.New(api.Config{
		Regions: regions, Resolvers: rs, Locker: lk, DefaultRegion: cfg.Regions[0],
		Auth: auth, Logger: cfg.Logger,
	})
}

// httpServer is the running HTTP listener (its address once started).
type httpServer struct{ addr string }

func serveHTTP(lc fx.Lifecycle, cfg *systemConfig, h *api.Server, m *metrics) *httpServer {
	hs := &httpServer{}
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	mux.Handle("/", m.Middleware(h))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			addr := cfg.HTTPAddr
			if addr == "" {
				addr = "127.0.0.1:0"
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("http listen %s: %w", addr, err)
			}
			hs.addr = ln.Addr().String()
			go func() { _ = srv.Serve(ln) }()
			return nil
		},
		OnStop: func(ctx context.Context) error { return srv.Shutdown(ctx) },
	})
	return hs
}

func sortedRegions(m regionMap) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

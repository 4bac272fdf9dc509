package system

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/cutover/cutover/app/api"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/httpguard"
	"github.com/cutover/cutover/internal/metrics"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/projector"
	"github.com/cutover/cutover/projector/httpapi"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/cutover/cutover/services/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/fx"
)

// The roles of a deployment (DESIGN.md "Scaling out"): each is one process
// joined to a NATS deployment, composed here and run by App.Run.

// Join prepares cfg for a process joining the deployment at url: the
// deployment's size decides the replica counts (cfg.Cluster is set to the
// node count seen from the server: 1 for a standalone server, which
// refuses replicated streams); mirrors names the read replicas this role
// needs. A process without credentials (a development server without
// users) provisions the buckets and streams itself, with retries
// (Provision). A process with a NATS identity may not create streams (only
// the admin identity may: nats/permissions.go): it waits, at most
// ProvisionWait, until `cutover provision` has created them, and sets
// cfg.Provisioned. The endpoint is returned rather than set as
// cfg.NATSURL. Errors: the connection's, Provision's, ErrNotProvisioned.
func Join(ctx context.Context, url string, sec cnats.ClientSecurity, cfg *Config, mirrors []string) (*Endpoint, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	opts, err := sec.Options()
	if err != nil {
		return nil, err
	}
	nc, js, err := cnats.Connect(cctx, url, opts...)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	home, pages := cfg.placement()
	cfg.Cluster = natsNodes(nc, home != "")
	cfg.NATSURL = ""
	pc := ProvisionConfig{Nodes: cfg.Cluster, Routing: true, Pages: true, Migration: true,
		Mirrors: mirrors, Home: home, PagesRegion: pages, PerAttempt: 3 * time.Second, Logger: cfg.Logger}
	if sec.User != "" {
		cfg.Provisioned = true
		wctx, cancel := context.WithTimeout(ctx, ProvisionWait)
		defer cancel()
		if err := AwaitProvisioned(wctx, js, pc); err != nil {
			return nil, err
		}
		return &Endpoint{URL: url}, nil
	}
	if err := Provision(ctx, js, pc); err != nil {
		return nil, err
	}
	return &Endpoint{URL: url}, nil
}

// ProvisionWait is how long a role with a NATS identity waits for the
// admin to have provisioned the deployment.
const ProvisionWait = 2 * time.Minute

// ErrNotProvisioned is returned when a stream a role needs does not exist
// and the role's identity may not create it.
var ErrNotProvisioned = errors.New("system: deployment not provisioned")

// ProvisionStreams names the streams Provision creates for c.
func ProvisionStreams(c ProvisionConfig) []string {
	var out []string
	if c.Routing {
		out = append(out, cnats.RoutingStream, cnats.RoutingHistoryStream)
	}
	for _, r := range c.Mirrors {
		out = append(out, cnats.MirrorStream(r))
	}
	if c.Pages {
		out = append(out, contractnats.PagesStream)
	}
	if c.Migration {
		out = append(out, events.CommandStream, events.EventStream, events.WorkStream, events.IndexStream)
	}
	return out
}

// AwaitProvisioned waits until every stream Provision would create for c
// exists (it creates none), polling until ctx ends. Errors:
// ErrNotProvisioned naming the first missing stream and the command that
// creates it.
func AwaitProvisioned(ctx context.Context, js jetstream.JetStream, c ProvisionConfig) error {
	for _, name := range ProvisionStreams(c) {
		for {
			actx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_, err := js.Stream(actx, name)
			cancel()
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return fmt.Errorf("%w: stream %s: %v (create the deployment's streams once as the admin identity: `cutover provision`)",
					ErrNotProvisioned, name, err)
			}
			if c.Logger != nil && errors.Is(err, jetstream.ErrStreamNotFound) {
				c.Logger.Info("waiting for the admin to provision the deployment", "stream", name)
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	return nil
}

// ProvisionDeployment creates (or updates) every bucket and stream of the
// deployment at url as sec's identity (the admin's): ROUTING with its
// history, a mirror per region of mirrors, PAGES and the migration
// streams, placed as cfg says. It is `cutover provision`. Errors: the
// connection's, Provision's.
func ProvisionDeployment(ctx context.Context, url string, sec cnats.ClientSecurity, cfg *Config, mirrors []string) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	opts, err := sec.Options()
	if err != nil {
		return err
	}
	nc, js, err := cnats.Connect(cctx, url, opts...)
	if err != nil {
		return err
	}
	defer nc.Close()
	home, pages := cfg.placement()
	cfg.Cluster = natsNodes(nc, home != "")
	return Provision(ctx, js, ProvisionConfig{Nodes: cfg.Cluster, Routing: true, Pages: true, Migration: true,
		Mirrors: mirrors, Home: home, PagesRegion: pages, PerAttempt: 3 * time.Second, Logger: cfg.Logger})
}

// natsNodes is the JetStream cluster size assumed behind nc: 1 for a
// standalone server (it refuses replicas > 1), else 3 (DESIGN.md "Scaling
// out": a 3-node cluster, R3). In a supercluster (placed) it is the
// connected region's own cluster: the servers of the connection's pool, the
// URLs given and those the cluster told the client about (other regions'
// servers are never among them), at most 3.
func natsNodes(nc *nats.Conn, placed bool) int {
	if nc.ConnectedClusterName() == "" {
		return 1
	}
	if placed {
		return min(max(len(nc.Servers()), 1), cnats.DefaultClusterNodes)
	}
	return cnats.DefaultClusterNodes
}

// NATSNode is the nats role: one embedded server (a secure one when sec
// asks for users or TLS), stopped with the app.
func NATSNode(sec cnats.SecureOptions) fx.Option {
	return fx.Options(fx.Supply(sec), fx.Provide(provideNATSNode))
}

func provideNATSNode(lc fx.Lifecycle, sec cnats.SecureOptions) (*cnats.Server, error) {
	var srv *cnats.Server
	if len(sec.Users) == 0 && sec.TLS == nil && sec.RouteTLS == nil {
		s, err := cnats.StartServer(sec.Options)
		if err != nil {
			return nil, err
		}
		srv = s
	} else {
		s, err := cnats.StartSecureServer(sec)
		if err != nil {
			return nil, err
		}
		srv = s.Server
	}
	lc.Append(fx.StopHook(srv.Shutdown))
	return srv, nil
}

// ServiceRole composes the service role: NATS, the routing store (it
// provisions the routing bucket and the PAGES stream the contract servers
// publish to), the region's stores and their contract servers.
func ServiceRole(cfg *Config, ep *Endpoint) fx.Option {
	return fx.Options(fx.Supply(cfg, ep),
		fx.Provide(provideConn, provideRoutingStore, provideRegions),
		fx.Invoke(func(*kvrouting.Store) {}),
		fx.Invoke(serveContracts))
}

// APIBase is the user-facing API's base URL the orchestrator validates
// through ("" = through the contract's digests).
type APIBase string

// OrchestratorRole composes the orchestrator role: NATS, the routing store
// and locker, the directory over the contract, the workers.
func OrchestratorRole(cfg *Config, ep *Endpoint, base APIBase) fx.Option {
	return fx.Options(fx.Supply(cfg, ep, base),
		fx.Provide(provideConn, provideRoutingStore, provideResolvers, provideLocker, provideRoleDirectory, provideWorkers),
		fx.Invoke(func([]*orchestrator.Worker) {}))
}

// provideRoleDirectory is the orchestrator's directory over the NATS
// contract, validating through base when it is set.
func provideRoleDirectory(cfg *Config, nc *nats.Conn, js jetstream.JetStream, base APIBase) *contractnats.Directory {
	return newDirectory(cfg, nc, js, func() string { return string(base) })
}

// ProjectorAddr is the projector role's HTTP listen address.
type ProjectorAddr string

// ProjectorHTTP is the projector's running HTTP listener.
type ProjectorHTTP struct{ *HTTPServer }

// ProjectorRole composes the projector role: NATS, the migration streams,
// the projector, its HTTP server and the metrics fed by the events.
func ProjectorRole(cfg *Config, ep *Endpoint, addr ProjectorAddr) fx.Option {
	return fx.Options(fx.Supply(cfg, ep, addr),
		fx.Provide(provideConn, metrics.New, provideStreams, provideProjectorAfterStreams, serveProjectorHTTP),
		Metrics(true),
		fx.Invoke(func(ProjectorHTTP) {}))
}

// migrationStreams marks the migration streams as provisioned.
type migrationStreams struct{}

// provideStreams creates the migration streams if no orchestrator has yet
// (idempotent), so the projector has something to consume; in a
// provisioned deployment (cfg.Provisioned) Join has seen them.
func provideStreams(cfg *Config, js jetstream.JetStream) (migrationStreams, error) {
	if cfg.Provisioned {
		return migrationStreams{}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return migrationStreams{}, Provision(ctx, js, ProvisionConfig{Nodes: cfg.Cluster, Migration: true, Logger: cfg.Logger})
}

func provideProjectorAfterStreams(cfg *Config, js jetstream.JetStream, actors *Actors, _ migrationStreams) *projector.Projector {
	return provideProjector(cfg, js, actors)
}

// serveProjectorHTTP serves the projector's read models, dashboard and
// metrics, authenticated like the API (ProjectorAuth) and hardened like it
// (cfg.HTTP).
func serveProjectorHTTP(lc fx.Lifecycle, cfg *Config, addr ProjectorAddr, p *projector.Projector, m *metrics.Metrics, actors *Actors) (ProjectorHTTP, error) {
	o := httpapi.Options{StreamWriteTimeout: cfg.HTTP.StreamWriteTimeout}
	streams, err := httpguard.NewSlots(cfg.HTTP.MaxStreams, cfg.HTTP.MaxStreamsPerClient)
	if err != nil {
		return ProjectorHTTP{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	o.Streams = streams
	auth, err := ProjectorAuth(cfg)
	if err != nil {
		return ProjectorHTTP{}, err
	}
	if auth != nil {
		o.Authenticate = func(r *http.Request) error { _, err := auth.Authenticate(r); return err }
	}
	return ProjectorHTTP{listen(lc, actors, "projector HTTP", string(addr), cfg.HTTP, httpapi.Handler(p, m.Handler(), o))}, nil
}

// ProjectorAuth is who may read the projector's HTTP: users holding a
// signed token for api.AudienceProjector and the service identities, or,
// with InsecureDevAuth and no AuthSecret, anyone (nil). Errors: ErrConfig
// with neither.
func ProjectorAuth(cfg *Config) (api.Authenticator, error) {
	if cfg.AuthSecret == "" {
		if !cfg.InsecureDevAuth {
			return nil, fmt.Errorf("%w: the projector's HTTP needs an auth secret (signed tokens) or insecure development auth", ErrConfig)
		}
		return nil, nil
	}
	return api.SignedAuth{Secret: []byte(cfg.AuthSecret), Audience: api.AudienceProjector,
		ServiceSecrets: map[string]string{"validator": cfg.ServiceSecret}}, nil
}

// GatewayRole composes the gateway role: NATS, routing (with the regions'
// read replicas), the regions' services and contract servers, the HTTP API
// and its metrics.
func GatewayRole(cfg *Config, ep *Endpoint) fx.Option {
	return fx.Options(fx.Supply(cfg, ep),
		fx.Provide(provideConn, provideRoutingStore, provideResolvers, provideLocker, provideRegions, metrics.New),
		fx.Invoke(serveContracts),
		API(),
		Metrics(false))
}

// DefaultSweepInterval is how often service and gateway roles sweep
// expired tombstones from their regions' stores (paper 001 §4.3).
const DefaultSweepInterval = 10 * time.Minute

// Sweeps runs SweepRegions every interval while the app runs (not at all
// for 0), as an actor.
func Sweeps(every time.Duration) fx.Option {
	return fx.Invoke(func(cfg *Config, regions Regions, actors *Actors) {
		if every <= 0 {
			return
		}
		actors.Add("tombstone sweep", func(ctx context.Context) error {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return nil
				case now := <-t.C:
					n, err := SweepRegions(regions, now)
					if err != nil {
						cfg.Logger.Warn("tombstone sweep", "removed", n, "err", err)
					} else if n > 0 {
						cfg.Logger.Info("tombstone sweep", "removed", n)
					}
				}
			}
		}, nil)
	})
}

// SweepRegions removes the tombstones expired at now from every store of
// every region and returns how many went; it goes on past a failing store
// and reports every error.
func SweepRegions(regions Regions, now time.Time) (int, error) {
	total := 0
	var errs []error
	for _, name := range regions.Names() {
		for _, p := range regions[name].Participants() {
			sp, ok := p.(interface{ Store() *store.Store })
			if !ok || sp.Store() == nil {
				continue
			}
			n, err := sp.Store().SweepTombstones(now)
			total += n
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/%s: %w", name, p.Service(), err))
			}
		}
		// The messages on the participant kit (PostgreSQL) sweep their own.
		if sw, ok := regions[name].MessagesStorage().(interface {
			SweepTombstones(context.Context, time.Time) (int, error)
		}); ok {
			n, err := sw.SweepTombstones(context.Background(), now)
			total += n
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/messages: %w", name, err))
			}
		}
	}
	return total, errors.Join(errs...)
}

// Names are the regions' names, sorted.
func (m Regions) Names() []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

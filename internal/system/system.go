// Package system boots a whole cutover deployment in one process —
// embedded NATS (1 or 3 nodes), the regions' services and their contract
// servers, the HTTP API, orchestrator workers and the projector — for
// `cutover dev`, the demo, chaos and every bench suite (Start), and
// composes the deployment's roles for the separate processes of
// DESIGN.md "Scaling out" (ServiceRole, OrchestratorRole, ProjectorRole,
// GatewayRole, NATSNode, run by App.Run). Every long-running component is
// an actor of one oklog/run group: the first to fail stops the process.
package system

import (
	"context"
	"crypto/rand"
	"os"

	"github.com/cutover/cutover/app/api"
	"github.com/cutover/cutover/internal/metrics"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/projector"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/fx"
)

// System is a running all-in-one deployment. Its fields are set by Start
// and read-only afterwards.
type System struct {
	Config *Config
	// NATSURL is the deployment's client URL(s); NC and JS the process's
	// connection.
	NATSURL string
	// RegionURLs, in a supercluster, are each region's own cluster URLs.
	RegionURLs map[string]string
	NC         *nats.Conn
	JS         jetstream.JetStream
	// Routing is the routing store; Locker the lock lifecycle over it;
	// Resolvers each region's cached resolver.
	Routing   *kvrouting.Store
	Locker    *kvrouting.Locker
	Resolvers Resolvers
	Regions   Regions
	// APIURL is the user-facing API's base URL (http://host:port); API
	// is its handler (QueueStats).
	APIURL string
	API    *api.Server
	// DashboardURL serves the projector's read models and the operator
	// dashboard (Config.DashboardAddr; "" without).
	DashboardURL string
	Orch         *orchestrator.Client
	Directory    orchestrator.Directory
	// Workers are the workers Start runs (none with Config.Workers = -1);
	// Projector is nil with Config.NoProjector.
	Workers   []*orchestrator.Worker
	Projector *projector.Projector
	Metrics   *metrics.Metrics
	// Source and Target are the first two regions (Target = Source with
	// one region).
	Source, Target string

	app     *App
	tempDir string
}

// Start boots the deployment cfg describes (EnsureDefaults is applied)
// and returns once every component has started; cfg.DataDir "" with
// InMemory false uses a temporary directory that Close removes. Errors:
// ErrConfig, or the first component's start error (everything started is
// stopped again).
//
// Start is the development deployment: without an AuthSecret it runs
// development identities (Config.InsecureDevAuth), and without a
// ServiceSecret it draws a random one (Config.ServiceSecret says which)
// that its own orchestrator's validator and API share.
func Start(ctx context.Context, cfg Config) (*System, error) {
	if err := cfg.EnsureDefaults(); err != nil {
		return nil, err
	}
	if cfg.AuthSecret == "" {
		cfg.InsecureDevAuth = true
	}
	if cfg.ServiceSecret == "" {
		cfg.ServiceSecret = RandomSecret()
	}
	if cfg.ContractSecret == "" && cfg.ContractKey == nil {
		cfg.ContractSecret = RandomSecret()
	}
	s := &System{Config: &cfg}
	if cfg.DataDir == "" && !cfg.InMemory {
		dir, err := os.MkdirTemp("", "cutover-")
		if err != nil {
			return nil, err
		}
		s.tempDir, cfg.DataDir = dir, dir
	}
	var (
		ep   *Endpoint
		hs   *HTTPServer
		dir  *contractnats.Directory
		opts = []fx.Option{Core(&cfg), API(), Orchestration(),
			fx.Populate(&ep, &hs, &s.NC, &s.JS, &s.Routing, &s.Locker, &s.Resolvers, &s.Regions, &s.Orch, &dir, &s.Workers, &s.Metrics, &s.API)}
	)
	var ph ProjectorHTTP
	if !cfg.NoProjector {
		opts = append(opts, Projection(), fx.Populate(&s.Projector))
		if cfg.DashboardAddr != "" {
			// The projector's read models and the operator dashboard.
			opts = append(opts, fx.Supply(ProjectorAddr(cfg.DashboardAddr)), fx.Provide(serveProjectorHTTP), fx.Populate(&ph))
		}
	}
	opts = append(opts, Metrics(!cfg.NoEventMetrics))
	s.app = NewApp(opts...)
	if err := s.app.Start(ctx); err != nil {
		s.removeTemp()
		return nil, err
	}
	s.NATSURL, s.RegionURLs, s.APIURL, s.Directory = ep.URL, ep.Regions, hs.URL(), dir
	if ph.HTTPServer != nil {
		s.DashboardURL = ph.URL()
	}
	s.Source, s.Target = cfg.Regions[0], cfg.Regions[min(1, len(cfg.Regions)-1)]
	return s, nil
}

// Done is closed when a component has failed (Err says why) or Close ran.
func (s *System) Done() <-chan struct{} { return s.app.Done() }

// Close stops every component, then removes a temporary data directory.
// It returns the first component failure joined with any stop error.
func (s *System) Close() error {
	err := s.app.Stop()
	s.removeTemp()
	return err
}

func (s *System) removeTemp() {
	if s.tempDir != "" {
		_ = os.RemoveAll(s.tempDir)
	}
}

// RandomSecret returns a random secret of at least 256 bits (two
// crypto/rand texts): one no one configured and no one can guess.
func RandomSecret() string { return rand.Text() + rand.Text() }

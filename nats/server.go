package cnats

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cutover/cutover/nats/natsclient"
)

// Defaults applied by StartServer for zero-valued Options fields.
const (
	// DefaultHost is the only kind of address the embedded server listens on:
	// loopback.
	DefaultHost = "127.0.0.1"
	// DefaultMaxMemory is the JetStream memory-storage limit (256 MiB).
	DefaultMaxMemory int64 = 256 << 20
	// DefaultMaxStore is the JetStream file-storage limit (4 GiB).
	DefaultMaxStore int64 = 4 << 30
	// DefaultStartTimeout bounds how long a start or restart may take to
	// accept connections with JetStream enabled.
	DefaultStartTimeout = 20 * time.Second
)

// Options configures one embedded server. Zero values mean the documented
// defaults.
type Options struct {
	// Name is the server name; default "cutover-<random>". Cluster nodes
	// must keep their name across restarts (Raft peers are identified by it),
	// which Restart does.
	Name string
	// Host is the listen address; default DefaultHost. It must be a loopback
	// address: the embedded server is never reachable from the network.
	Host string
	// Port is the client port; 0 picks a free port on first start, which
	// Restart then reuses.
	Port int
	// StoreDir is the JetStream store directory. "" creates a fresh temporary
	// directory that Shutdown removes; a given directory is never removed.
	StoreDir string
	// SyncAlways selects JetStream sync_interval "always" (fsync on every
	// write) when nil or true, as DESIGN.md "Durability and hazards" requires.
	// false keeps the server default (background fsync every 2 minutes) or
	// SyncInterval.
	SyncAlways *bool
	// SyncInterval is the background fsync interval; used only when
	// SyncAlways is false and SyncInterval > 0.
	SyncInterval time.Duration
	// MaxMemory is the JetStream memory-storage limit; 0 = DefaultMaxMemory.
	MaxMemory int64
	// MaxStore is the JetStream file-storage limit; 0 = DefaultMaxStore.
	MaxStore int64
	// Logging prints the server log to stderr (default off).
	Logging bool

	// ClusterName enables clustering (routes) under this name; "" runs a
	// standalone server. StartCluster fills the cluster fields.
	ClusterName string
	// ClusterPort is the route listen port; 0 picks a free port on first
	// start, which Restart then reuses.
	ClusterPort int
	// Routes are the route URLs of the other nodes, e.g.
	// "nats-route://127.0.0.1:6222".
	Routes []string
	// ClusterAdvertise is the route address the node gossips to its peers
	// ("": its real one). The proxied chaos cluster gives an address nobody
	// listens on, so peers reach a node only through the Routes (proxies)
	// they were given and a partition cuts every route of the node.
	ClusterAdvertise string

	// GatewayPort enables a gateway (supercluster link) named after
	// ClusterName, listening on this port; 0 with no Gateways means no
	// gateway. StartSupercluster fills the gateway fields.
	GatewayPort int
	// Gateways are the other clusters this node solicits gateway
	// connections to.
	Gateways []Gateway
	// GatewayAdvertise is the gateway address the node gossips ("": its
	// real one). A supercluster whose links pass through WAN proxies gives
	// an address nobody listens on, so no gateway bypasses the proxies.
	GatewayAdvertise string
}

// Gateway is a remote cluster a node links to: its name and gateway URLs,
// e.g. "nats://127.0.0.1:7222".
type Gateway struct {
	Name string
	URLs []string
}

// Bool returns a pointer to b, for Options.SyncAlways and
// ClusterOptions.SyncAlways.
func Bool(b bool) *bool { return &b }

// resolved is Options after defaults and validation.
type resolved struct {
	name         string
	host         string
	storeDir     string
	tempStore    bool
	syncAlways   bool
	syncInterval time.Duration
	maxMemory    int64
	maxStore     int64
	logging      bool
	clusterName  string
	routes       []*url.URL
	advertise    string
	gateway      bool
	gateways     []*server.RemoteGatewayOpts
	gwAdvertise  string
}

// Validate reports whether the options can start a server. It returns an
// error wrapping ErrInvalidOptions.
func (o Options) Validate() error {
	if o.Host != "" && !isLoopback(o.Host) {
		return fmt.Errorf("%w: host %q is not a loopback address", ErrInvalidOptions, o.Host)
	}
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("%w: port %d", ErrInvalidOptions, o.Port)
	}
	if o.ClusterPort < 0 || o.ClusterPort > 65535 {
		return fmt.Errorf("%w: cluster port %d", ErrInvalidOptions, o.ClusterPort)
	}
	if o.MaxMemory < 0 || o.MaxStore < 0 || o.SyncInterval < 0 {
		return fmt.Errorf("%w: negative limit", ErrInvalidOptions)
	}
	if o.ClusterName == "" && (len(o.Routes) > 0 || o.ClusterPort != 0) {
		return fmt.Errorf("%w: routes or cluster port without a cluster name", ErrInvalidOptions)
	}
	if o.GatewayPort < 0 || o.GatewayPort > 65535 {
		return fmt.Errorf("%w: gateway port %d", ErrInvalidOptions, o.GatewayPort)
	}
	if o.ClusterName == "" && (len(o.Gateways) > 0 || o.GatewayPort != 0) {
		return fmt.Errorf("%w: gateways without a cluster name", ErrInvalidOptions)
	}
	for _, g := range o.Gateways {
		if !natsclient.ValidToken(g.Name, false) || len(g.URLs) == 0 {
			return fmt.Errorf("%w: gateway %q with %d urls", ErrInvalidOptions, g.Name, len(g.URLs))
		}
		for _, r := range g.URLs {
			if _, err := parseRoute(r); err != nil {
				return err
			}
		}
	}
	if !natsclient.ValidToken(o.ClusterName, true) {
		return fmt.Errorf("%w: cluster name %q", ErrInvalidOptions, o.ClusterName)
	}
	if !natsclient.ValidToken(o.Name, true) {
		return fmt.Errorf("%w: server name %q", ErrInvalidOptions, o.Name)
	}
	for _, r := range o.Routes {
		if _, err := parseRoute(r); err != nil {
			return err
		}
	}
	return nil
}

func parseRoute(r string) (*url.URL, error) {
	u, err := url.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("%w: route %q: %w", ErrInvalidOptions, r, err)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%w: route %q has no host", ErrInvalidOptions, r)
	}
	return u, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Server is an embedded nats-server with JetStream. It can be stopped and
// restarted on the same ports and store, which fault tests use. All methods
// are safe for concurrent use; lifecycle methods (Stop, Restart, Shutdown)
// are serialised.
type Server struct {
	cfg resolved
	// layer, when set, adds settings on top of serverOptions at every
	// start (SecureOptions.apply); it never changes after construction.
	layer func(*server.Options) error

	// life serialises lifecycle operations; it is held across start and
	// shutdown on purpose, so that a Restart never overlaps a Shutdown.
	life sync.Mutex

	mu struct {
		sync.Mutex
		srv         *server.Server // last started instance, nil before the first start
		port        int            // client port, fixed after the first start
		clusterPort int            // route port, fixed after the first start
		gatewayPort int            // gateway port, fixed after the first start
		closed      bool           // the temporary store was removed
	}
}

// StartServer starts an embedded server and returns once it accepts client
// connections and JetStream is enabled. It returns an error wrapping
// ErrInvalidOptions for bad options and ErrStartFailed when the server fails
// (a port is taken) or does not become ready within DefaultStartTimeout.
func StartServer(opts Options) (*Server, error) {
	s, err := newServer(opts)
	if err != nil {
		return nil, err
	}
	if err := s.firstStart(); err != nil {
		return nil, err
	}
	return s, nil
}

// firstStart starts a Server made by newServer, removing its temporary store
// if the start fails.
func (s *Server) firstStart() error {
	s.life.Lock()
	defer s.life.Unlock()
	if err := s.startLocked(); err != nil {
		s.removeTempStore()
		return err
	}
	return nil
}

// newServer resolves opts into a Server that has not been started.
func newServer(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg := resolved{
		name:         opts.Name,
		host:         opts.Host,
		storeDir:     opts.StoreDir,
		syncAlways:   opts.SyncAlways == nil || *opts.SyncAlways,
		syncInterval: opts.SyncInterval,
		maxMemory:    opts.MaxMemory,
		maxStore:     opts.MaxStore,
		logging:      opts.Logging,
		clusterName:  opts.ClusterName,
		advertise:    opts.ClusterAdvertise,
	}
	if cfg.name == "" {
		cfg.name = "cutover-" + randomHex(4)
	}
	if cfg.host == "" {
		cfg.host = DefaultHost
	}
	if cfg.maxMemory == 0 {
		cfg.maxMemory = DefaultMaxMemory
	}
	if cfg.maxStore == 0 {
		cfg.maxStore = DefaultMaxStore
	}
	if cfg.syncAlways {
		cfg.syncInterval = 0
	}
	for _, r := range opts.Routes {
		u, err := parseRoute(r)
		if err != nil {
			return nil, err
		}
		cfg.routes = append(cfg.routes, u)
	}
	cfg.gateway = opts.GatewayPort != 0 || len(opts.Gateways) > 0
	cfg.gwAdvertise = opts.GatewayAdvertise
	for _, g := range opts.Gateways {
		rg := &server.RemoteGatewayOpts{Name: g.Name}
		for _, r := range g.URLs {
			u, err := parseRoute(r)
			if err != nil {
				return nil, err
			}
			rg.URLs = append(rg.URLs, u)
		}
		cfg.gateways = append(cfg.gateways, rg)
	}
	if cfg.storeDir == "" {
		dir, err := os.MkdirTemp("", "cutover-nats-")
		if err != nil {
			return nil, fmt.Errorf("cnats: create store dir: %w", err)
		}
		cfg.storeDir, cfg.tempStore = dir, true
	}
	s := &Server{cfg: cfg}
	s.mu.port, s.mu.clusterPort, s.mu.gatewayPort = opts.Port, opts.ClusterPort, opts.GatewayPort
	return s, nil
}

// serverOptions builds fresh nats-server options for one start from the
// resolved Options; nats-server mutates the struct it is given, so it is
// never reused. It is the only place our options become nats-server's: the
// secure path layers its settings on top (Server.layer).
func (s *Server) serverOptions(port, clusterPort, gatewayPort int) *server.Options {
	o := &server.Options{
		ServerName:         s.cfg.name,
		Host:               s.cfg.host,
		Port:               orRandom(port),
		NoSigs:             true,
		NoLog:              true, // our logger is attached with SetLoggerV2
		JetStream:          true,
		StoreDir:           s.cfg.storeDir,
		JetStreamMaxMemory: s.cfg.maxMemory,
		JetStreamMaxStore:  s.cfg.maxStore,
		SyncAlways:         s.cfg.syncAlways,
		SyncInterval:       s.cfg.syncInterval,
	}
	if s.cfg.clusterName != "" {
		o.Cluster.Name = s.cfg.clusterName
		o.Cluster.Host = s.cfg.host
		o.Cluster.Port = orRandom(clusterPort)
		o.Cluster.Advertise = s.cfg.advertise
		o.Routes = append([]*url.URL(nil), s.cfg.routes...)
	}
	if s.cfg.gateway {
		o.Gateway.Name = s.cfg.clusterName
		o.Gateway.Host = s.cfg.host
		o.Gateway.Port = orRandom(gatewayPort)
		o.Gateway.Advertise = s.cfg.gwAdvertise
		for _, g := range s.cfg.gateways {
			c := *g
			c.URLs = append([]*url.URL(nil), g.URLs...)
			o.Gateway.Gateways = append(o.Gateway.Gateways, &c)
		}
	}
	return o
}

func orRandom(port int) int {
	if port == 0 {
		return server.RANDOM_PORT
	}
	return port
}

// startLocked starts a new server instance; s.life must be held.
func (s *Server) startLocked() error {
	s.mu.Lock()
	port, clusterPort, gatewayPort, closed := s.mu.port, s.mu.clusterPort, s.mu.gatewayPort, s.mu.closed
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}

	so := s.serverOptions(port, clusterPort, gatewayPort)
	if s.layer != nil {
		if err := s.layer(so); err != nil {
			return err
		}
	}
	ns, err := server.NewServer(so)
	if err != nil {
		return fmt.Errorf("cnats: new server %s: %w", s.cfg.name, err)
	}
	logger := newServerLogger(s.cfg.name, s.cfg.logging)
	ns.SetLoggerV2(logger, false, false, false)
	go ns.Start()

	deadline := time.Now().Add(DefaultStartTimeout)
	fail := func(what string) error {
		ns.Shutdown()
		ns.WaitForShutdown()
		return fmt.Errorf("%w: %s %s: %s", ErrStartFailed, s.cfg.name, what, logger.reason())
	}
	// ReadyForConnections alone would wait out its whole timeout when a
	// listener fails (port taken); poll it briefly and stop at a fatal log.
	for !ns.ReadyForConnections(25 * time.Millisecond) {
		if logger.fatal() {
			return fail("failed")
		}
		if time.Now().After(deadline) {
			return fail("not ready for connections")
		}
	}
	for !ns.JetStreamEnabled() {
		if logger.fatal() {
			return fail("failed")
		}
		if time.Now().After(deadline) {
			return fail("JetStream not enabled")
		}
		time.Sleep(10 * time.Millisecond)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.srv = ns
	if a, ok := ns.Addr().(*net.TCPAddr); ok {
		s.mu.port = a.Port
	}
	if a := ns.ClusterAddr(); a != nil {
		s.mu.clusterPort = a.Port
	}
	if a := ns.GatewayAddr(); a != nil {
		s.mu.gatewayPort = a.Port
	}
	return nil
}

// stopLocked shuts the current instance down and waits for it; s.life must
// be held.
func (s *Server) stopLocked() {
	s.mu.Lock()
	ns := s.mu.srv
	s.mu.Unlock()
	if ns == nil {
		return
	}
	ns.Shutdown()
	ns.WaitForShutdown()
}

func (s *Server) removeTempStore() {
	if !s.cfg.tempStore {
		return
	}
	s.mu.Lock()
	already := s.mu.closed
	s.mu.closed = true
	s.mu.Unlock()
	if !already {
		_ = os.RemoveAll(s.cfg.storeDir)
	}
}

// ClientURL returns the client URL, e.g. "nats://127.0.0.1:4222". It stays
// the same across Restart.
func (s *Server) ClientURL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "nats://" + net.JoinHostPort(s.cfg.host, strconv.Itoa(s.mu.port))
}

// ClusterURL returns the route URL ("nats-route://host:port") of a clustered
// server, or "" for a standalone one.
func (s *Server) ClusterURL() string {
	if s.cfg.clusterName == "" {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return "nats-route://" + net.JoinHostPort(s.cfg.host, strconv.Itoa(s.mu.clusterPort))
}

// GatewayURL returns the gateway URL ("nats://host:port") of a node with a
// gateway, or "" otherwise.
func (s *Server) GatewayURL() string {
	if !s.cfg.gateway {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return "nats://" + net.JoinHostPort(s.cfg.host, strconv.Itoa(s.mu.gatewayPort))
}

// Name returns the server name.
func (s *Server) Name() string { return s.cfg.name }

// StoreDir returns the JetStream store directory (nats-server keeps its data
// under StoreDir()/jetstream).
func (s *Server) StoreDir() string { return s.cfg.storeDir }

// Inner returns the current nats-server instance, for inspection in tests. It
// changes on Restart; after Stop or Shutdown it is the stopped instance.
func (s *Server) Inner() *server.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.srv
}

// Running reports whether the server is running.
func (s *Server) Running() bool {
	ns := s.Inner()
	return ns != nil && ns.Running()
}

// Stop shuts the server down and waits for it, keeping the store (even a
// temporary one) so that Restart can bring it back. It is idempotent.
func (s *Server) Stop() {
	s.life.Lock()
	defer s.life.Unlock()
	s.stopLocked()
}

// Shutdown shuts the server down, waits for it, and removes the store if it
// was a temporary one. It is idempotent. After Shutdown of a server with a
// temporary store, Restart returns ErrClosed; a given StoreDir is kept and
// can be restarted.
func (s *Server) Shutdown() {
	s.life.Lock()
	defer s.life.Unlock()
	s.stopLocked()
	s.removeTempStore()
}

// Restart shuts the server down if it is running and starts it again with the
// same name, ports and store, so clients reconnect to the same URL and
// JetStream recovers its file-stored streams. It returns ErrClosed after
// Shutdown removed a temporary store, or the start errors of StartServer.
func (s *Server) Restart() error {
	s.life.Lock()
	defer s.life.Unlock()
	s.stopLocked()
	return s.startLocked()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

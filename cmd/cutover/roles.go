package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/projector"
	"github.com/cutover/cutover/services/api"
	"github.com/cutover/cutover/services/chat"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/cutover/cutover/services/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/fx"
)

// Roles: the same binary runs every part of a deployment (DESIGN.md
// "Scaling out"). Each role is an fx app composed from the providers of
// system.go; it runs until its context ends (SIGINT, SIGTERM).

func init() {
	register("nats", "run an embedded NATS/JetStream node (standalone, or one node of a loopback cluster)", oneLine(runNATSRole))
	register("service", "run one region's chat services on the NATS migration contract", oneLine(runServiceRole))
	register("orchestrator", "run phase-engine workers (no HTTP)", oneLine(runOrchestratorRole))
	register("projector", "serve the migration read models and /metrics over HTTP", oneLine(runProjectorRole))
	register("gateway", "run regions' chat services and the user-facing HTTP API in one process", oneLine(runGatewayRole))
}

// roleFlags are the flags every role connected to a deployment has.
type roleFlags struct {
	nats     *string
	logLevel *string
	// Security of the NATS connection (issue 8; nats/security.go).
	user, password         *string
	tlsCA, tlsCert, tlsKey *string
	checkConfig            *bool
}

// passwordEnv supplies --nats-password when the flag is not given (flags
// are visible in the process list).
const passwordEnv = "CUTOVER_NATS_PASSWORD"

func addRoleFlags(fs *flag.FlagSet) roleFlags {
	return roleFlags{
		nats:        fs.String("nats", defaultNATS, "NATS URL(s) of the deployment, comma separated"),
		logLevel:    fs.String("log-level", "info", "log level: debug, info, warn or error (logs go to stderr)"),
		user:        fs.String("nats-user", "", "NATS user (its identity's permissions apply: routing, orchestrator, service, reader)"),
		password:    fs.String("nats-password", "", "NATS password (default $"+passwordEnv+", which keeps it out of the process list)"),
		tlsCA:       fs.String("nats-ca", "", "CA certificate (PEM) verifying the NATS servers; enables TLS"),
		tlsCert:     fs.String("nats-cert", "", "client certificate (PEM) for servers that verify clients"),
		tlsKey:      fs.String("nats-key", "", "key of --nats-cert"),
		checkConfig: addCheckConfig(fs),
	}
}

func addCheckConfig(fs *flag.FlagSet) *bool {
	return fs.Bool("check-config", false, "validate the flags and exit 0 without starting (files and the network are not checked)")
}

// security is the connection's security, checked for consistency.
func (rf roleFlags) security() (cnats.ClientSecurity, error) {
	s := cnats.ClientSecurity{User: *rf.user, Password: *rf.password, CAFile: *rf.tlsCA, CertFile: *rf.tlsCert, KeyFile: *rf.tlsKey}
	if s.Password == "" && s.User != "" {
		s.Password = os.Getenv(passwordEnv)
	}
	if (s.User == "") != (s.Password == "") {
		return s, fmt.Errorf("%w: --nats-user and --nats-password (or $%s) go together", errUsage, passwordEnv)
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return s, fmt.Errorf("%w: --nats-cert and --nats-key go together", errUsage)
	}
	return s, nil
}

// configChecked reports the result of --check-config: the flags parsed
// and validated, the role does not start.
func configChecked(stdout io.Writer, role string) error {
	fmt.Fprintf(stdout, "cutover %s: configuration OK\n", role)
	return nil
}

// newLogger returns a text logger to w at level.
func newLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("%w: --log-level %q (want debug, info, warn or error)", errUsage, level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// joinDeployment prepares cfg for a process joining the deployment at
// url. The deployment's size decides the replica counts: cfg.Cluster is set
// to the node count seen from the server (1 for a standalone server, which
// refuses replicated streams), and the endpoint is supplied directly rather
// than through cfg.NATSURL, whose providers assume a 3-node cluster. The
// buckets and streams are provisioned here, with retries (see
// provisionDeployment); mirrors names the read replicas this role needs.
func joinDeployment(ctx context.Context, url string, sec cnats.ClientSecurity, cfg *systemConfig, mirrors []string) (*natsEndpoint, error) {
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
	cfg.Cluster = natsNodes(nc)
	cfg.NATSURL = ""
	if err := provisionDeployment(ctx, js, cfg.Cluster, mirrors, cfg.Logger); err != nil {
		return nil, err
	}
	return &natsEndpoint{URL: url}, nil
}

// provisionDeployment creates (or confirms) the routing bucket, the PAGES
// stream, the migration streams and mirrors, each with a short per-attempt
// timeout and retries. Roles starting together on a fresh cluster create
// the same R3 streams concurrently, and such a create can go unanswered:
// two concurrent CreateOrUpdateKeyValue calls on a fresh 3-node cluster
// both hung until their deadline in 2 of 4 runs, and an immediate retry
// answered at once. Creation is idempotent, so retrying is safe.
func provisionDeployment(ctx context.Context, js jetstream.JetStream, nodes int, mirrors []string, log *slog.Logger) error {
	replicas := cnats.DefaultReplicas(nodes)
	type step struct {
		what string
		do   func(context.Context) error
	}
	steps := []step{
		{"routing bucket", func(ctx context.Context) error {
			_, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{Nodes: nodes})
			return err
		}},
		{"pages stream", func(ctx context.Context) error {
			_, err := contractnats.ProvisionPages(ctx, js, replicas)
			return err
		}},
		{"migration streams", func(ctx context.Context) error {
			return orchestrator.Provision(ctx, js, orchestrator.StreamConfig{Replicas: replicas})
		}},
	}
	for _, r := range mirrors {
		steps = append(steps, step{"mirror " + r, func(ctx context.Context) error {
			_, err := cnats.ProvisionMirror(ctx, js, r, 1)
			return err
		}})
	}
	const attempts, perAttempt = 10, 3 * time.Second
	for _, s := range steps {
		var err error
		for n := 1; n <= attempts; n++ {
			actx, cancel := context.WithTimeout(ctx, perAttempt)
			err = s.do(actx)
			cancel()
			unanswered := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders)
			if err == nil || ctx.Err() != nil || !(unanswered || clusterForming(err)) {
				break
			}
			log.Warn("provisioning unanswered; retrying", "what", s.what, "attempt", n, "err", err)
			if !unanswered { // answered at once: give the cluster time to form
				select {
				case <-ctx.Done():
				case <-time.After(500 * time.Millisecond):
				}
			}
		}
		if err != nil {
			return fmt.Errorf("provision %s: %w", s.what, err)
		}
	}
	return nil
}

// roleConnIn is provideRoleConn's input: the connection's security is
// optional (TestValidateRoleApps composes the roles without it).
type roleConnIn struct {
	fx.In
	LC  fx.Lifecycle
	EP  *natsEndpoint
	Sec *cnats.ClientSecurity `optional:"true"`
}

// provideRoleConn is provideConn with the role's user and TLS settings.
func provideRoleConn(in roleConnIn) (*nats.Conn, jetstream.JetStream, error) {
	var opts []nats.Option
	if in.Sec != nil {
		var err error
		if opts, err = in.Sec.Options(); err != nil {
			return nil, nil, err
		}
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

// clusterForming reports whether err is JetStream saying its cluster is
// not ready yet: no peers for placement (10005) while the nodes' routes
// and meta group form, or the system temporarily unavailable (10008). A
// role started together with the nodes sees these; a retry succeeds once
// the cluster has formed.
func clusterForming(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == 10005 || apiErr.ErrorCode == 10008)
}

// natsNodes is the JetStream cluster size assumed behind nc: 1 for a
// standalone server (it refuses replicas > 1), else 3 (DESIGN.md "Scaling
// out": a 3-node cluster, R3).
func natsNodes(nc *nats.Conn) int {
	if nc.ConnectedClusterName() == "" {
		return 1
	}
	return cnats.DefaultClusterNodes
}

// runApp starts app, calls ready, and stops the app when ctx ends.
func runApp(ctx context.Context, app *fx.App, ready func()) error {
	if err := app.Err(); err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return err
	}
	ready()
	<-ctx.Done()
	stopCtx, cancel2 := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel2()
	return app.Stop(stopCtx)
}

// ------------------------------------------------------------------ nats

func runNATSRole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("nats", "nats [--port N] [--store DIR] [--name NAME] [--cluster-name NAME --cluster-port N --routes URL,...] [--log]\n\nAn embedded nats-server with JetStream (sync_interval always), listening on loopback only: for\ndevelopment and tests. A 3-node cluster is three of these with the same --cluster-name, each\nwith its own --name, --store, --port and --cluster-port and --routes to the other two\n(nats-route://127.0.0.1:PORT). Production runs nats-server itself.", stdout)
	port := fs.Int("port", 4222, "client port (0 = any free port)")
	store := fs.String("store", "", "JetStream store directory (empty = a temporary directory removed at exit)")
	name := fs.String("name", "", "server name (cluster nodes must keep theirs across restarts; empty = random)")
	clusterName := fs.String("cluster-name", "", "cluster name; empty runs a standalone server")
	clusterPort := fs.Int("cluster-port", 0, "route port of a cluster node (0 = any free port)")
	routes := fs.String("routes", "", "route URLs of the other cluster nodes, comma separated")
	logging := fs.Bool("log", false, "print the server's log to stderr")
	tlsCert := fs.String("tls-cert", "", "server certificate (PEM): TLS required on client connections")
	tlsKey := fs.String("tls-key", "", "key of --tls-cert")
	tlsCA := fs.String("tls-ca", "", "CA certificate (PEM) for --tls-verify-clients and --route-tls")
	verifyClients := fs.Bool("tls-verify-clients", false, "require client certificates signed by --tls-ca")
	routeTLS := fs.Bool("route-tls", false, "mutual TLS on cluster routes with --tls-cert/--tls-key, peers verified against --tls-ca")
	usersFile := fs.String("users", "", "JSON file of users [{\"name\",\"password\",\"identity\"}] (identities: routing, orchestrator, service, reader); empty = no authentication")
	checkConfig := addCheckConfig(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	opts := cnats.Options{Port: *port, StoreDir: *store, Name: *name, ClusterName: *clusterName,
		ClusterPort: *clusterPort, Routes: splitList(*routes), Logging: *logging}
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return fmt.Errorf("%w: --tls-cert and --tls-key go together", errUsage)
	}
	if (*verifyClients || *routeTLS) && (*tlsCA == "" || *tlsCert == "") {
		return fmt.Errorf("%w: --tls-verify-clients and --route-tls need --tls-ca, --tls-cert and --tls-key", errUsage)
	}
	if *routeTLS && *clusterName == "" {
		return fmt.Errorf("%w: --route-tls without --cluster-name", errUsage)
	}
	if *checkConfig {
		return configChecked(stdout, "nats")
	}
	sec, err := natsSecurity(opts, *tlsCA, *tlsCert, *tlsKey, *verifyClients, *routeTLS, *usersFile)
	if err != nil {
		return err
	}
	var srv *cnats.Server
	app := newApp(stdout, fx.Supply(sec), fx.Provide(provideNATSNode), fx.Populate(&srv))
	return runApp(ctx, app, func() {
		fmt.Fprintf(stdout, "cutover nats: node %s\n", srv.Name())
		fmt.Fprintf(stdout, "  NATS      %s\n", srv.ClientURL())
		fmt.Fprintf(stdout, "  store     %s\n", srv.StoreDir())
		if u := srv.ClusterURL(); u != "" {
			fmt.Fprintf(stdout, "  cluster   %s, routes on %s, peers %s\n", *clusterName, u, strings.Join(opts.Routes, ", "))
		}
		fmt.Fprintln(stdout, "Ctrl-C to stop.")
	})
}

// natsSecurity is the nats role's server configuration: opts plus TLS
// and users when the flags ask for them.
func natsSecurity(opts cnats.Options, ca, cert, key string, verifyClients, routeTLS bool, usersFile string) (cnats.SecureOptions, error) {
	sec := cnats.SecureOptions{Options: opts}
	var err error
	if cert != "" {
		if sec.TLS, err = cnats.ServerTLS(ca, cert, key, verifyClients); err != nil {
			return sec, err
		}
	}
	if routeTLS {
		if sec.RouteTLS, err = cnats.RouteTLSConfig(ca, cert, key); err != nil {
			return sec, err
		}
	}
	if usersFile != "" {
		b, err := os.ReadFile(usersFile)
		if err != nil {
			return sec, err
		}
		var us []struct {
			Name     string `json:"name"`
			Password string `json:"password"`
			Identity string `json:"identity"`
		}
		if err := json.Unmarshal(b, &us); err != nil {
			return sec, fmt.Errorf("%w: --users %s: %w", errUsage, usersFile, err)
		}
		for _, u := range us {
			sec.Users = append(sec.Users, cnats.User{Name: u.Name, Password: u.Password, Identity: cnats.Identity(u.Identity)})
		}
	}
	if err := sec.Validate(); err != nil {
		return sec, fmt.Errorf("%w: %w", errUsage, err)
	}
	return sec, nil
}

// provideNATSNode starts one embedded server (a secure one when sec asks
// for users or TLS); it stops with the app.
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

// ------------------------------------------------------------------ service

func runServiceRole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("service", "service --region R [--data DIR] [--nats URL] [--log-level L]\n\nOne region's chat services (conversations, messages, reactions, readstate, media) serving the\nmigration contract (export, import, fences, digests, cleanup) over NATS. They have no HTTP API:\n`cutover gateway` serves the API with its own in-process services, so never run `service` for a\nregion that a gateway serves.", stdout)
	rf := addRoleFlags(fs)
	region := fs.String("region", "", "the region served (required)")
	data := fs.String("data", "", "data directory of the region's Pebble stores (empty = in memory, lost at exit)")
	sweep := addSweepFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if err := parseRegion("region", *region); err != nil {
		return err
	}
	sec, err := rf.security()
	if err != nil {
		return err
	}
	if *sweep < 0 {
		return fmt.Errorf("%w: --sweep-interval must be >= 0", errUsage)
	}
	if _, err := newLogger(*rf.logLevel, io.Discard); err != nil {
		return err
	}
	if *rf.checkConfig {
		return configChecked(stdout, "service")
	}
	log, err := newLogger(*rf.logLevel, stderr)
	if err != nil {
		return err
	}
	cfg := &systemConfig{Regions: []string{*region}, DataDir: *data, Logger: log}
	if err := cfg.ensureDefaults(); err != nil {
		return err
	}
	ep, err := joinDeployment(ctx, *rf.nats, sec, cfg, nil)
	if err != nil {
		return err
	}
	app := newApp(stdout, serviceOptions(cfg, ep), fx.Supply(&sec), sweepOption(*sweep))
	return runApp(ctx, app, func() {
		log.Info("service started", "region", *region, "nats", ep.URL)
		fmt.Fprintf(stdout, "cutover service: region %s on the migration contract\n", *region)
		fmt.Fprintf(stdout, "  NATS      %s\n", ep.URL)
		fmt.Fprintf(stdout, "  services  %s\n", strings.Join(chat.ServiceNames, ", "))
		fmt.Fprintf(stdout, "  data      %s\n", dataLine(*data))
		fmt.Fprintln(stdout, "Ctrl-C to stop.")
	})
}

// serviceOptions composes the service role: NATS, the routing store (it
// provisions the routing bucket and the PAGES stream the contract servers
// publish to), the region's stores and their contract servers.
func serviceOptions(cfg *systemConfig, ep *natsEndpoint) fx.Option {
	return fx.Options(fx.Supply(cfg, ep),
		fx.Provide(provideRoleConn, provideRoutingStore, provideGuardLocker, provideRegions),
		fx.Invoke(func(*kvrouting.Store) {}),
		fx.Invoke(serveContracts))
}

// provideGuardLocker gives the service role the routing reads its cleanup
// guard needs (services.RoutingCleanupGuard only reads from the leader; the
// lock timings are the orchestrator's business).
func provideGuardLocker(cfg *systemConfig, st *kvrouting.Store) (*kvrouting.Locker, error) {
	return provideLocker(cfg, st, resolverMap{})
}

func dataLine(dir string) string {
	if dir == "" {
		return "in memory (lost at exit)"
	}
	return dir
}

// ------------------------------------------------------------------ orchestrator

// apiBase is the user-facing API's base URL the orchestrator validates
// through ("" = through the contract's digests).
type apiBase string

func runOrchestratorRole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("orchestrator", "orchestrator [--workers N] [--api URL] [--nats URL] [--log-level L]\n\nPhase-engine workers (paper 001 Algorithm 1) sharing the durable consumers of MIGRATION_CMDS\nand MIGRATION_WORK: run as many processes as you like, any worker resumes any migration.\nPre-cutover validation reads the services' digests through the migration contract, or through\nthe user-facing API (the path users take, paper 001 §5.3) when --api is given.", stdout)
	rf := addRoleFlags(fs)
	workers := fs.Int("workers", 2, "workers in this process")
	apiURL := fs.String("api", "", "base URL of the user-facing API to validate through (empty = the contract)")
	secret := fs.String("service-secret", "dev-secret", "secret of the validator's service identity at the API")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *workers < 1 {
		return fmt.Errorf("%w: --workers must be >= 1", errUsage)
	}
	if *apiURL != "" && !strings.HasPrefix(*apiURL, "http://") && !strings.HasPrefix(*apiURL, "https://") {
		return fmt.Errorf("%w: --api must be an http(s) URL", errUsage)
	}
	sec, err := rf.security()
	if err != nil {
		return err
	}
	if _, err := newLogger(*rf.logLevel, io.Discard); err != nil {
		return err
	}
	if *rf.checkConfig {
		return configChecked(stdout, "orchestrator")
	}
	log, err := newLogger(*rf.logLevel, stderr)
	if err != nil {
		return err
	}
	// The orchestrator serves no region. One region is enough for the
	// locker's convergence delay (max cache TTL + replication bound, the
	// same settings in every role) and provisions no read replica.
	cfg := &systemConfig{Regions: []string{"us-east"}, Workers: *workers, ServiceSecret: *secret, Logger: log}
	if err := cfg.ensureDefaults(); err != nil {
		return err
	}
	ep, err := joinDeployment(ctx, *rf.nats, sec, cfg, nil)
	if err != nil {
		return err
	}
	var ws []*orchestrator.Worker
	var lk *kvrouting.Locker
	app := newApp(stdout, orchestratorOptions(cfg, ep, apiBase(strings.TrimRight(*apiURL, "/"))), fx.Supply(&sec), fx.Populate(&ws, &lk))
	return runApp(ctx, app, func() {
		validation := "contract digests"
		if *apiURL != "" {
			validation = "API " + *apiURL
		}
		log.Info("orchestrator started", "workers", len(ws), "nats", ep.URL, "validation", validation)
		fmt.Fprintf(stdout, "cutover orchestrator: %d workers\n", len(ws))
		fmt.Fprintf(stdout, "  NATS        %s\n", ep.URL)
		fmt.Fprintf(stdout, "  consumers   %s on %s, %s on %s\n", orchestrator.CommandConsumer, events.CommandStream, orchestrator.WorkConsumer, events.WorkStream)
		fmt.Fprintf(stdout, "  validation  %s\n", validation)
		fmt.Fprintf(stdout, "  convergence %s + buffer %s\n", lk.Config().ConvergenceDelay, cfg.Orchestrator.ConvergenceBuffer)
		fmt.Fprintln(stdout, "Ctrl-C to stop.")
	})
}

// orchestratorOptions composes the orchestrator role: NATS, the routing
// store and locker, the directory over the contract, the workers.
func orchestratorOptions(cfg *systemConfig, ep *natsEndpoint, base apiBase) fx.Option {
	return fx.Options(fx.Supply(cfg, ep, base),
		fx.Provide(provideRoleConn, provideRoutingStore, provideResolvers, provideLocker, provideRoleDirectory, provideWorkers),
		fx.Invoke(func([]*orchestrator.Worker) {}))
}

// provideRoleDirectory is the orchestrator's directory over the NATS
// contract, validating through base when it is set.
func provideRoleDirectory(cfg *systemConfig, nc *nats.Conn, js jetstream.JetStream, base apiBase) *contractnats.Directory {
	return contractnats.NewDirectory(nc, js, chat.ServicesFor, contractnats.DirectoryOptions{
		APIURL: func() string { return string(base) }, APIDigestsPath: api.InternalDigestsPath, Secret: cfg.ServiceSecret})
}

// ------------------------------------------------------------------ projector

// projectorAddr is the projector's HTTP listen address.
type projectorAddr string

func runProjectorRole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("projector", "projector [--http ADDR] [--nats URL] [--log-level L]\n\nFolds MIGRATION_EVENTS into read models (rebuilt from sequence 1 at start) and serves them:\n  GET /v1/migrations[?status=S&resource=R&limit=N]   recent migrations, newest first\n  GET /v1/migrations/{id}                            one migration with its timeline\n  GET /v1/tenants/{id}                               a tenant fan-out's progress\n  GET /metrics                                       Prometheus (phase durations, rollbacks, ...)", stdout)
	rf := addRoleFlags(fs)
	addr := fs.String("http", "127.0.0.1:8081", "HTTP listen address")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	sec, err := rf.security()
	if err != nil {
		return err
	}
	if err := checkListenAddr("http", *addr); err != nil {
		return err
	}
	if _, err := newLogger(*rf.logLevel, io.Discard); err != nil {
		return err
	}
	if *rf.checkConfig {
		return configChecked(stdout, "projector")
	}
	log, err := newLogger(*rf.logLevel, stderr)
	if err != nil {
		return err
	}
	cfg := &systemConfig{Logger: log}
	if err := cfg.ensureDefaults(); err != nil {
		return err
	}
	ep, err := joinDeployment(ctx, *rf.nats, sec, cfg, nil)
	if err != nil {
		return err
	}
	var hs *projectorHTTP
	app := newApp(stdout, projectorOptions(cfg, ep, projectorAddr(*addr)), fx.Supply(&sec), fx.Populate(&hs))
	return runApp(ctx, app, func() {
		log.Info("projector started", "http", hs.addr, "nats", ep.URL)
		fmt.Fprintln(stdout, "cutover projector: read models of "+events.EventStream)
		fmt.Fprintf(stdout, "  NATS      %s\n", ep.URL)
		fmt.Fprintf(stdout, "  HTTP      http://%s/v1/migrations   (also /v1/migrations/{id}, /v1/tenants/{id}, /metrics)\n", hs.addr)
		fmt.Fprintln(stdout, "Ctrl-C to stop.")
	})
}

// projectorOptions composes the projector role: NATS, the migration
// streams, the projector, its HTTP server and the metrics fed by the events.
func projectorOptions(cfg *systemConfig, ep *natsEndpoint, addr projectorAddr) fx.Option {
	return fx.Options(fx.Supply(cfg, ep, addr),
		fx.Provide(provideRoleConn, provideMetrics, provideStreams, provideProjectorAfterStreams, serveProjectorHTTP),
		metricsModule(true),
		fx.Invoke(func(*projectorHTTP) {}))
}

// migrationStreams marks the migration streams as provisioned.
type migrationStreams struct{}

// provideStreams creates the migration streams if no orchestrator has yet
// (idempotent; replicas as the orchestrator chooses them), so the
// projector has something to consume.
func provideStreams(cfg *systemConfig, js jetstream.JetStream) (migrationStreams, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	replicas := 1
	if cfg.Cluster > 1 {
		replicas = 3
	}
	if err := orchestrator.Provision(ctx, js, orchestrator.StreamConfig{Replicas: replicas}); err != nil {
		return migrationStreams{}, fmt.Errorf("provision migration streams: %w", err)
	}
	return migrationStreams{}, nil
}

func provideProjectorAfterStreams(lc fx.Lifecycle, cfg *systemConfig, js jetstream.JetStream, _ migrationStreams) *projector.Projector {
	return provideProjector(lc, cfg, js)
}

// projectorHTTP is the projector's running HTTP listener.
type projectorHTTP struct{ addr string }

func serveProjectorHTTP(lc fx.Lifecycle, addr projectorAddr, p *projector.Projector, m *metrics) *projectorHTTP {
	hs := &projectorHTTP{}
	srv := &http.Server{Handler: projectorMux(p, m), ReadHeaderTimeout: 10 * time.Second}
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			a := string(addr)
			if a == "" {
				a = "127.0.0.1:0"
			}
			ln, err := net.Listen("tcp", a)
			if err != nil {
				return fmt.Errorf("http listen %s: %w", a, err)
			}
			hs.addr = ln.Addr().String()
			go func() { _ = srv.Serve(ln) }()
			return nil
		},
		OnStop: func(ctx context.Context) error { return srv.Shutdown(ctx) },
	})
	return hs
}

func projectorMux(p *projector.Projector, m *metrics) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		sendJSON(w, http.StatusOK, map[string]any{"ok": true, "last_seq": p.LastSeq()})
	})
	mux.HandleFunc("GET /v1/migrations", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit := 100
		if s := q.Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				sendError(w, http.StatusBadRequest, "invalid", "limit must be a non-negative integer")
				return
			}
			limit = n
		}
		status, resource := q.Get("status"), q.Get("resource")
		snap := p.Snapshot()
		out := []migrationJSON{}
		for _, v := range snap.Migrations {
			if (status != "" && string(v.Status) != status) || (resource != "" && v.Resource != resource) {
				continue
			}
			out = append(out, toMigrationJSON(v, false))
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Updated > out[j].Updated })
		if limit > 0 && len(out) > limit {
			out = out[:limit]
		}
		durations := map[string]durationJSON{}
		for name, d := range snap.Durations {
			durations[name] = durationJSON{Count: d.Count, P50: d.P50.String(), P99: d.P99.String(), Max: d.Max.String()}
		}
		sendJSON(w, http.StatusOK, map[string]any{"last_seq": snap.LastSeq, "migrations": out, "durations": durations})
	})
	mux.HandleFunc("GET /v1/migrations/{id}", func(w http.ResponseWriter, r *http.Request) {
		v, ok := p.Migration(r.PathValue("id"))
		if !ok {
			sendError(w, http.StatusNotFound, "not_found", "no migration "+r.PathValue("id"))
			return
		}
		sendJSON(w, http.StatusOK, toMigrationJSON(v, true))
	})
	mux.HandleFunc("GET /v1/tenants/{id}", func(w http.ResponseWriter, r *http.Request) {
		t, ok := p.Tenant(r.PathValue("id"))
		if !ok {
			sendError(w, http.StatusNotFound, "not_found", "no tenant migration "+r.PathValue("id"))
			return
		}
		sendJSON(w, http.StatusOK, tenantJSON{ID: t.ID, Tenant: t.Tenant, Target: t.Target, Status: string(t.Status), Total: t.Total,
			Started: t.Started, Active: t.Active, Completed: t.Completed, Failed: t.Failed, Dropped: t.Dropped, Concurrency: t.Concurrency})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		sendError(w, http.StatusNotFound, "not_found", "no route "+r.Method+" "+r.URL.Path)
	})
	return mux
}

// migrationJSON is a projector.MigrationView over HTTP.
type migrationJSON struct {
	ID       string         `json:"id"`
	Resource string         `json:"resource,omitempty"`
	Tenant   string         `json:"tenant,omitempty"`
	Parent   string         `json:"parent,omitempty"`
	Source   string         `json:"source,omitempty"`
	Target   string         `json:"target,omitempty"`
	Phase    string         `json:"phase"`
	Status   string         `json:"status"`
	Attempt  int            `json:"attempt"`
	Reason   string         `json:"reason,omitempty"`
	Figures  *figuresJSON   `json:"figures,omitempty"`
	Children []string       `json:"children,omitempty"`
	LastSeq  uint64         `json:"last_seq"`
	Updated  string         `json:"updated"`
	Timeline []timelineJSON `json:"timeline,omitempty"`
}

type timelineJSON struct {
	Seq   uint64 `json:"seq"`
	Type  string `json:"type"`
	Phase string `json:"phase"`
	Time  string `json:"time"`
}

type tenantJSON struct {
	ID          string `json:"id"`
	Tenant      string `json:"tenant"`
	Target      string `json:"target"`
	Status      string `json:"status"`
	Total       int    `json:"total"`
	Started     int    `json:"started"`
	Active      int    `json:"active"`
	Completed   int    `json:"completed"`
	Failed      int    `json:"failed"`
	Dropped     int    `json:"dropped"`
	Concurrency int    `json:"concurrency"`
}

type durationJSON struct {
	Count int    `json:"count"`
	P50   string `json:"p50"`
	P99   string `json:"p99"`
	Max   string `json:"max"`
}

func toMigrationJSON(v projector.MigrationView, timeline bool) migrationJSON {
	j := migrationJSON{ID: v.ID, Resource: v.Resource, Tenant: v.Tenant, Parent: v.Parent, Source: v.Source, Target: v.Target,
		Phase: string(v.Phase), Status: string(v.Status), Attempt: v.Attempt, Reason: v.Reason, Figures: toFiguresJSON(v.Figures),
		Children: v.Children, LastSeq: v.LastSeq, Updated: rfc(v.Updated)}
	if timeline {
		for _, t := range v.Timeline {
			j.Timeline = append(j.Timeline, timelineJSON{Seq: t.Seq, Type: t.Type, Phase: string(t.Phase), Time: rfc(t.Time)})
		}
	}
	return j
}

func sendJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sendError writes the API's error shape.
func sendError(w http.ResponseWriter, status int, code, msg string) {
	sendJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// ------------------------------------------------------------------ gateway

func runGatewayRole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("gateway", "gateway --regions a,b [--http ADDR] [--data DIR] [--nats URL] [--log-level L]\n\nThe user-facing HTTP API. In this codebase the API dispatches to in-process chat.Region objects,\nso a gateway also runs the listed regions' chat services (and serves their migration contract\nover NATS): gateway = services + API in one process. Do not also run `cutover service` for these\nregions. The first region is the routing bucket's write region and where new conversations are\ncreated; the others read their KV mirror (read replica). /metrics is served next to the API.", stdout)
	rf := addRoleFlags(fs)
	regions := fs.String("regions", "us-east,eu-west", "regions served, comma separated; the first is the write region")
	addr := fs.String("http", "127.0.0.1:8080", "HTTP listen address of the API")
	data := fs.String("data", "", "data directory of the regions' Pebble stores (empty = in memory, lost at exit)")
	secret := fs.String("service-secret", "dev-secret", "secret of the validator's service identity")
	authSecret := fs.String("auth-secret", os.Getenv("CUTOVER_AUTH_SECRET"), "HMAC secret of signed user tokens (`cutover token`); empty = development tokens user:<id> (env CUTOVER_AUTH_SECRET)")
	sweep := addSweepFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	rs := splitList(*regions)
	if len(rs) == 0 {
		return fmt.Errorf("%w: --regions is empty", errUsage)
	}
	for _, r := range rs {
		if err := parseRegion("regions", r); err != nil {
			return err
		}
	}
	sec, err := rf.security()
	if err != nil {
		return err
	}
	if err := checkListenAddr("http", *addr); err != nil {
		return err
	}
	if *sweep < 0 {
		return fmt.Errorf("%w: --sweep-interval must be >= 0", errUsage)
	}
	if *authSecret != "" && len(*authSecret) < 16 {
		return fmt.Errorf("%w: --auth-secret must be at least 16 bytes", errUsage)
	}
	if _, err := newLogger(*rf.logLevel, io.Discard); err != nil {
		return err
	}
	if *rf.checkConfig {
		return configChecked(stdout, "gateway")
	}
	log, err := newLogger(*rf.logLevel, stderr)
	if err != nil {
		return err
	}
	cfg := &systemConfig{Regions: rs, DataDir: *data, HTTPAddr: *addr, ServiceSecret: *secret, AuthSecret: *authSecret, Logger: log}
	if err := cfg.ensureDefaults(); err != nil {
		return err
	}
	ep, err := joinDeployment(ctx, *rf.nats, sec, cfg, rs[1:])
	if err != nil {
		return err
	}
	var hs *httpServer
	app := newApp(stdout, gatewayOptions(cfg, ep), fx.Supply(&sec), sweepOption(*sweep), fx.Populate(&hs))
	return runApp(ctx, app, func() {
		log.Info("gateway started", "regions", rs, "http", hs.addr, "nats", ep.URL)
		fmt.Fprintf(stdout, "cutover gateway: regions %s (write region %s), services + HTTP API\n", strings.Join(rs, ", "), rs[0])
		fmt.Fprintf(stdout, "  NATS      %s\n", ep.URL)
		fmt.Fprintf(stdout, "  HTTP API  http://%s   (/metrics too)\n", hs.addr)
		fmt.Fprintf(stdout, "  data      %s\n", dataLine(*data))
		fmt.Fprintln(stdout, "Ctrl-C to stop.")
	})
}

// gatewayOptions composes the gateway role: NATS, routing (with the
// regions' read replicas), the regions' services and contract servers, the
// HTTP API and its metrics.
func gatewayOptions(cfg *systemConfig, ep *natsEndpoint) fx.Option {
	return fx.Options(fx.Supply(cfg, ep),
		fx.Provide(provideRoleConn, provideRoutingStore, provideResolvers, provideLocker, provideRegions, provideMetrics),
		fx.Invoke(serveContracts),
		apiModule(),
		metricsModule(false))
}

// checkListenAddr checks that addr is a host:port listen address.
func checkListenAddr(flagName, addr string) error {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return fmt.Errorf("%w: --%s %q is not host:port", errUsage, flagName, addr)
	}
	return nil
}

// ------------------------------------------------------------------ tombstone sweeps

// defaultSweepInterval is how often service and gateway roles sweep
// expired tombstones from their regions' stores (paper 001 §4.3).
const defaultSweepInterval = 10 * time.Minute

func addSweepFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("sweep-interval", defaultSweepInterval, "how often to remove expired tombstones from the stores (0 = never)")
}

// sweepOption runs sweepRegions every interval while the app runs (not at
// all for 0).
func sweepOption(every time.Duration) fx.Option {
	return fx.Invoke(func(lc fx.Lifecycle, cfg *systemConfig, regions regionMap) {
		if every <= 0 {
			return
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		lc.Append(fx.Hook{
			OnStart: func(context.Context) error {
				go func() {
					defer close(done)
					t := time.NewTicker(every)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case now := <-t.C:
							n, err := sweepRegions(regions, now)
							if err != nil {
								cfg.Logger.Warn("tombstone sweep", "removed", n, "err", err)
							} else if n > 0 {
								cfg.Logger.Info("tombstone sweep", "removed", n)
							}
						}
					}
				}()
				return nil
			},
			OnStop: func(context.Context) error { close(stop); <-done; return nil },
		})
	})
}

// sweepRegions removes the tombstones expired at now from every store of
// every region and returns how many went; it goes on past a failing store
// and reports every error.
func sweepRegions(regions regionMap, now time.Time) (int, error) {
	total := 0
	var errs []error
	for _, name := range sortedRegions(regions) {
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
	}
	return total, errors.Join(errs...)
}

// ------------------------------------------------------------------ health

func init() {
	register("health", "exit 0 when an HTTP endpoint answers 2xx or a NATS deployment answers JetStream requests (container health checks)", oneLine(runHealth))
}

func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("health", "health (--http URL | --nats URL [--nats-user U --nats-ca F ...]) [--timeout D]\n\nA health check for images without a shell or curl: GET --http URL must answer 2xx; or a\nconnection to --nats must answer a JetStream account-info request.", stdout)
	httpURL := fs.String("http", "", "URL to GET, e.g. http://127.0.0.1:8081/healthz")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	rf := addRoleFlags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	natsSet := false
	fs.Visit(func(f *flag.Flag) { natsSet = natsSet || f.Name == "nats" })
	if (*httpURL == "") == !natsSet {
		return fmt.Errorf("%w: give one of --http or --nats", errUsage)
	}
	sec, err := rf.security()
	if err != nil {
		return err
	}
	if *rf.checkConfig {
		return configChecked(stdout, "health")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if *httpURL != "" {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, *httpURL, nil)
		if err != nil {
			return fmt.Errorf("%w: --http: %w", errUsage, err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s: %s", *httpURL, resp.Status)
		}
		fmt.Fprintf(stdout, "healthy: %s %s\n", *httpURL, resp.Status)
		return nil
	}
	opts, err := sec.Options()
	if err != nil {
		return err
	}
	nc, js, err := cnats.Connect(ctx, *rf.nats, opts...)
	if err != nil {
		return err
	}
	defer nc.Close()
	if _, err := js.AccountInfo(ctx); err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	fmt.Fprintf(stdout, "healthy: %s\n", nc.ConnectedUrlRedacted())
	return nil
}

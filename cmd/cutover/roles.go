package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/orchestrator/approval"
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
	// Security of the NATS connection (nats/security.go).
	user                   *string
	password               *secretFlag
	tlsCA, tlsCert, tlsKey *string
	checkConfig            *bool
	// insecure is --insecure-dev-auth (nil for commands without it).
	insecure *bool
	// placement: a supercluster's stream placement.
	placement *string
}

func addRoleFlags(fs *flag.FlagSet) roleFlags {
	return roleFlags{
		nats:        fs.String("nats", defaultNATS, "NATS URL(s) of the deployment, comma separated"),
		logLevel:    fs.String("log-level", "info", "log level: debug, info, warn or error (logs go to stderr)"),
		user:        fs.String("nats-user", "", "NATS user (its identity's permissions apply: admin, routing, orchestrator, service, reader)"),
		password:    addSecret(fs, "nats-password", passwordEnv, "password of --nats-user"),
		tlsCA:       fs.String("nats-ca", "", "CA certificate (PEM) verifying the NATS servers; enables TLS"),
		tlsCert:     fs.String("nats-cert", "", "client certificate (PEM) for servers that verify clients"),
		tlsKey:      fs.String("nats-key", "", "key of --nats-cert"),
		checkConfig: addCheckConfig(fs),
	}
}

// addInsecure adds --insecure-dev-auth to a long-running role: without it
// the role refuses to start without real credentials.
func (rf *roleFlags) addInsecure(fs *flag.FlagSet) {
	rf.insecure = fs.Bool("insecure-dev-auth", false, "DEVELOPMENT ONLY: run without credentials (NATS without a user; the gateway accepts `Bearer user:<id>` "+
		"with no secret; the projector's HTTP is open). Without it the role refuses to start without real credentials")
}

// isInsecure reports --insecure-dev-auth.
func (rf roleFlags) isInsecure() bool { return rf.insecure != nil && *rf.insecure }

// insecureWarning is what a role says when it runs with development
// identities.
func insecureWarning(w io.Writer, role string) {
	fmt.Fprintf(w, "cutover %s: WARNING: --insecure-dev-auth: development identities, no credentials required; never run this in production\n", role)
}

// errNoCredentials is the refusal of a role started without credentials.
func errNoCredentials(role, missing string) error {
	return fmt.Errorf("%w: cutover %s refuses to start without %s; --insecure-dev-auth runs it without credentials (development only)", errUsage, role, missing)
}

// addPlacement adds --placement to a role that provisions streams.
func (rf *roleFlags) addPlacement(fs *flag.FlagSet) {
	rf.placement = fs.String("placement", "", "in a supercluster: home=R,pages=P places ROUTING in region R's cluster (each region's mirror in its own) and PAGES in P's; "+
		"every role of the deployment gives the same, and the roles connected to R provision (empty = where this connection is)")
}

// applyPlacement sets cfg's supercluster placement from --placement
// (home=R,pages=P; pages defaults to home). Errors: errUsage.
func (rf roleFlags) applyPlacement(cfg *system.Config) error {
	if rf.placement == nil || *rf.placement == "" {
		return nil
	}
	for _, kv := range splitList(*rf.placement) {
		k, v, ok := strings.Cut(kv, "=")
		if err := cnats.ValidateRegion(v); !ok || err != nil {
			return fmt.Errorf("%w: --placement %q: want home=REGION,pages=REGION", errUsage, *rf.placement)
		}
		switch k {
		case "home":
			cfg.Home = v
		case "pages":
			cfg.PagesRegion = v
		default:
			return fmt.Errorf("%w: --placement: unknown key %q (home, pages)", errUsage, k)
		}
	}
	if cfg.Home == "" {
		return fmt.Errorf("%w: --placement needs home=REGION", errUsage)
	}
	if cfg.PagesRegion == "" {
		cfg.PagesRegion = cfg.Home
	}
	return nil
}

func addCheckConfig(fs *flag.FlagSet) *bool {
	return fs.Bool("check-config", false, "validate the flags and exit 0 without starting (files and the network are not checked)")
}

// security is the connection's security, checked for consistency; the
// password is not read (loadPassword does, after --check-config). A role
// with --insecure-dev-auth available refuses to go on without a NATS user
// unless it is given.
func (rf roleFlags) security(role string) (cnats.ClientSecurity, error) {
	s := cnats.ClientSecurity{User: *rf.user, CAFile: *rf.tlsCA, CertFile: *rf.tlsCert, KeyFile: *rf.tlsKey}
	if err := rf.password.check(); err != nil {
		return s, err
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		return s, fmt.Errorf("%w: --nats-cert and --nats-key go together", errUsage)
	}
	switch {
	case s.User != "" && !rf.password.given():
		return s, fmt.Errorf("%w: --nats-user needs its password: set $%s or give --nats-password-file FILE", errUsage, passwordEnv)
	case s.User == "" && *rf.password.file != "":
		return s, fmt.Errorf("%w: --nats-password-file without --nats-user", errUsage)
	case s.User == "" && rf.insecure != nil && !*rf.insecure:
		return s, errNoCredentials(role, "NATS credentials (--nats-user with --nats-password-file or $"+passwordEnv+")")
	}
	return s, nil
}

// loadPassword reads the NATS password of s.User. Errors: secretFlag.value's.
func (rf roleFlags) loadPassword(s *cnats.ClientSecurity) error {
	if s.User == "" {
		return nil
	}
	pw, err := rf.password.value(0)
	if err != nil {
		return err
	}
	s.Password = pw
	return nil
}

// configChecked reports the result of --check-config: the flags parsed
// and validated, the role does not start.
func configChecked(stdout io.Writer, role string) error {
	fmt.Fprintf(stdout, "cutover %s: configuration OK\n", role)
	return nil
}

// httpHostsFlag adds --http-hosts to a role with an HTTP listener.
func httpHostsFlag(fs *flag.FlagSet) *string {
	return fs.String("http-hosts", "", "Host names the HTTP listener accepts besides localhost, 127.0.0.1 and [::1] (comma separated; "+
		"a loopback listener refuses any other, against DNS rebinding)")
}

// newLogger returns a text logger to w at level.
func newLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("%w: --log-level %q (want debug, info, warn or error)", errUsage, level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// ------------------------------------------------------------------ nats

func runNATSRole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("nats", "nats [--port N] [--store DIR] [--name NAME] [--cluster-name NAME --cluster-port N --routes URL,...] [--gateway-port N --gateway NAME=URL,...] [--log]\n\nAn embedded nats-server with JetStream (sync_interval always), listening on loopback only: for\ndevelopment and tests. A 3-node cluster is three of these with the same --cluster-name, each\nwith its own --name, --store, --port and --cluster-port and --routes to the other two\n(nats-route://127.0.0.1:PORT). A supercluster is one such cluster per region, each node with a\n--gateway-port and one --gateway per other region (a one-node region routes to itself: JetStream\nclustering needs a configured route). Production runs nats-server itself.", stdout)
	port := fs.Int("port", 4222, "client port (0 = any free port)")
	store := fs.String("store", "", "JetStream store directory (empty = a temporary directory removed at exit)")
	name := fs.String("name", "", "server name (cluster nodes must keep theirs across restarts; empty = random)")
	clusterName := fs.String("cluster-name", "", "cluster name; empty runs a standalone server")
	clusterPort := fs.Int("cluster-port", 0, "route port of a cluster node (0 = any free port)")
	routes := fs.String("routes", "", "route URLs of the other cluster nodes, comma separated")
	gatewayPort := fs.Int("gateway-port", 0, "gateway port of a supercluster node (0 = no gateway unless --gateway is given, then any free port); the gateway is named after --cluster-name")
	var gateways stringList
	fs.Var(&gateways, "gateway", "a remote cluster of the supercluster, NAME=URL[,URL...] (gateway URLs, e.g. eu-west=nats://127.0.0.1:7222); repeatable")
	gatewayAdvertise := fs.String("gateway-advertise", "", "gateway address gossiped to other clusters (empty = the real one)")
	logging := fs.Bool("log", false, "print the server's log to stderr")
	tlsCert := fs.String("tls-cert", "", "server certificate (PEM): TLS required on client connections")
	tlsKey := fs.String("tls-key", "", "key of --tls-cert")
	tlsCA := fs.String("tls-ca", "", "CA certificate (PEM) for --tls-verify-clients and --route-tls")
	verifyClients := fs.Bool("tls-verify-clients", false, "require client certificates signed by --tls-ca")
	routeTLS := fs.Bool("route-tls", false, "mutual TLS on cluster routes with --tls-cert/--tls-key, peers verified against --tls-ca")
	usersFile := fs.String("users", "", "JSON file of users [{\"name\",\"password\" (a bcrypt hash),\"identity\",\"regions\"}] (identities: admin, routing, orchestrator, service, reader; "+
		"`cutover certs` writes one); empty = no authentication")
	checkConfig := addCheckConfig(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	opts := cnats.Options{Port: *port, StoreDir: *store, Name: *name, ClusterName: *clusterName,
		ClusterPort: *clusterPort, Routes: splitList(*routes), Logging: *logging,
		GatewayPort: *gatewayPort, GatewayAdvertise: *gatewayAdvertise}
	for _, g := range gateways {
		name, urls, ok := strings.Cut(g, "=")
		if !ok {
			return fmt.Errorf("%w: --gateway %q: want NAME=URL[,URL...]", errUsage, g)
		}
		opts.Gateways = append(opts.Gateways, cnats.Gateway{Name: name, URLs: splitList(urls)})
	}
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
	app := system.NewApp(system.NATSNode(sec), fx.Populate(&srv))
	return app.Run(ctx, func() {
		fmt.Fprintf(stdout, "cutover nats: node %s\n", srv.Name())
		fmt.Fprintf(stdout, "  NATS      %s\n", srv.ClientURL())
		fmt.Fprintf(stdout, "  store     %s\n", srv.StoreDir())
		if u := srv.ClusterURL(); u != "" {
			fmt.Fprintf(stdout, "  cluster   %s, routes on %s, peers %s\n", *clusterName, u, strings.Join(opts.Routes, ", "))
		}
		if u := srv.GatewayURL(); u != "" {
			fmt.Fprintf(stdout, "  gateway   %s on %s, remotes %s\n", *clusterName, u, strings.Join(gateways, " "))
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
		us, err := cnats.ParseUsersFile(b)
		if err != nil {
			return sec, fmt.Errorf("%w: --users %s: %w", errUsage, usersFile, err)
		}
		sec.Users = us
	}
	if err := sec.Validate(); err != nil {
		return sec, fmt.Errorf("%w: %w", errUsage, err)
	}
	return sec, nil
}

// ------------------------------------------------------------------ service

func runServiceRole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("service", "service --region R [--data DIR] [--nats URL] [--log-level L]\n\nOne region's chat services (conversations, messages, reactions, readstate, media) serving the\nmigration contract (export, import, fences, digests, cleanup) over NATS. They have no HTTP API:\n`cutover gateway` serves the API with its own in-process services, so never run `service` for a\nregion that a gateway serves.", stdout)
	rf := addRoleFlags(fs)
	rf.addPlacement(fs)
	rf.addInsecure(fs)
	region := fs.String("region", "", "the region served (required)")
	data := fs.String("data", "", "data directory of the region's Pebble stores (empty = in memory, lost at exit)")
	sweep := addSweepFlag(fs)
	ckey := addContractKey(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if err := parseRegion("region", *region); err != nil {
		return err
	}
	sec, err := rf.security("service")
	if err != nil {
		return err
	}
	if err := checkContract(ckey, "service", "its region's contract key", rf.isInsecure()); err != nil {
		return err
	}
	var place system.Config
	if err := rf.applyPlacement(&place); err != nil {
		return err
	}
	if *sweep < 0 {
		return fmt.Errorf("%w: --sweep-interval must be >= 0", errUsage)
	}
	if _, err := newLogger(*rf.logLevel, io.Discard); err != nil {
		return err
	}
	if rf.isInsecure() {
		insecureWarning(stderr, "service")
	}
	if *rf.checkConfig {
		return configChecked(stdout, "service")
	}
	if err := rf.loadPassword(&sec); err != nil {
		return err
	}
	log, err := newLogger(*rf.logLevel, stderr)
	if err != nil {
		return err
	}
	cfg := &system.Config{Regions: []string{*region}, DataDir: *data, Logger: log}
	cfg.Home, cfg.PagesRegion = place.Home, place.PagesRegion
	if err := applyContractKey(ckey, cfg); err != nil {
		return err
	}
	if err := cfg.EnsureDefaults(); err != nil {
		return err
	}
	ep, err := system.Join(ctx, *rf.nats, sec, cfg, nil)
	if err != nil {
		return err
	}
	app := system.NewApp(system.ServiceRole(cfg, ep), fx.Supply(&sec), system.Sweeps(*sweep))
	return app.Run(ctx, func() {
		log.Info("service started", "region", *region, "nats", ep.URL)
		fmt.Fprintf(stdout, "cutover service: region %s on the migration contract\n", *region)
		fmt.Fprintf(stdout, "  NATS      %s\n", ep.URL)
		fmt.Fprintf(stdout, "  services  %s\n", strings.Join(chat.ServiceNames, ", "))
		fmt.Fprintf(stdout, "  data      %s\n", dataLine(*data))
		fmt.Fprintf(stdout, "  contract  %s\n", contractLine(cfg))
		fmt.Fprintln(stdout, "Ctrl-C to stop.")
	})
}

func dataLine(dir string) string {
	if dir == "" {
		return "in memory (lost at exit)"
	}
	return dir
}

// ------------------------------------------------------------------ orchestrator

func runOrchestratorRole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("orchestrator", "orchestrator [--workers N] [--background-steps N] [--api URL] [--operators-file FILE] [--nats URL] [--log-level L]\n\nPhase-engine workers (paper 001 Algorithm 1) sharing the durable consumers of MIGRATION_CMDS\nand MIGRATION_WORK: run as many processes as you like, any worker resumes any migration.\nPre-cutover validation reads the services' digests through the migration contract, or through\nthe user-facing API (the path users take, paper 001 §5.3) when --api is given.\n\nTwo-person commands (lock force-release, fence clear) are authorised and audited here: their signed\napprovals are verified against the operator registry (--operators-file, re-read for every command;\n`cutover operator keygen|register`). It refuses to start without one unless --insecure-dev-auth is\ngiven, which without a registry takes approver names unsigned.", stdout)
	rf := addRoleFlags(fs)
	rf.addPlacement(fs)
	rf.addInsecure(fs)
	workers := fs.Int("workers", 2, "workers in this process")
	background := fs.Int("background-steps", 0, fmt.Sprintf("per worker, concurrent steps of migrations outside Phase 3 (0: %d). Fewer shorten the write lock users feel on a busy node, more keep migrations moving over slow links (README \"Measured\")", orchestrator.DefaultBackgroundSteps))
	apiURL := fs.String("api", "", "base URL of the user-facing API to validate through (empty = the contract)")
	secret := addSecret(fs, "service-secret", serviceSecretEnv, "secret of the validator's service identity at the API (needed with --api)")
	csecret := addContractSecret(fs)
	operators := fs.String("operators-file", "", "the operator registry (operators.json: `cutover certs`, `cutover operator register`) the approvals of two-person commands are verified against (default $"+operatorsEnv+")")
	convergence := fs.String("convergence", orchestrator.ConvergenceFence, "Phase 1's wait: fence (no cache waited for; the stores' fences stand in) or ttl (every routing cache expires first, the paper's wait)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if *convergence != orchestrator.ConvergenceFence && *convergence != orchestrator.ConvergenceTTL {
		return fmt.Errorf("%w: --convergence %q: want fence or ttl", errUsage, *convergence)
	}
	if *workers < 1 {
		return fmt.Errorf("%w: --workers must be >= 1", errUsage)
	}
	if *background < 0 {
		return fmt.Errorf("%w: --background-steps must be >= 0 (0: the default, %d)", errUsage, orchestrator.DefaultBackgroundSteps)
	}
	if *apiURL != "" && !strings.HasPrefix(*apiURL, "http://") && !strings.HasPrefix(*apiURL, "https://") {
		return fmt.Errorf("%w: --api must be an http(s) URL", errUsage)
	}
	if err := secret.check(); err != nil {
		return err
	}
	if *apiURL != "" && !secret.given() {
		return fmt.Errorf("%w: --api validates through the API as its service identity: set $%s or give --service-secret-file FILE", errUsage, serviceSecretEnv)
	}
	sec, err := rf.security("orchestrator")
	if err != nil {
		return err
	}
	if err := checkContract(csecret, "orchestrator", "the contract secret", rf.isInsecure()); err != nil {
		return err
	}
	operatorsFile := cmp.Or(*operators, os.Getenv(operatorsEnv))
	if operatorsFile == "" && !rf.isInsecure() {
		return errNoCredentials("orchestrator", "an operator registry (--operators-file or $"+operatorsEnv+") to verify the approvals of two-person commands against")
	}
	var place system.Config
	if err := rf.applyPlacement(&place); err != nil {
		return err
	}
	if _, err := newLogger(*rf.logLevel, io.Discard); err != nil {
		return err
	}
	if rf.isInsecure() {
		insecureWarning(stderr, "orchestrator")
	}
	if *rf.checkConfig {
		return configChecked(stdout, "orchestrator")
	}
	if err := rf.loadPassword(&sec); err != nil {
		return err
	}
	approvals := "INSECURE: approver names unsigned (--insecure-dev-auth, no --operators-file)"
	if operatorsFile != "" {
		reg, err := approval.LoadRegistry(operatorsFile)
		if err != nil {
			return fmt.Errorf("--operators-file: %w", err)
		}
		approvals = fmt.Sprintf("signed, verified against %s (%d operators; re-read for every command)", operatorsFile, reg.Len())
	}
	svcSecret := ""
	if *apiURL != "" {
		if svcSecret, err = secret.value(minSecret); err != nil {
			return err
		}
	}
	log, err := newLogger(*rf.logLevel, stderr)
	if err != nil {
		return err
	}
	// The orchestrator serves no region. One region is enough for the
	// locker's convergence delay (max cache TTL + replication bound, the
	// same settings in every role) and provisions no read replica.
	cfg := &system.Config{Regions: []string{"us-east"}, Workers: *workers, ServiceSecret: svcSecret, Logger: log}
	cfg.Home, cfg.PagesRegion = place.Home, place.PagesRegion
	cfg.Orchestrator.Convergence = *convergence
	cfg.Orchestrator.BackgroundSteps = *background
	if err := applyContractSecret(csecret, cfg); err != nil {
		return err
	}
	cfg.InsecureDevAuth = rf.isInsecure()
	if operatorsFile != "" {
		cfg.Orchestrator.Operators = approval.File(operatorsFile)
	}
	if err := cfg.EnsureDefaults(); err != nil {
		return err
	}
	ep, err := system.Join(ctx, *rf.nats, sec, cfg, nil)
	if err != nil {
		return err
	}
	var ws []*orchestrator.Worker
	var lk *kvrouting.Locker
	app := system.NewApp(system.OrchestratorRole(cfg, ep, system.APIBase(strings.TrimRight(*apiURL, "/"))), fx.Supply(&sec), fx.Populate(&ws, &lk))
	return app.Run(ctx, func() {
		validation := "contract digests"
		if *apiURL != "" {
			validation = "API " + *apiURL
		}
		log.Info("orchestrator started", "workers", len(ws), "nats", ep.URL, "validation", validation)
		fmt.Fprintf(stdout, "cutover orchestrator: %d workers\n", len(ws))
		fmt.Fprintf(stdout, "  NATS        %s\n", ep.URL)
		fmt.Fprintf(stdout, "  consumers   %s on %s, %s on %s\n", orchestrator.CommandConsumer, events.CommandStream, orchestrator.WorkConsumer, events.WorkStream)
		fmt.Fprintf(stdout, "  validation  %s\n", validation)
		fmt.Fprintf(stdout, "  contract    %s\n", contractLine(cfg))
		fmt.Fprintf(stdout, "  approvals   %s\n", approvals)
		if cfg.Orchestrator.Convergence == orchestrator.ConvergenceTTL {
			fmt.Fprintf(stdout, "  convergence ttl: %s + buffer %s\n", lk.Config().ConvergenceDelay, cfg.Orchestrator.ConvergenceBuffer)
		} else {
			fmt.Fprintln(stdout, "  convergence fence: no cache wait (store fences and re-resolution)")
		}
		fmt.Fprintln(stdout, "Ctrl-C to stop.")
	})
}

// ------------------------------------------------------------------ HTTP auth

// httpAuth are the secrets of a role with an HTTP listener (gateway,
// projector): the HMAC secret of signed user tokens, the validator's
// service secret, and the Host names besides loopback's.
type httpAuth struct {
	auth, service *secretFlag
	hosts         *string
}

func addHTTPAuth(fs *flag.FlagSet) httpAuth {
	return httpAuth{
		auth:    addSecret(fs, "auth-secret", authSecretEnv, "HMAC secret of signed user tokens (`cutover token`)"),
		service: addSecret(fs, "service-secret", serviceSecretEnv, "secret of the validator's service identity (/metrics, /v1/internal)"),
		hosts:   httpHostsFlag(fs),
	}
}

// check validates the flags: no secret on the command line, and signed
// tokens unless insecure.
func (h httpAuth) check(role string, insecure bool) error {
	if err := errors.Join(h.auth.check(), h.service.check()); err != nil {
		return err
	}
	if !insecure && !h.auth.given() {
		return errNoCredentials(role, "a token secret (signed user tokens: set $"+authSecretEnv+" or give --auth-secret-file FILE)")
	}
	return nil
}

// apply reads the secrets into cfg (InsecureDevAuth set when insecure).
func (h httpAuth) apply(cfg *system.Config, insecure bool) error {
	var err error
	if cfg.AuthSecret, err = h.auth.value(minSecret); err != nil {
		return err
	}
	if cfg.ServiceSecret, err = h.service.value(minSecret); err != nil {
		return err
	}
	cfg.InsecureDevAuth = insecure
	cfg.HTTP.Hosts = splitList(*h.hosts)
	return nil
}

// authLine says how the role authenticates, for its banner.
func authLine(cfg *system.Config, audience string) string {
	if cfg.AuthSecret == "" {
		return "INSECURE development identities (--insecure-dev-auth)"
	}
	svc := "no service identity (no service secret)"
	if cfg.ServiceSecret != "" {
		svc = "service identity validator"
	}
	return "signed user tokens (audience " + audience + "), " + svc
}

// ------------------------------------------------------------------ projector

// projectorAddr is the projector's HTTP listen address.
type projectorAddr string

func runProjectorRole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("projector", "projector [--http ADDR] [--nats URL] [--log-level L]\n\nFolds MIGRATION_EVENTS into read models (rebuilt from sequence 1 at start) and serves them:\n  GET /v1/migrations[?status=S&resource=R&limit=N]   recent migrations, newest first\n  GET /v1/migrations/{id}                            one migration with its timeline\n  GET /v1/tenants/{id}                               a tenant fan-out's progress\n  GET /metrics                                       Prometheus (phase durations, rollbacks, ...)", stdout)
	rf := addRoleFlags(fs)
	rf.addPlacement(fs)
	rf.addInsecure(fs)
	addr := fs.String("http", "127.0.0.1:8081", "HTTP listen address")
	ha := addHTTPAuth(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	sec, err := rf.security("projector")
	if err != nil {
		return err
	}
	if err := ha.check("projector", rf.isInsecure()); err != nil {
		return err
	}
	var place system.Config
	if err := rf.applyPlacement(&place); err != nil {
		return err
	}
	if err := checkListenAddr("http", *addr); err != nil {
		return err
	}
	if _, err := newLogger(*rf.logLevel, io.Discard); err != nil {
		return err
	}
	if rf.isInsecure() {
		insecureWarning(stderr, "projector")
	}
	if *rf.checkConfig {
		return configChecked(stdout, "projector")
	}
	if err := rf.loadPassword(&sec); err != nil {
		return err
	}
	log, err := newLogger(*rf.logLevel, stderr)
	if err != nil {
		return err
	}
	cfg := &system.Config{Logger: log}
	if err := ha.apply(cfg, rf.isInsecure()); err != nil {
		return err
	}
	cfg.Home, cfg.PagesRegion = place.Home, place.PagesRegion
	if err := cfg.EnsureDefaults(); err != nil {
		return err
	}
	ep, err := system.Join(ctx, *rf.nats, sec, cfg, nil)
	if err != nil {
		return err
	}
	var hs system.ProjectorHTTP
	app := system.NewApp(system.ProjectorRole(cfg, ep, system.ProjectorAddr(*addr)), fx.Supply(&sec), fx.Populate(&hs))
	return app.Run(ctx, func() {
		log.Info("projector started", "http", hs.Addr, "nats", ep.URL)
		fmt.Fprintln(stdout, "cutover projector: read models of "+events.EventStream)
		fmt.Fprintf(stdout, "  NATS      %s\n", ep.URL)
		fmt.Fprintf(stdout, "  HTTP      http://%s/v1/migrations   (also /v1/migrations/{id}, /v1/tenants/{id}, /metrics)\n", hs.Addr)
		fmt.Fprintf(stdout, "  auth      %s\n", authLine(cfg, "projector"))
		fmt.Fprintln(stdout, "Ctrl-C to stop.")
	})
}

// ------------------------------------------------------------------ gateway

func runGatewayRole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("gateway", "gateway --regions a,b [--http ADDR] [--data DIR] [--nats URL] [--queue-writes D] [--log-level L]\n\nThe user-facing HTTP API. In this codebase the API dispatches to in-process chat.Region objects,\nso a gateway also runs the listed regions' chat services (and serves their migration contract\nover NATS): gateway = services + API in one process. Do not also run `cutover service` for these\nregions. The first region is the routing bucket's write region and where new conversations are\ncreated; the others read their KV mirror (read replica). /metrics is served next to the API,\nto service identities only (Authorization: Bearer svc:validator:<$CUTOVER_SERVICE_SECRET>).\n\nIt refuses to start without NATS credentials and a token secret unless --insecure-dev-auth is given.", stdout)
	rf := addRoleFlags(fs)
	rf.addPlacement(fs)
	rf.addInsecure(fs)
	regions := fs.String("regions", "us-east,eu-west", "regions served, comma separated; the first is the write region")
	addr := fs.String("http", "127.0.0.1:8080", "HTTP listen address of the API")
	data := fs.String("data", "", "data directory of the regions' Pebble stores (empty = in memory, lost at exit)")
	ha := addHTTPAuth(fs)
	regionNATS := fs.String("region-nats", "", "in a supercluster: R=URL[,R=URL] connects region R's services to R's own cluster (the others use --nats); give --placement too")
	sweep := addSweepFlag(fs)
	queue := addQueueFlags(fs)
	csecret := addContractSecret(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	var qc system.Config
	if err := queue.apply(&qc); err != nil {
		return err
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
	regionURLs := map[string]string{}
	for _, kv := range splitList(*regionNATS) {
		r, u, ok := strings.Cut(kv, "=")
		if !ok || u == "" || !slices.Contains(rs, r) {
			return fmt.Errorf("%w: --region-nats %q: want REGION=URL for a region of --regions", errUsage, kv)
		}
		regionURLs[r] = u
	}
	sec, err := rf.security("gateway")
	if err != nil {
		return err
	}
	if err := ha.check("gateway", rf.isInsecure()); err != nil {
		return err
	}
	if err := checkContract(csecret, "gateway", "the contract secret", rf.isInsecure()); err != nil {
		return err
	}
	var place system.Config
	if err := rf.applyPlacement(&place); err != nil {
		return err
	}
	if err := checkListenAddr("http", *addr); err != nil {
		return err
	}
	if *sweep < 0 {
		return fmt.Errorf("%w: --sweep-interval must be >= 0", errUsage)
	}
	if _, err := newLogger(*rf.logLevel, io.Discard); err != nil {
		return err
	}
	if rf.isInsecure() {
		insecureWarning(stderr, "gateway")
	}
	if *rf.checkConfig {
		return configChecked(stdout, "gateway")
	}
	if err := rf.loadPassword(&sec); err != nil {
		return err
	}
	log, err := newLogger(*rf.logLevel, stderr)
	if err != nil {
		return err
	}
	cfg := &system.Config{Regions: rs, DataDir: *data, HTTPAddr: *addr, Logger: log,
		QueueWrites: qc.QueueWrites, QueueMax: qc.QueueMax}
	if err := ha.apply(cfg, rf.isInsecure()); err != nil {
		return err
	}
	if err := applyContractSecret(csecret, cfg); err != nil {
		return err
	}
	cfg.Home, cfg.PagesRegion = place.Home, place.PagesRegion
	if err := cfg.EnsureDefaults(); err != nil {
		return err
	}
	ep, err := system.Join(ctx, *rf.nats, sec, cfg, rs[1:])
	if err != nil {
		return err
	}
	if len(regionURLs) > 0 {
		ep.Regions = regionURLs
	}
	var hs *system.HTTPServer
	app := system.NewApp(system.GatewayRole(cfg, ep), fx.Supply(&sec), system.Sweeps(*sweep), fx.Populate(&hs))
	return app.Run(ctx, func() {
		log.Info("gateway started", "regions", rs, "http", hs.Addr, "nats", ep.URL)
		fmt.Fprintf(stdout, "cutover gateway: regions %s (write region %s), services + HTTP API\n", strings.Join(rs, ", "), rs[0])
		fmt.Fprintf(stdout, "  NATS      %s\n", ep.URL)
		fmt.Fprintf(stdout, "  HTTP API  http://%s   (/metrics too, for service identities)\n", hs.Addr)
		fmt.Fprintf(stdout, "  auth      %s\n", authLine(cfg, "api"))
		fmt.Fprintf(stdout, "  contract  %s\n", contractLine(cfg))
		fmt.Fprintf(stdout, "  data      %s\n", dataLine(*data))
		fmt.Fprintln(stdout, "Ctrl-C to stop.")
	})
}

// checkListenAddr checks that addr is a host:port listen address.
func checkListenAddr(flagName, addr string) error {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return fmt.Errorf("%w: --%s %q is not host:port", errUsage, flagName, addr)
	}
	return nil
}

// ------------------------------------------------------------------ tombstone sweeps

func addSweepFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("sweep-interval", system.DefaultSweepInterval, "how often to remove expired tombstones from the stores (0 = never)")
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
	sec, err := rf.security("health")
	if err != nil {
		return err
	}
	if *rf.checkConfig {
		return configChecked(stdout, "health")
	}
	if err := rf.loadPassword(&sec); err != nil {
		return err
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

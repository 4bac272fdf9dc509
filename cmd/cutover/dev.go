package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cutover/cutover/internal/pgserver"
	"github.com/cutover/cutover/internal/system"
	cnats "github.com/cutover/cutover/nats"
)

func init() {
	register("dev", "run everything in one process: embedded NATS, regions, services, HTTP API", runDev)
}

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("dev", "dev [--http ADDR] [--dashboard ADDR] [--data DIR] [--regions a,b] [--cluster 1|3] [--supercluster [--wan SPEC]] [--nats-port N] [--queue-writes D] [--postgres URL]", stdout)
	httpAddr := fs.String("http", "127.0.0.1:8080", "address of the HTTP API")
	data := fs.String("data", "", "data directory (NATS store and Pebble stores); empty = a temporary directory")
	regions := fs.String("regions", "us-east,eu-west", "regions, comma separated; the first is the write region")
	cluster := fs.Int("cluster", 1, "embedded JetStream nodes (1, or 3 for an R3 cluster)")
	natsPort := fs.Int("nats-port", 4222, "client port of the embedded NATS server (0 = any free port)")
	dashboard := fs.String("dashboard", "127.0.0.1:8081", "address of the operator dashboard and the projector's read models (/v1/migrations, /v1/tenants/{id})")
	pg := fs.String("postgres", "", "PostgreSQL URL: keep every region's messages there (the participant kit) while the other services stay on Pebble")
	queue := addQueueFlags(fs)
	var sc bool
	var wan cnats.WAN
	checkWAN := wanFlags(fs, &sc, &wan)
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkWAN(); err != nil {
		return err
	}
	if err := checkListenAddr("dashboard", *dashboard); err != nil {
		return err
	}
	if *pg != "" && !isPostgresURL(*pg) {
		return fmt.Errorf("%w: --postgres %q: want a postgres:// or postgresql:// URL", errUsage, *pg)
	}
	// Everything in one process on loopback: development identities (the
	// roles' --insecure-dev-auth), said so in the banner.
	scfg := system.Config{Regions: splitList(*regions), HTTPAddr: *httpAddr, Cluster: *cluster, NATSPort: *natsPort, DashboardAddr: *dashboard,
		Supercluster: sc, WAN: wan, InsecureDevAuth: true, ServiceSecret: os.Getenv(serviceSecretEnv), Postgres: *pg}
	if err := queue.apply(&scfg); err != nil {
		return err
	}
	if *cluster != 1 && *cluster != 3 {
		return fmt.Errorf("%w: --cluster must be 1 or 3", errUsage)
	}
	dir := *data
	if dir == "" {
		tmp, err := os.MkdirTemp("", "cutover-dev-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	scfg.DataDir = dir
	sys, err := system.Start(ctx, scfg)
	if err != nil {
		return err
	}
	cfg := sys.Config
	fmt.Fprintf(stdout, "cutover dev: regions %s (write region %s)\n", strings.Join(cfg.Regions, ", "), cfg.Regions[0])
	fmt.Fprintf(stdout, "  NATS      %s\n", sys.NATSURL)
	fmt.Fprintf(stdout, "  HTTP API  %s   (try: curl -s -H 'Authorization: Bearer user:alice' -H 'Content-Type: application/json' -X POST %s/v1/conversations -d '{\"title\":\"hello\"}')\n", sys.APIURL, sys.APIURL)
	fmt.Fprintf(stdout, "  dashboard %s/   (read models: %s/v1/migrations)\n", sys.DashboardURL, sys.DashboardURL)
	fmt.Fprintln(stdout, "  auth      INSECURE development identities (--insecure-dev-auth): `Bearer user:<id>` with no secret, NATS without users, dashboard open,")
	fmt.Fprintln(stdout, "            two-person commands (lock force-release, fence clear) approved by unsigned names")
	fmt.Fprintf(stdout, "            /metrics: -H 'Authorization: Bearer svc:validator:%s' (this run's random service secret)\n", cfg.ServiceSecret)
	fmt.Fprintf(stdout, "  data      %s\n", dir)
	if *pg != "" {
		fmt.Fprintf(stdout, "  messages  PostgreSQL %s (the participant kit); the other services on Pebble\n", pgserver.Redact(*pg))
	}
	fmt.Fprintln(stdout, "Ctrl-C to stop.")
	select {
	case <-ctx.Done():
	case <-sys.Done():
	}
	return sys.Close()
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"go.uber.org/fx"
)

func init() {
	register("dev", "run everything in one process: embedded NATS, regions, services, HTTP API", runDev)
}

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("dev", "dev [--http ADDR] [--data DIR] [--regions a,b] [--cluster 1|3] [--nats-port N]", stdout)
	httpAddr := fs.String("http", "127.0.0.1:8080", "address of the HTTP API")
	data := fs.String("data", "", "data directory (NATS store and Pebble stores); empty = a temporary directory")
	regions := fs.String("regions", "us-east,eu-west", "regions, comma separated; the first is the write region")
	cluster := fs.Int("cluster", 1, "embedded JetStream nodes (1, or 3 for an R3 cluster)")
	natsPort := fs.Int("nats-port", 4222, "client port of the embedded NATS server (0 = any free port)")
	if err := parse(fs, args); err != nil {
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
	cfg := &systemConfig{DataDir: dir, Regions: splitList(*regions), HTTPAddr: *httpAddr, Cluster: *cluster, NATSPort: *natsPort}
	if err := cfg.ensureDefaults(); err != nil {
		return err
	}
	var ep *natsEndpoint
	var hs *httpServer
	app := newApp(stdout, systemModule(cfg), apiModule(), orchestratorModule(), metricsModule(true), fx.Populate(&ep, &hs))
	if err := app.Err(); err != nil {
		return err
	}
	if err := app.Start(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cutover dev: regions %s (write region %s)\n", strings.Join(cfg.Regions, ", "), cfg.Regions[0])
	fmt.Fprintf(stdout, "  NATS      %s\n", ep.URL)
	fmt.Fprintf(stdout, "  HTTP API  http://%s   (try: curl -s -H 'Authorization: Bearer user:alice' -X POST http://%s/v1/conversations -d '{\"title\":\"hello\"}')\n", hs.addr, hs.addr)
	fmt.Fprintf(stdout, "  data      %s\n", dir)
	fmt.Fprintln(stdout, "Ctrl-C to stop.")
	<-ctx.Done()
	stopCtx, cancel := context.WithTimeout(context.Background(), 15e9)
	defer cancel()
	return app.Stop(stopCtx)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

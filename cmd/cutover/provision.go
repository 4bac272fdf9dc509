package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cutover/cutover/internal/system"
	cnats "github.com/cutover/cutover/nats"
)

func init() {
	register("provision", "create the deployment's buckets and streams, as the admin identity (once, before the roles start)", oneLine(runProvision))
}

// runProvision is `cutover provision`: the only step that creates or
// updates streams in a secured deployment (the roles' identities may not:
// nats/permissions.go).
func runProvision(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("provision", "provision --regions a,b [--placement home=R,pages=P] [--nats URL] [--nats-user admin --nats-password-file F --nats-ca F]\n\n"+
		"Creates, or updates to this version's configuration, every bucket and stream of a deployment: ROUTING\n"+
		"with its history, a ROUTING mirror per region after the first (the read replicas), PAGES and the\n"+
		"migration streams. In a deployment with NATS users only the admin identity may do this; the roles\n"+
		"wait for it at start. Idempotent: run it again after an upgrade.", stdout)
	rf := addRoleFlags(fs)
	rf.addPlacement(fs)
	regions := fs.String("regions", "us-east,eu-west", "the deployment's regions, comma separated; the first is ROUTING's write region, each other gets a mirror")
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
	sec, err := rf.security("provision")
	if err != nil {
		return err
	}
	var place system.Config
	if err := rf.applyPlacement(&place); err != nil {
		return err
	}
	log, err := newLogger(*rf.logLevel, stderr)
	if err != nil {
		return err
	}
	if *rf.checkConfig {
		return configChecked(stdout, "provision")
	}
	if err := rf.loadPassword(&sec); err != nil {
		return err
	}
	cfg := &system.Config{Regions: rs, Logger: log}
	cfg.Home, cfg.PagesRegion = place.Home, place.PagesRegion
	if err := cfg.EnsureDefaults(); err != nil {
		return err
	}
	if err := system.ProvisionDeployment(ctx, *rf.nats, sec, cfg, rs[1:]); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cutover provision: %s provisioned (write region %s, mirrors %s, %d replicas)\n",
		strings.Join(system.ProvisionStreams(system.ProvisionConfig{Routing: true, Pages: true, Migration: true, Mirrors: rs[1:]}), ", "),
		rs[0], mirrorsLine(rs[1:]), cnats.DefaultReplicas(cfg.Cluster))
	return nil
}

func mirrorsLine(rs []string) string {
	if len(rs) == 0 {
		return "none"
	}
	return strings.Join(rs, ", ")
}

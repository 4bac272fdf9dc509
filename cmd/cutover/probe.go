package main

import (
	"context"
	"io"
	"time"

	"github.com/cutover/cutover/internal/ops"
	"github.com/cutover/cutover/internal/system"
)

func init() {
	register("probe", "synthetic lock probe: lock a probe resource through every stage and assert Table 4 on the read path", oneLine(runProbe))
}

func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("probe", "probe [--region R] [--target T] [--keep] [--json] [--nats URL]\n\nRegisters conv/probe-<random> at R, pre-locks it for a migration to T, waits out the convergence\ndelay (the dev resolver settings: max cache TTL + replication bound), escalates to the hard-delete\nand write locks and releases; at each stage it asserts, through a fresh resolver and through one\nwhose cache was warmed before the lock, that the lock is visible on the read path and that reads\nare allowed, deletes tombstoned under hard-delete and mutations refused (423) under the write lock\nand at the locked target. Exit status 1 if any assertion fails.", stdout)
	url := natsFlag(fs)
	region := fs.String("region", "us-east", "region the probe resource lives in")
	target := fs.String("target", "eu-west", "region the probe pretends to migrate it to")
	keep := fs.Bool("keep", false, "keep the probe resource's routing document afterwards")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, ""); err != nil {
		return err
	}
	// The deployment's timings: every role runs with the system defaults.
	cfg := &system.Config{}
	if err := cfg.EnsureDefaults(); err != nil {
		return err
	}
	return ops.Probe(ctx, ops.ProbeRequest{NATS: *url, Region: *region, Target: *target, Keep: *keep, Timeout: *timeout, JSON: *asJSON,
		Timings: ops.ProbeTimings{Tiers: cfg.Tiers, ReplicationBound: cfg.ReplicationBound, ClockSkew: cfg.ClockSkew,
			ConvergenceBuffer: cfg.Orchestrator.ConvergenceBuffer, Locks: cfg.Locks}}, stdout, stderr)
}

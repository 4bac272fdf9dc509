package main

import (
	"context"
	"io"
	"time"

	"github.com/cutover/cutover/internal/ops"
)

func init() {
	register("lock", "admin lock operations (force-release, with two distinct approvers; audited)", oneLine(runLock))
}

func runLock(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "lock", []subcommand{
		{"force-release", "force-release RESOURCE --approver A --approver B [--reason R]   clear a stuck lock without its token (audited)", lockForceRelease},
	}, args, stdout, stderr)
}

func lockForceRelease(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("lock force-release", "lock force-release RESOURCE --approver A --approver B [--reason R] [--timeout D] [--json] [--nats URL]\n\nAn admin escape hatch for a stuck lock (paper 000 §8). It goes through the orchestrator so that\nthe release is recorded as a force-released event; the migration holding the lock rolls back.", stdout)
	url := natsFlag(fs)
	var approvers stringList
	fs.Var(&approvers, "approver", "an approver (repeat; at least two distinct ones)")
	reason := fs.String("reason", "", "why (recorded in the audit event)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the orchestrator's audit event")
	asJSON := fs.Bool("json", false, "print the audit event and the routing document after it as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "RESOURCE (kind/id)"); err != nil {
		return err
	}
	return ops.ForceRelease(ctx, ops.ForceReleaseRequest{NATS: *url, Resource: pos[0], Approvers: approvers, Reason: *reason,
		Timeout: *timeout, JSON: *asJSON}, stdout, stderr)
}

package main

import (
	"context"
	"io"

	"github.com/cutover/cutover/internal/ops"
)

func init() {
	register("fence", "admin fence operations (clear a stranded fence, with two distinct approvers; audited)", oneLine(runFence))
}

func runFence(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "fence", []subcommand{
		{"clear", "clear RESOURCE --region R --approver A --approver B [--reason R]   remove a stranded write fence whatever its token (audited)", fenceClear},
	}, args, stdout, stderr)
}

func fenceClear(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fence clear", "fence clear RESOURCE --region R --approver A --approver B [--reason R] [--json] [--nats URL]\n\nAn admin escape hatch for a stranded fence: a write fence left at a region after the migration\nthat set it is gone, e.g. a post-swap fence at what has become the primary (users get 423).\nEvery service at the region holding an active fence on RESOURCE has it removed, whatever its\ntoken, and the clear is recorded as a fence-force-cleared event. Refused, changing nothing, with\nfewer than two distinct approvers, for a region no service answers in, when no fence is active,\nand when a migration in flight has the region as its source or target (see lock force-release).", stdout)
	url := natsFlag(fs)
	region := fs.String("region", "", "the region whose fence to clear (required)")
	var approvers stringList
	fs.Var(&approvers, "approver", "an approver (repeat; at least two distinct ones)")
	reason := fs.String("reason", "", "why (recorded in the audit event)")
	asJSON := fs.Bool("json", false, "print the audit event, the cleared fences and the routing document as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "RESOURCE (kind/id)"); err != nil {
		return err
	}
	return ops.ClearFence(ctx, ops.ClearFenceRequest{NATS: *url, Resource: pos[0], Region: *region, Approvers: approvers,
		Reason: *reason, JSON: *asJSON}, stdout, stderr)
}

package main

import (
	"context"
	"io"
	"time"

	"github.com/cutover/cutover/internal/ops"
)

func init() {
	register("fence", "admin fence operations (clear a stranded fence, approved by two operators; audited by the orchestrator)", oneLine(runFence))
}

func runFence(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "fence", []subcommand{
		{"clear", "clear RESOURCE --region R --approver A --approval FILE|TOKEN --approver B --approval FILE|TOKEN [--reason R]   repair a stranded authority record whatever it holds (audited)", fenceClear},
	}, args, stdout, stderr)
}

func fenceClear(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fence clear", "fence clear RESOURCE --region R --approver A --approval FILE|TOKEN --approver B --approval FILE|TOKEN [--key FILE] [--reason R] [--timeout D] [--json] [--nats URL]\n\n"+
		"An admin escape hatch for a stranded fence: an authority record at a region that decides a read or a write\n"+
		"routed by the current routing document otherwise than the document does, e.g. a write fence left at what\n"+
		"has become the primary (users get 423). The orchestrator, once it has verified the approvals, repairs the\n"+
		"record of every such service at the region with the authority the document gives the region (the\n"+
		"contract's repair), whatever it holds, and records a fence-force-cleared event; this command waits for\n"+
		"that outcome. Refused, changing nothing, for a region no service answers in, a resource without a routing\n"+
		"document, when no record there is stranded, and when a migration in flight has the region as its source\n"+
		"or target (see lock force-release).\n\n"+approvalHelp, stdout)
	url := natsFlag(fs)
	region := fs.String("region", "", "the region whose records to repair (required; the approvals name it)")
	approvers, approvals, keys := addApprovalFlags(fs)
	reason := fs.String("reason", "", "why (the approvals approve it; recorded in the audit event)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the orchestrator's outcome")
	asJSON := fs.Bool("json", false, "print the audit event, the repaired records and the routing document as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "RESOURCE (kind/id)"); err != nil {
		return err
	}
	return ops.ClearFence(ctx, ops.ClearFenceRequest{NATS: *url, Resource: pos[0], Region: *region, Approvers: *approvers, Approvals: *approvals,
		Keys: *keys, Reason: *reason, Timeout: *timeout, JSON: *asJSON}, stdout, stderr)
}

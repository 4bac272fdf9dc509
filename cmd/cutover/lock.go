package main

import (
	"context"
	"flag"
	"io"
	"time"

	"github.com/cutover/cutover/internal/ops"
)

func init() {
	register("lock", "admin lock operations (force-release, approved by two operators; audited by the orchestrator)", oneLine(runLock))
}

func runLock(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "lock", []subcommand{
		{"force-release", "force-release RESOURCE --approver A --approval FILE|TOKEN --approver B --approval FILE|TOKEN [--reason R]   clear a stuck lock without its token (audited)", lockForceRelease},
	}, args, stdout, stderr)
}

// approvalHelp explains the approval flags of the two-person commands.
const approvalHelp = "Two operators approve: each signs an approval of exactly this command (`cutover approve --key FILE\n" +
	"--op OP RESOURCE [--region R] --reason R`, valid at most 1h) and gives it with --approval; --key FILE\n" +
	"signs one on the spot with an operator key (`cutover operator keygen`). --approver names the operators\n" +
	"(optional with approvals: they must be exactly the signers). The orchestrator, not this command,\n" +
	"verifies the approvals against its operator registry (--operators-file): two distinct registered\n" +
	"operators (names compared in Unicode NFKC, format characters removed, case folded), each signature\n" +
	"theirs, unexpired, for this operation, resource, region and reason; each approval is used once. It\n" +
	"refuses, changing nothing, otherwise, and records the refusal. Approver names without approvals are\n" +
	"taken only by a development orchestrator (--insecure-dev-auth, no registry: `cutover dev`); this\n" +
	"command warns then."

// addApprovalFlags adds --approver, --approval and --key.
func addApprovalFlags(fs *flag.FlagSet) (approvers, approvals, keys *stringList) {
	approvers, approvals, keys = &stringList{}, &stringList{}, &stringList{}
	fs.Var(approvers, "approver", "an approving operator (repeat; at least two distinct ones)")
	fs.Var(approvals, "approval", "a signed approval: a token or a file holding one (repeat; `cutover approve`)")
	fs.Var(keys, "key", "an operator key file that signs an approval of this command on the spot (repeat)")
	return approvers, approvals, keys
}

func lockForceRelease(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("lock force-release", "lock force-release RESOURCE --approver A --approval FILE|TOKEN --approver B --approval FILE|TOKEN [--key FILE] [--reason R] [--timeout D] [--json] [--nats URL]\n\n"+
		"An admin escape hatch for a stuck lock (paper 000 §8). The orchestrator releases it once it has verified\n"+
		"the approvals, records the release as a force-released event, and the migration holding the lock rolls\n"+
		"back; this command waits for that outcome.\n\n"+approvalHelp, stdout)
	url := natsFlag(fs)
	approvers, approvals, keys := addApprovalFlags(fs)
	reason := fs.String("reason", "", "why (the approvals approve it; recorded in the audit event)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the orchestrator's outcome")
	asJSON := fs.Bool("json", false, "print the audit event and the routing document after it as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "RESOURCE (kind/id)"); err != nil {
		return err
	}
	return ops.ForceRelease(ctx, ops.ForceReleaseRequest{NATS: *url, Resource: pos[0], Approvers: *approvers, Approvals: *approvals, Keys: *keys,
		Reason: *reason, Timeout: *timeout, JSON: *asJSON}, stdout, stderr)
}

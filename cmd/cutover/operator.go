package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cutover/cutover/internal/ops"
	"github.com/cutover/cutover/orchestrator/approval"
)

func init() {
	register("operator", "operators' keys for two-person approvals (keygen, register)", oneLine(runOperator))
	register("approve", "sign one operator's approval of a force-release or fence clear", oneLine(runApprove))
}

func runOperator(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "operator", []subcommand{
		{"keygen", "keygen --name NAME --out DIR [--registry FILE]   a new operator key pair (ed25519)", operatorKeygen},
		{"register", "register --registry FILE ENTRY.pub...   add operators' public keys to the registry the orchestrators read", operatorRegister},
	}, args, stdout, stderr)
}

func operatorKeygen(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("operator keygen", "operator keygen --name NAME --out DIR [--registry FILE]\n\n"+
		"Writes a new ed25519 key pair for operator NAME into DIR: NAME.key (the private key, 0600; keep it to\n"+
		"yourself: it signs your approvals) and NAME.pub (your registry entry). The name is kept in its canonical\n"+
		"form (Unicode NFKC, format characters removed, case folded) and must be 1 to 64 letters, digits and\n"+
		". - _ @ in one script. Give NAME.pub to whoever keeps the deployment's operator registry\n"+
		"(`cutover operator register`), or add it yourself with --registry.", stdout)
	name := fs.String("name", "", "the operator's name (required)")
	out := fs.String("out", "", "directory for the key files (required; created 0700)")
	registry := fs.String("registry", "", "also add the public key to this registry file (operators.json; created if absent)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return ops.OperatorKeygen(ops.OperatorKeygenRequest{Name: *name, Out: *out, Registry: *registry}, stdout)
}

func operatorRegister(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("operator register", "operator register --registry FILE ENTRY.pub...\n\n"+
		"Adds operators' public keys (the NAME.pub files of `cutover operator keygen`) to the registry file the\n"+
		"orchestrators read (--operators-file; re-read for every two-person command, so a change counts at once).\n"+
		"A name or a key registered already is refused, and nothing is added. The file must be writable by its\n"+
		"owner only: whoever can write it can register a key.", stdout)
	registry := fs.String("registry", "", "the registry file (operators.json; created if absent)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	return ops.OperatorRegister(ops.OperatorRegisterRequest{Registry: *registry, Entries: pos}, stdout)
}

func runApprove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("approve", "approve --key FILE --op "+strings.Join(approval.Operations, "|")+" RESOURCE [--region R] --reason R [--valid D] [--out FILE]\n\n"+
		"Signs your approval of one two-person command with your operator key and prints it (a token) or writes\n"+
		"it to --out. It approves exactly that operation on that resource (at that region, for fence-clear) for\n"+
		"that reason, for --valid (at most 1h), once: the command must say the same (--approval TOKEN|FILE).", stdout)
	key := fs.String("key", "", "your operator key file (`cutover operator keygen`; required)")
	op := fs.String("op", "", "the operation: "+strings.Join(approval.Operations, " or ")+" (required)")
	region := fs.String("region", "", "the region (fence-clear only)")
	reason := fs.String("reason", "", "the reason the command gives")
	valid := fs.Duration("valid", ops.DefaultApprovalValidity, fmt.Sprintf("how long the approval is valid (at most %v)", approval.MaxValidity))
	out := fs.String("out", "", "write the approval to this file (0600) instead of printing it")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "RESOURCE (kind/id)"); err != nil {
		return err
	}
	if *valid <= 0 || *valid > approval.MaxValidity || *valid%time.Second != 0 {
		return fmt.Errorf("%w: --valid must be whole seconds, positive and at most %v", errUsage, approval.MaxValidity)
	}
	return ops.Approve(ops.ApproveRequest{Key: *key, Operation: *op, Resource: pos[0], Region: *region, Reason: *reason, Valid: *valid, Out: *out}, stdout, stderr)
}

package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/orchestrator/approval"
)

// A two-person command's approvals are collected here and verified by the
// orchestrator (orchestrator/admin.go): the CLI checks them only to say
// early what it can, sends the command, and prints the outcome the
// orchestrator records.

// ErrRefused is wrapped by the error of a two-person command the
// orchestrator refused (an AdminRefused event): nothing was changed.
var ErrRefused = errors.New("refused by the orchestrator")

// DefaultApprovalValidity is how long an approval `cutover approve` or a
// --key signs stays valid.
const DefaultApprovalValidity = 15 * time.Minute

// Approvals are the approvals of a two-person command as the command line
// gives them.
type Approvals struct {
	// Approvers name the approving operators (--approver). With
	// Approvals or Keys they must name exactly the operators who sign
	// (empty: those operators); alone, they are unsigned names, which only
	// a development orchestrator accepts.
	Approvers []string
	// Approvals are signed approvals (`cutover approve`), each a token or
	// a file holding one.
	Approvals []string
	// Keys are operator key files (`cutover operator keygen`), each
	// signing an approval of this very command on the spot, valid for
	// DefaultApprovalValidity.
	Keys []string
}

// collect returns the approvers and approval tokens to send for q, checked
// as far as the CLI can without the registry: every approval well formed
// and for q, from at least two distinct operators who are the approvers
// named; or, with no approval at all, at least two distinct approver
// names, with a warning on stderr that only a development orchestrator
// takes them. Errors wrap ErrUsage.
func (a Approvals) collect(q approval.Request, now time.Time, stderr io.Writer) (approvers, tokens []string, err error) {
	what := strings.Replace(q.Operation, "-", " ", 1)
	for _, g := range a.Approvals {
		tok := g
		if !strings.HasPrefix(strings.TrimSpace(g), "cutover-approval-") {
			b, err := os.ReadFile(g)
			if err != nil {
				return nil, nil, fmt.Errorf("%w: --approval %s: neither an approval token nor a readable file: %v", ErrUsage, g, err)
			}
			tok = string(b)
		}
		tokens = append(tokens, strings.TrimSpace(tok))
	}
	for _, f := range a.Keys {
		k, err := readKey(f)
		if err != nil {
			return nil, nil, err
		}
		tok, err := k.Approve(q, now, DefaultApprovalValidity)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: --key %s: %w", ErrUsage, f, err)
		}
		tokens = append(tokens, tok)
	}
	if len(tokens) == 0 {
		names := approval.Distinct(a.Approvers)
		if len(names) < approval.MinApprovers {
			return nil, nil, fmt.Errorf("%w: %s needs at least two distinct approvers (got %d)", ErrUsage, what, len(names))
		}
		fmt.Fprintf(stderr, "cutover: WARNING: no signed approvals (--approval, --key): only a development orchestrator (--insecure-dev-auth, no operator registry) accepts approver names alone\n")
		return a.Approvers, nil, nil
	}
	var signers []string
	for i, tok := range tokens {
		ap, err := approval.Parse(tok)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: approval %d: %w", ErrUsage, i+1, err)
		}
		if ap.Request() != q {
			return nil, nil, fmt.Errorf("%w: approval %d (of %q) is for %s, not %s", ErrUsage, i+1, ap.Operator, ap.Request(), q)
		}
		if !now.Before(ap.Expires()) {
			return nil, nil, fmt.Errorf("%w: approval %d (of %q) expired at %s", ErrUsage, i+1, ap.Operator, rfc(ap.Expires()))
		}
		if name := approval.Canonical(ap.Operator); slices.Contains(signers, name) {
			return nil, nil, fmt.Errorf("%w: %q approves twice; %s needs at least two distinct approvers", ErrUsage, name, what)
		} else {
			signers = append(signers, name)
		}
	}
	if len(signers) < approval.MinApprovers {
		return nil, nil, fmt.Errorf("%w: %s needs at least two distinct approvers (got %d signed approval)", ErrUsage, what, len(signers))
	}
	if len(a.Approvers) == 0 {
		return signers, tokens, nil
	}
	names := approval.Distinct(a.Approvers)
	for _, n := range names {
		if !slices.Contains(signers, n) {
			return nil, nil, fmt.Errorf("%w: --approver %s gave no approval (signed by: %s)", ErrUsage, n, strings.Join(signers, ", "))
		}
	}
	for _, s := range signers {
		if !slices.Contains(names, s) {
			return nil, nil, fmt.Errorf("%w: %s signed an approval but is not an --approver (%s)", ErrUsage, s, strings.Join(names, ", "))
		}
	}
	return a.Approvers, tokens, nil
}

// readKey reads an operator key file. Errors wrap ErrUsage.
func readKey(path string) (*approval.Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: --key: %v", ErrUsage, err)
	}
	k, err := approval.ParseKey(b)
	if err != nil {
		return nil, fmt.Errorf("%w: --key %s: %w", ErrUsage, path, err)
	}
	return k, nil
}

// awaitOutcome waits, at most timeout (0: for ever), for the first event of
// admin aggregate aid: the audit event of a two-person command, or its
// refusal, returned as an error wrapping ErrRefused (and ErrNoFence or
// ErrFenceInUse for those refusals).
func awaitOutcome(ctx context.Context, o *conn, aid string, timeout time.Duration, stderr io.Writer) (*events.Envelope, uint64, error) {
	wctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	var got *events.Envelope
	var seq uint64
	err := followEvents(wctx, o, aid, 0, stderr, func(s uint64, e *events.Envelope) bool {
		got, seq = e, s
		return true
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, 0, fmt.Errorf("no outcome within %s (audit aggregate %s); is an orchestrator running?", timeout, aid)
	}
	if err != nil {
		return nil, 0, err
	}
	if r, ok := got.Body.(events.AdminRefused); ok {
		return got, seq, refusedError{r}
	}
	return got, seq, nil
}

// refusedError is an AdminRefused as an error: its text names the command
// and says why; it wraps ErrRefused and, for those refusals, ErrNoFence or
// ErrFenceInUse.
type refusedError struct {
	r events.AdminRefused
}

func (e refusedError) Error() string {
	return fmt.Sprintf("%s of %s %v: %s", e.r.Command, e.r.Resource, ErrRefused, e.r.Refusal)
}

func (e refusedError) Unwrap() []error {
	switch e.r.Code {
	case events.RefusedNothing:
		return []error{ErrRefused, ErrNoFence}
	case events.RefusedInUse:
		return []error{ErrRefused, ErrFenceInUse}
	}
	return []error{ErrRefused}
}

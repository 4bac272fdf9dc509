package ops

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/orchestrator/approval"
)

// TestCollectApprovals: what the CLI can tell without the registry is a
// usage error before anything is sent; the rest is the orchestrator's.
func TestCollectApprovals(t *testing.T) {
	dir := t.TempDir()
	keys := map[string]string{}
	for _, n := range []string{"alice", "bob"} {
		if err := OperatorKeygen(OperatorKeygenRequest{Name: n, Out: dir}, io.Discard); err != nil {
			t.Fatal(err)
		}
		keys[n] = filepath.Join(dir, n+".key")
	}
	q := approval.Request{Operation: approval.OpFenceClear, Resource: "conv/x", Region: "us-east", Reason: "r"}
	now := time.Now()
	sign := func(name string, q approval.Request, at time.Time) string {
		t.Helper()
		k, err := readKey(keys[name])
		if err != nil {
			t.Fatal(err)
		}
		tok, err := k.Approve(q, at, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	file := filepath.Join(dir, "bob.approval")
	if err := os.WriteFile(file, []byte(sign("bob", q, now)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	approvers, tokens, err := Approvals{Approvals: []string{file}, Keys: []string{keys["alice"]}}.collect(q, now, io.Discard)
	if err != nil || strings.Join(approvers, ",") != "bob,alice" || len(tokens) != 2 {
		t.Fatalf("a file and a key: %v %v %v", approvers, len(tokens), err)
	}
	var warned strings.Builder
	if approvers, tokens, err := (Approvals{Approvers: []string{"alice", "bob"}}).collect(q, now, &warned); err != nil || len(approvers) != 2 || tokens != nil ||
		!strings.Contains(warned.String(), "WARNING: no signed approvals") {
		t.Fatalf("names alone: %v %v %v %q", approvers, tokens, err, warned.String())
	}
	other := q
	other.Region = "eu-west"
	for name, a := range map[string]Approvals{
		"one name":                  {Approvers: []string{"alice", " ALICE\u200b"}},
		"one approval":              {Keys: []string{keys["alice"]}},
		"one operator twice":        {Keys: []string{keys["alice"], keys["alice"]}},
		"for another region":        {Keys: []string{keys["alice"]}, Approvals: []string{sign("bob", other, now)}},
		"expired":                   {Keys: []string{keys["alice"]}, Approvals: []string{sign("bob", q, now.Add(-2*time.Minute))}},
		"not a token":               {Keys: []string{keys["alice"]}, Approvals: []string{"cutover-approval-1.x"}},
		"no such file":              {Keys: []string{keys["alice"]}, Approvals: []string{filepath.Join(dir, "missing")}},
		"no such key":               {Keys: []string{filepath.Join(dir, "missing.key")}},
		"a key that is not":         {Keys: []string{file}},
		"an approver who did not":   {Approvers: []string{"alice", "carol"}, Keys: []string{keys["alice"], keys["bob"]}},
		"a signer who is not named": {Approvers: []string{"alice"}, Keys: []string{keys["alice"], keys["bob"]}},
	} {
		if _, _, err := a.collect(q, now, io.Discard); !errors.Is(err, ErrUsage) {
			t.Errorf("%s: %v, want a usage error", name, err)
		}
	}
}

// TestRefusedError: the orchestrator's refusal reads as one error naming
// the command and why, and is told apart by kind.
func TestRefusedError(t *testing.T) {
	for code, want := range map[string]error{events.RefusedNothing: ErrNoFence, events.RefusedInUse: ErrFenceInUse, events.RefusedApprovals: ErrRefused} {
		err := error(refusedError{events.AdminRefused{Command: events.TypeFenceClear, Resource: "conv/x", Code: code, Refusal: "because"}})
		if !errors.Is(err, want) || !errors.Is(err, ErrRefused) || err.Error() != "fence-clear of conv/x refused by the orchestrator: because" {
			t.Errorf("%s: %v", code, err)
		}
	}
}

// TestNoOutcome: with no orchestrator running, a two-person command says
// so once its wait is over, and the command waits in the queue.
func TestNoOutcome(t *testing.T) {
	srv := natstest.RunServer(t)
	_, js := natstest.MustConnect(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := orchestrator.Provision(ctx, js, orchestrator.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	err := ClearFence(ctx, ClearFenceRequest{NATS: srv.ClientURL(), Resource: "conv/x", Region: "us-east", Approvers: []string{"alice", "bob"},
		Timeout: 500 * time.Millisecond}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "is an orchestrator running?") {
		t.Fatalf("%v", err)
	}
	s, err := js.Stream(ctx, events.CommandStream)
	if err != nil || s.CachedInfo().State.Msgs != 1 {
		t.Fatalf("the command is not queued: %v", err)
	}
}

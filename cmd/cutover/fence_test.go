package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
)

// TestFenceClearCommand: a stranded authority record at the primary (one
// that refuses writes routing allows; users get 423) is repaired by `fence
// clear` with two approvers and audited by a fence-force-cleared event.
// One approver, one approver twice, an unknown region, a resource without
// a stranded record and a region a migration in flight holds are refused
// with a clear error and change nothing.
func TestFenceClearCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Parallel()
	// The paper's long convergence wait keeps a migration in flight at its
	// pre-lock (fence-driven convergence, the default, would not wait).
	s := startCLISystem(t, func(c *system.Config) {
		c.Orchestrator.Convergence, c.Orchestrator.ConvergenceBuffer = orchestrator.ConvergenceTTL, 5*time.Minute
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alice := mustClient(t, s.api, "alice")
	for _, id := range []string{"fenced", "unfenced", "inflight"} {
		if _, err := alice.CreateConversation(ctx, client.NewConversation{ID: id, Title: id}); err != nil {
			t.Fatal(err)
		}
	}
	nc, js := natstest.MustConnect(t, s.nats)
	doc, err := s.lk.Get(ctx, kvrouting.Resource{Kind: "conv", ID: "fenced"})
	if err != nil {
		t.Fatal(err)
	}
	// A write fence at the routing document's own revision: stricter
	// than the document, as only a bug could leave it.
	stranded := contract.Authority{Rev: doc.Revision, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}
	for _, svc := range []string{"conversations", "messages"} {
		if _, err := contractnats.Dial(nc, js, "us-east", svc).Authorize(ctx, "conv/fenced", stranded); err != nil {
			t.Fatalf("%s: %v", svc, err)
		}
	}
	// A client that does not retry a 423 (the default one waits it out).
	once, err := client.New(s.api, "user:alice", client.WithRetryPolicy(client.RetryPolicy{Initial: time.Millisecond, Max: time.Millisecond, Threshold: time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = once.Close() })
	post := func() error {
		_, err := once.PostMessage(ctx, "fenced", client.NewMessage{ID: client.NewMessageID(), Text: "hello"})
		return err
	}
	stillFenced := func(what string) {
		t.Helper()
		var ae *client.APIError
		if err := post(); !errors.As(err, &ae) || !ae.Locked() {
			t.Fatalf("after %s: a write at the primary: %v, want 423 (the fence unchanged)", what, err)
		}
	}
	stillFenced("setting the fence")
	if _, err := s.orch.Start(ctx, events.Start{Resource: "conv/inflight", Target: "eu-west"}); err != nil {
		t.Fatal(err)
	}
	s.awaitLock(ctx, t, kvrouting.Resource{Kind: "conv", ID: "inflight"}, kvrouting.LockPre)

	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"one approver", []string{"conv/fenced", "--region", "us-east", "--approver", "alice"}, 2, "two distinct approvers"},
		{"one approver twice", []string{"conv/fenced", "--region", "us-east", "--approver", "alice", "--approver", " Alice "}, 2, "two distinct approvers"},
		{"unknown region", []string{"conv/fenced", "--region", "mars", "--approver", "alice", "--approver", "bob"}, 1, `region "mars" is not served`},
		{"no fence", []string{"conv/unfenced", "--region", "us-east", "--approver", "alice", "--approver", "bob"}, 1, "no stranded authority"},
		{"no fence at that region", []string{"conv/fenced", "--region", "eu-west", "--approver", "alice", "--approver", "bob"}, 1, "no stranded authority"},
		{"migration in flight", []string{"conv/inflight", "--region", "eu-west", "--approver", "alice", "--approver", "bob"}, 1, "lock force-release"},
		{"unknown resource", []string{"conv/nobody", "--region", "us-east", "--approver", "alice", "--approver", "bob"}, 1, "no routing document"},
	} {
		code, out, errs := run(t, append([]string{"fence", "clear", "--nats", s.nats}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Fatalf("%s: exit %d (want %d), stderr %q (want %q), stdout %q", c.name, code, c.code, errs, c.want, out)
		}
		oneLineErr(t, c.name, unsignedWarned(t, c.code, errs))
		stillFenced(c.name)
	}

	code, out, errs := run(t, "fence", "clear", "conv/fenced", "--region", "us-east", "--approver", "alice", "--approver", "bob",
		"--reason", "stranded in test", "--json", "--nats", s.nats)
	if code != 0 {
		t.Fatalf("two approvers: exit %d: %s\n%s", code, errs, out)
	}
	var got struct {
		Audit struct {
			Type        string `json:"type"`
			MigrationID string `json:"migration_id"`
			Body        struct {
				Region    string   `json:"Region"`
				Services  []string `json:"Services"`
				Previous  string   `json:"Previous"`
				Repaired  string   `json:"Repaired"`
				Approvers []string `json:"Approvers"`
				Reason    string   `json:"Reason"`
			} `json:"body"`
		} `json:"audit"`
		Cleared []struct {
			Service string `json:"service"`
			Level   string `json:"level"`
			Token   string `json:"token"`
		} `json:"cleared"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	b := got.Audit.Body
	if got.Audit.Type != "fence-force-cleared" || b.Region != "us-east" || strings.Join(b.Services, ",") != "conversations,messages" ||
		len(b.Approvers) != 2 || b.Reason != "stranded in test" || len(got.Cleared) != 2 || got.Cleared[0].Level != "exporting" ||
		b.Previous != stranded.String() || b.Repaired != doc.AuthorityAt("us-east", 0).String() {
		t.Fatalf("--json:\n%s", out)
	}
	if err := post(); err != nil {
		t.Fatalf("a write at the primary after the clear: %v", err)
	}
	code, out, _ = run(t, "history", "conv/fenced", "--nats", s.nats)
	if code != 0 || !strings.Contains(out, "fence-force-cleared") || !strings.Contains(out, "alice + bob") || !strings.Contains(out, got.Audit.MigrationID) {
		t.Fatalf("history: %d\n%s", code, out)
	}
	code, _, errs = run(t, "fence", "clear", "conv/fenced", "--region", "us-east", "--approver", "alice", "--approver", "bob", "--nats", s.nats)
	if code != 1 || !strings.Contains(errs, "no stranded authority") {
		t.Fatalf("cleared twice: exit %d, %q", code, errs)
	}
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/orchestrator/approval"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
)

// forgeApproval signs, with the key in keyFile, a statement of q naming
// operator: what someone holding that key could send.
func forgeApproval(t *testing.T, keyFile, operator string, q approval.Request) string {
	t.Helper()
	b, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	k, err := approval.ParseKey(b)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	now := time.Now()
	tok, err := k.Sign(approval.Statement{Version: 1, Operator: operator, Operation: q.Operation, Resource: q.Resource, Region: q.Region,
		Reason: q.Reason, IssuedAt: now.Unix(), ExpiresAt: now.Add(10 * time.Minute).Unix(), Nonce: hex.EncodeToString(nonce)})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestSignedApprovals drives the two-person commands end to end against a
// deployment whose orchestrator verifies signed approvals: operators made
// with `operator keygen --registry`, approvals signed by `approve` (a file,
// a token) or on the spot (--key). Names alone, an unknown operator, a
// forged approval, the Unicode tricks, one operator twice and approvals of
// something else are refused — by the CLI before sending what it can tell
// (exit 2), by the orchestrator otherwise (exit 1, its refusal recorded) —
// and change nothing; two operators' approvals release a lock and repair a
// fence, audited by the orchestrator; an approval is used once.
func TestSignedApprovals(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Parallel()
	dir := t.TempDir()
	reg := filepath.Join(dir, "operators.json")
	key := func(name string) string { return filepath.Join(dir, name+".key") }
	for _, name := range []string{"alice", "Bob", "carol"} {
		if code, out, errs := run(t, "operator", "keygen", "--name", name, "--out", dir, "--registry", reg); code != 0 || !strings.Contains(out, "registered") {
			t.Fatalf("keygen %s: exit %d: %s%s", name, code, out, errs)
		}
	}
	if code, _, errs := run(t, "operator", "keygen", "--name", "mallory", "--out", dir); code != 0 {
		t.Fatalf("keygen mallory: %s", errs)
	}
	if fi, err := os.Stat(key("bob")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("bob's key (the name kept canonical): %v %v", fi, err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"operator", "keygen", "--name", "\u0430lice", "--out", dir}, 2, "mixes the scripts"},
		{[]string{"operator", "keygen", "--name", "alice\u200b", "--out", dir}, 1, "exists"},
		{[]string{"operator", "register", "--registry", reg, filepath.Join(dir, "alice.pub")}, 1, "registered twice"},
		{[]string{"operator", "register", "--registry", reg, filepath.Join(dir, "mallory.pub"), filepath.Join(dir, "carol.pub")}, 1, "registered twice"},
	} {
		if code, _, errs := run(t, c.args...); code != c.code || !strings.Contains(errs, c.want) {
			t.Fatalf("%q: exit %d, %q; want %d, %q", c.args, code, errs, c.code, c.want)
		}
	}
	if r, err := approval.LoadRegistry(reg); err != nil || r.Len() != 3 {
		t.Fatalf("registry: %v %v", r, err)
	}

	s := startCLISystem(t, func(c *system.Config) {
		c.Orchestrator.Convergence, c.Orchestrator.ConvergenceBuffer = orchestrator.ConvergenceTTL, 5*time.Minute
		c.Orchestrator.Operators = approval.File(reg)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	alice := mustClient(t, s.api, "alice")
	for _, id := range []string{"stuck", "fenced"} {
		if _, err := alice.CreateConversation(ctx, client.NewConversation{ID: id, Title: id}); err != nil {
			t.Fatal(err)
		}
	}
	stuck := kvrouting.Resource{Kind: "conv", ID: "stuck"}
	mid, err := s.orch.Start(ctx, events.Start{Resource: "conv/stuck", Target: "eu-west"})
	if err != nil {
		t.Fatal(err)
	}
	s.awaitLock(ctx, t, stuck, kvrouting.LockPre)
	nc, js := natstest.MustConnect(t, s.nats)
	fenced, err := s.lk.Get(ctx, kvrouting.Resource{Kind: "conv", ID: "fenced"})
	if err != nil {
		t.Fatal(err)
	}
	stranded := contract.Authority{Rev: fenced.Revision, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}
	strand := func() {
		t.Helper()
		for _, svc := range []string{"conversations", "messages"} {
			if _, err := contractnats.Dial(nc, js, "us-east", svc).Repair(ctx, "conv/fenced", stranded); err != nil {
				t.Fatal(err)
			}
		}
	}
	strand()
	records := func() string {
		t.Helper()
		var out []string
		for _, svc := range []string{"conversations", "messages"} {
			a, err := contractnats.Dial(nc, js, "us-east", svc).Authorize(ctx, "conv/fenced", contract.Authority{})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, a.String())
		}
		return strings.Join(out, " ")
	}

	const reason = "orchestrator lost"
	release := approval.Request{Operation: approval.OpForceRelease, Resource: "conv/stuck", Reason: reason}
	approve := func(args ...string) string {
		t.Helper()
		code, out, errs := run(t, append([]string{"approve"}, args...)...)
		if code != 0 || !strings.Contains(errs, "approves") {
			t.Fatalf("approve %q: exit %d: %s", args, code, errs)
		}
		return strings.TrimSpace(out)
	}
	fr := func(args ...string) []string {
		return append([]string{"lock", "force-release", "conv/stuck", "--reason", reason, "--nats", s.nats}, args...)
	}
	before, err := s.lk.Get(ctx, stuck)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"names alone", fr("--approver", "alice", "--approver", "bob"), 1, "no signed approvals"},
		{"an unknown operator", fr("--key", key("alice"), "--key", key("mallory")), 1, `"mallory" is not in the registry`},
		{"forged: bob's name, mallory's key", fr("--key", key("alice"), "--approval", forgeApproval(t, key("mallory"), "bob", release)), 1, `not signed by "bob"`},
		{"a Cyrillic а", fr("--key", key("alice"), "--approval", forgeApproval(t, key("alice"), "\u0430lice", release)), 1, "not in the registry"},
		{"a zero-width space", fr("--key", key("alice"), "--approval", forgeApproval(t, key("alice"), "alice\u200b", release)), 2, "approves twice"},
		{"a soft hyphen", fr("--approver", "alice", "--approver", "alice\u00ad"), 2, "two distinct approvers"},
		{"the same operator twice", fr("--key", key("alice"), "--approval", approve("--key", key("alice"), "--op", "force-release", "conv/stuck", "--reason", reason)), 2, "approves twice"},
		{"for another resource", fr("--key", key("alice"), "--approval", approve("--key", key("bob"), "--op", "force-release", "conv/fenced", "--reason", reason)), 2, "is for force-release conv/fenced"},
		{"for another reason", fr("--key", key("alice"), "--approval", approve("--key", key("bob"), "--op", "force-release", "conv/stuck", "--reason", "why not")), 2, "is for"},
		{"approvers other than the signers", fr("--approver", "alice", "--approver", "carol", "--key", key("alice"), "--key", key("bob")), 2, "carol gave no approval"},
		{"not an approval", fr("--key", key("alice"), "--approval", filepath.Join(dir, "missing")), 2, "neither an approval token nor a readable file"},
	} {
		code, out, errs := run(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Fatalf("%s: exit %d (want %d), stderr %q (want %q), stdout %q", c.name, code, c.code, errs, c.want, out)
		}
		if c.name == "names alone" {
			errs = unsignedWarned(t, code, errs)
		}
		oneLineErr(t, c.name, errs)
		if code == 1 && !strings.Contains(errs, "refused by the orchestrator") {
			t.Fatalf("%s: %q", c.name, errs)
		}
		if d, err := s.lk.Get(ctx, stuck); err != nil || d.Revision != before.Revision {
			t.Fatalf("%s: the refusal changed the routing document: %v %+v", c.name, err, d)
		}
	}

	// Two operators: alice's approval from a file, bob's as a token.
	aliceFile := filepath.Join(dir, "alice.approval")
	approve("--key", key("alice"), "--op", "force-release", "conv/stuck", "--reason", reason, "--out", aliceFile)
	code, out, errs := run(t, fr("--approver", "alice", "--approver", "Bob", "--approval", aliceFile,
		"--approval", approve("--key", key("bob"), "--op", "force-release", "conv/stuck", "--reason", reason, "--valid", "5m"))...)
	if code != 0 || !strings.Contains(out, "released conv/stuck") || !strings.Contains(out, "alice + bob; signed approvals") || !strings.Contains(out, mid) {
		t.Fatalf("force-release: exit %d: %s%s", code, out, errs)
	}
	if d, err := s.lk.Get(ctx, stuck); err != nil || !d.Primary.Lock.IsZero() {
		t.Fatalf("after the force-release: %v %+v", err, d)
	}

	// Fence clear: refused without the right approvals, then repaired.
	fc := func(args ...string) []string {
		return append([]string{"fence", "clear", "conv/fenced", "--region", "us-east", "--reason", reason, "--nats", s.nats}, args...)
	}
	clearBy := func(name string) string {
		return approve("--key", key(name), "--op", "fence-clear", "conv/fenced", "--region", "us-east", "--reason", reason)
	}
	a, b := clearBy("alice"), clearBy("bob")
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"names alone", fc("--approver", "alice", "--approver", "bob"), 1, "no signed approvals"},
		{"for another region", fc("--approval", a, "--approval", approve("--key", key("bob"), "--op", "fence-clear", "conv/fenced", "--region", "eu-west", "--reason", reason)), 2, "at eu-west"},
		{"an unknown operator", fc("--approval", a, "--key", key("mallory")), 1, "not in the registry"},
	} {
		code, out, errs := run(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Fatalf("fence clear, %s: exit %d (want %d), stderr %q (want %q), stdout %q", c.name, code, c.code, errs, c.want, out)
		}
		if got := records(); got != stranded.String()+" "+stranded.String() {
			t.Fatalf("fence clear, %s: the refusal changed the records: %s", c.name, got)
		}
	}
	code, out, errs = run(t, fc("--approval", a, "--approval", b, "--json")...)
	if code != 0 {
		t.Fatalf("fence clear: exit %d: %s%s", code, out, errs)
	}
	var got struct {
		Audit struct {
			Type string `json:"type"`
			Body struct {
				Approvers   []string `json:"Approvers"`
				ApprovalIDs []string `json:"ApprovalIDs"`
			} `json:"body"`
		} `json:"audit"`
		Cleared []struct {
			Service, Level, Token, Expiry, Previous, Repaired string
		} `json:"cleared"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Audit.Type != "fence-force-cleared" || strings.Join(got.Audit.Body.Approvers, ",") != "alice,bob" ||
		len(got.Audit.Body.ApprovalIDs) != 2 || len(got.Cleared) != 2 || got.Cleared[0].Level != "exporting" || got.Cleared[0].Expiry == "" || got.Cleared[0].Previous != stranded.String() {
		t.Fatalf("fence clear --json: %v\n%s", err, out)
	}
	want := fenced.AuthorityAt("us-east", 0).String()
	if got := records(); got != want+" "+want {
		t.Fatalf("after the clear: %s, want %s", got, want)
	}
	// The same approvals once more: used once, whatever the records hold.
	strand()
	code, _, errs = run(t, fc("--approval", a, "--approval", b)...)
	if code != 1 || !strings.Contains(errs, "was used before") {
		t.Fatalf("approvals used twice: exit %d: %s", code, errs)
	}
	if got := records(); got != stranded.String()+" "+stranded.String() {
		t.Fatalf("approvals used twice changed the records: %s", got)
	}

	// The audits and refusals are no migrations: nothing is left active.
	if code, out, errs := run(t, "migrate", "status", "--active", "--nats", s.nats); code != 0 || !strings.Contains(out, "no migrations") {
		t.Fatalf("migrate status --active: exit %d: %s%s", code, out, errs)
	}
	// The history shows the refusals and both audits, by the orchestrator.
	for res, wants := range map[string][]string{
		"conv/stuck":  {"force-released", "alice + bob; signed approvals", "force-release refused", "no signed approvals", "not in the registry"},
		"conv/fenced": {"fence-force-cleared", "alice + bob; signed approvals", "fence-clear refused", "was used before"},
	} {
		code, out, errs := run(t, "history", res, "--nats", s.nats)
		for _, w := range wants {
			if code != 0 || !strings.Contains(out, w) {
				t.Fatalf("history %s: exit %d, no %q:\n%s%s", res, code, w, out, errs)
			}
		}
	}
}

package orchestrator

import (
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/orchestrator/approval"
	"github.com/cutover/cutover/services/contract"
)

// outcome waits for the first event of a two-person command's admin
// aggregate: its audit event or its refusal.
func (e *env) outcome(aid string) *events.Envelope {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if h := e.history(aid); len(h) > 0 {
			if len(h) != 1 {
				e.t.Fatalf("admin aggregate %s has %d events", aid, len(h))
			}
			return h[0]
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no outcome of %s", aid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// operatorKeys are the tests' operators; mallory is in no registry.
type operatorKeys map[string]*approval.Key

func mustOperators(t *testing.T) (operatorKeys, *approval.Registry) {
	t.Helper()
	ks := operatorKeys{}
	for _, n := range []string{"alice", "bob", "carol", "mallory"} {
		k, err := approval.GenerateKey(n)
		if err != nil {
			t.Fatal(err)
		}
		ks[n] = k
	}
	reg, err := approval.NewRegistry(ks["alice"].Entry(), ks["bob"].Entry(), ks["carol"].Entry())
	if err != nil {
		t.Fatal(err)
	}
	return ks, reg
}

// approve is name's approval of q, valid for 10 minutes from a minute ago.
func (ks operatorKeys) approve(t *testing.T, name string, q approval.Request) string {
	t.Helper()
	tok, err := ks[name].Approve(q, time.Now().Add(-time.Minute), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// forge signs, with signer's key, a statement of q naming operator, as
// mod leaves it.
func (ks operatorKeys) forge(t *testing.T, signer, operator string, q approval.Request, mod func(*approval.Statement)) string {
	t.Helper()
	now := time.Now()
	st := approval.Statement{Version: 1, Operator: operator, Operation: q.Operation, Resource: q.Resource, Region: q.Region, Reason: q.Reason,
		IssuedAt: now.Add(-time.Minute).Unix(), ExpiresAt: now.Add(10 * time.Minute).Unix(), Nonce: hex.EncodeToString([]byte(fmt.Sprintf("%016d", now.UnixNano()%1e16)))}
	if mod != nil {
		mod(&st)
	}
	tok, err := ks[signer].Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// refusalCase is one refused two-person command: its approvers and
// approvals, and what its AdminRefused must say.
type refusalCase struct {
	name      string
	approvers []string
	approvals []string
	reason    string
	code      string
	says      string
}

// TestTwoPersonCommandsSigned: with an operator registry, the orchestrator
// refuses every force-release and fence clear whose approvals do not
// authorise it — unsigned names, the Unicode tricks (a zero-width space, a
// Cyrillic а, a soft hyphen), one operator twice, a forged, expired or
// mismatched approval, an unknown operator, an approval used before —
// records the refusal naming why, and changes nothing (the routing
// document and the stores' records read back the same); two operators'
// valid approvals release the lock and repair the records, audited by the
// orchestrator with the approvers and their approval ids.
func TestTwoPersonCommandsSigned(t *testing.T) {
	e := mustEnv(t)
	ks, reg := mustOperators(t)
	ctx := context.Background()
	e.seed("conv/stuck", 5)
	e.seed("conv/fenced", 3)
	f := e.wrap("us", "messages")
	block, exporting := make(chan struct{}), make(chan struct{}, 1)
	f.onExport = func(req contract.ExportRequest) error {
		if req.Resource == "conv/stuck" {
			select {
			case exporting <- struct{}{}:
			default:
			}
			<-block
		}
		return nil
	}
	cfg := e.config()
	cfg.StepTimeout, cfg.Operators = 2*time.Second, reg
	e.startWorker(cfg)
	defer close(block)
	id, err := e.client.Start(ctx, events.Start{Resource: "conv/stuck", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	e.awaitLock("conv/stuck", kvrouting.LockHardDelete)
	// The routing lock comes before the stores' records, and an export
	// installs its store's record: wait for messages' export to block and
	// reactions' record to land, so the records read below are settled.
	select {
	case <-exporting:
	case <-time.After(30 * time.Second):
		t.Fatal("conv/stuck never exported")
	}
	for deadline := time.Now().Add(30 * time.Second); !e.authority("us", "reactions", "conv/stuck").Stamped(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("conv/stuck's reactions never exported")
		}
	}
	// A stranded write fence at conv/fenced's primary, stricter than its
	// routing document: only a bug could leave it.
	fenced := e.doc("conv/fenced")
	stranded := contract.Authority{Rev: fenced.Revision, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}
	for _, svc := range testServices {
		if _, err := e.participant("us", svc).Authorize(ctx, "conv/fenced", stranded); err != nil {
			t.Fatal(err)
		}
	}
	records := func(res, region string) string {
		var out []string
		for _, svc := range testServices {
			out = append(out, e.authority(region, svc, res).String())
		}
		return strings.Join(out, " ")
	}

	release := approval.Request{Operation: approval.OpForceRelease, Resource: "conv/stuck", Reason: "stuck export"}
	clear := approval.Request{Operation: approval.OpFenceClear, Resource: "conv/fenced", Region: "us", Reason: "stranded"}
	alice := ks.approve(t, "alice", release)
	expired := func(s *approval.Statement) {
		s.IssuedAt, s.ExpiresAt = time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-time.Hour).Unix()
	}
	other := func(mod func(*approval.Request)) string {
		q := release
		mod(&q)
		return ks.approve(t, "bob", q)
	}
	for _, c := range []refusalCase{
		{"unsigned names", []string{"alice", "bob"}, nil, "", events.RefusedApprovals, "no signed approvals"},
		{"one approval", []string{"alice"}, []string{alice}, "", events.RefusedApprovals, "2 distinct operators needed"},
		{"a zero-width space", nil, []string{alice, ks.forge(t, "alice", "alice\u200b", release, nil)}, "", events.RefusedApprovals, "approves twice"},
		{"a Cyrillic а", nil, []string{alice, ks.forge(t, "alice", "\u0430lice", release, nil)}, "", events.RefusedApprovals, "not in the registry"},
		{"a soft hyphen", nil, []string{alice, ks.forge(t, "alice", "alice\u00ad", release, nil)}, "", events.RefusedApprovals, "approves twice"},
		{"the same operator twice", []string{"alice", "alice"}, []string{alice, ks.approve(t, "alice", release)}, "", events.RefusedApprovals, "approves twice"},
		{"forged: bob's name, mallory's key", nil, []string{alice, ks.forge(t, "mallory", "bob", release, nil)}, "", events.RefusedApprovals, `not signed by "bob"`},
		{"expired", nil, []string{alice, ks.forge(t, "bob", "bob", release, expired)}, "", events.RefusedApprovals, "expired"},
		{"for another operation", nil, []string{alice, ks.approve(t, "bob", approval.Request{Operation: approval.OpFenceClear, Resource: "conv/stuck", Region: "us", Reason: release.Reason})}, "", events.RefusedApprovals, "is for fence-clear"},
		{"for another resource", nil, []string{alice, other(func(q *approval.Request) { q.Resource = "conv/fenced" })}, "", events.RefusedApprovals, "conv/fenced"},
		{"for another reason", nil, []string{alice, ks.approve(t, "bob", release)}, "another reason", events.RefusedApprovals, "is for force-release"},
		{"an unknown operator", nil, []string{alice, ks.approve(t, "mallory", release)}, "", events.RefusedApprovals, `"mallory" is not in the registry`},
		{"approvers other than the signers", []string{"alice", "carol"}, []string{alice, ks.approve(t, "bob", release)}, "", events.RefusedApprovals, `"carol" gave no signed approval`},
	} {
		before, beforeDoc := records("conv/stuck", "us"), e.doc("conv/stuck")
		reason := release.Reason
		if c.reason != "" {
			reason = c.reason
		}
		aid, err := e.client.ForceRelease(ctx, events.ForceRelease{Resource: "conv/stuck", Approvers: c.approvers, Approvals: c.approvals, Reason: reason})
		if err != nil {
			t.Fatal(err)
		}
		r, ok := e.outcome(aid).Body.(events.AdminRefused)
		if !ok || r.Code != c.code || !strings.Contains(r.Refusal, c.says) || r.Command != events.TypeForceRelease || r.Resource != "conv/stuck" {
			t.Fatalf("force-release, %s: %+v, want a refusal saying %q", c.name, e.outcome(aid).Body, c.says)
		}
		if d := e.doc("conv/stuck"); d.Revision != beforeDoc.Revision || d.Primary.Lock.IsZero() {
			t.Fatalf("force-release, %s: the refusal changed the routing document: %+v", c.name, d)
		}
		if after := records("conv/stuck", "us"); after != before {
			t.Fatalf("force-release, %s: the refusal changed the records: %s, was %s", c.name, after, before)
		}
	}

	// Fence clear: the approvals' rules, then the state's.
	aliceClear := ks.approve(t, "alice", clear)
	clearAt := func(region string) approval.Request { q := clear; q.Region = region; return q }
	for _, c := range []struct {
		refusalCase
		resource, region string
	}{
		{refusalCase{"unsigned names", []string{"alice", "bob"}, nil, "", events.RefusedApprovals, "no signed approvals"}, "conv/fenced", "us"},
		{refusalCase{"a zero-width space", nil, []string{aliceClear, ks.forge(t, "alice", "alice\u200b", clear, nil)}, "", events.RefusedApprovals, "approves twice"}, "conv/fenced", "us"},
		{refusalCase{"a Cyrillic а", nil, []string{aliceClear, ks.forge(t, "alice", "\u0430lice", clear, nil)}, "", events.RefusedApprovals, "not in the registry"}, "conv/fenced", "us"},
		{refusalCase{"a soft hyphen", nil, []string{aliceClear, ks.forge(t, "alice", "al\u00adice", clear, nil)}, "", events.RefusedApprovals, "approves twice"}, "conv/fenced", "us"},
		{refusalCase{"for another region", nil, []string{aliceClear, ks.approve(t, "bob", clearAt("eu"))}, "", events.RefusedApprovals, "at eu"}, "conv/fenced", "us"},
		{refusalCase{"forged", nil, []string{aliceClear, ks.forge(t, "mallory", "carol", clear, nil)}, "", events.RefusedApprovals, "not signed"}, "conv/fenced", "us"},
		{refusalCase{"expired", nil, []string{aliceClear, ks.forge(t, "bob", "bob", clear, expired)}, "", events.RefusedApprovals, "expired"}, "conv/fenced", "us"},
		{refusalCase{"an unknown region", nil, []string{ks.approve(t, "alice", clearAt("mars")), ks.approve(t, "bob", clearAt("mars"))}, "", events.RefusedUnserved, `region "mars" is not served`}, "conv/fenced", "mars"},
		{refusalCase{"no stranded record there", nil, []string{ks.approve(t, "alice", clearAt("eu")), ks.approve(t, "bob", clearAt("eu"))}, "", events.RefusedNothing, "no stranded authority"}, "conv/fenced", "eu"},
		{refusalCase{"a migration in flight", nil, []string{ks.approve(t, "alice", approval.Request{Operation: approval.OpFenceClear, Resource: "conv/stuck", Region: "us", Reason: clear.Reason}),
			ks.approve(t, "bob", approval.Request{Operation: approval.OpFenceClear, Resource: "conv/stuck", Region: "us", Reason: clear.Reason})}, "", events.RefusedInUse, "lock force-release"}, "conv/stuck", "us"},
		{refusalCase{"no routing document", nil, []string{ks.approve(t, "alice", approval.Request{Operation: approval.OpFenceClear, Resource: "conv/nobody", Region: "us", Reason: clear.Reason}),
			ks.approve(t, "bob", approval.Request{Operation: approval.OpFenceClear, Resource: "conv/nobody", Region: "us", Reason: clear.Reason})}, "", events.RefusedNotFound, "no routing document"}, "conv/nobody", "us"},
	} {
		before := records(c.resource, "us") + " " + records(c.resource, "eu")
		aid, err := e.client.ClearFence(ctx, events.FenceClear{Resource: c.resource, Region: c.region, Approvers: c.approvers, Approvals: c.approvals, Reason: clear.Reason})
		if err != nil {
			t.Fatal(err)
		}
		r, ok := e.outcome(aid).Body.(events.AdminRefused)
		if !ok || r.Code != c.code || !strings.Contains(r.Refusal, c.says) || r.Command != events.TypeFenceClear {
			t.Fatalf("fence clear, %s: %+v, want a refusal saying %q", c.name, e.outcome(aid).Body, c.says)
		}
		if after := records(c.resource, "us") + " " + records(c.resource, "eu"); after != before {
			t.Fatalf("fence clear, %s: the refusal changed the records: %s, was %s", c.name, after, before)
		}
	}

	// Two operators: the fence is repaired, audited by the orchestrator.
	bobClear := ks.approve(t, "bob", clear)
	aid, err := e.client.ClearFence(ctx, events.FenceClear{Resource: "conv/fenced", Region: "us", Approvers: []string{"Alice", "bob"},
		Approvals: []string{aliceClear, bobClear}, Reason: clear.Reason})
	if err != nil {
		t.Fatal(err)
	}
	want := e.doc("conv/fenced").AuthorityAt("us", 0)
	ev, ok := e.outcome(aid).Body.(events.FenceForceCleared)
	if !ok || strings.Join(ev.Services, ",") != "messages,reactions" || strings.Join(ev.Approvers, ",") != "alice,bob" || len(ev.ApprovalIDs) != 2 ||
		len(ev.Repairs) != 2 || ev.Repairs[0].Role != string(contract.RoleExporting) || ev.Previous != stranded.String() || ev.Repaired != want.String() || ev.Failed != "" {
		t.Fatalf("fence clear: %+v", e.outcome(aid).Body)
	}
	if got := records("conv/fenced", "us"); got != want.String()+" "+want.String() {
		t.Fatalf("after the clear: %s, want %s", got, want)
	}
	ids, err := e.client.MigrationsOf(ctx, "conv/fenced")
	if err != nil || !slices.Contains(ids, aid) {
		t.Fatalf("the audit is not in conv/fenced's history: %v %v", ids, err)
	}

	// The same approvals again, however the command is worded: used once.
	for _, c := range []refusalCase{
		{"both again", nil, []string{aliceClear, bobClear}, "", events.RefusedApprovals, "used before"},
		{"one again with a fresh one", nil, []string{ks.approve(t, "carol", clear), bobClear}, "", events.RefusedApprovals, "used before"},
	} {
		// Strand the record again so that only the approvals are wrong.
		for _, svc := range testServices {
			if _, err := e.participant("us", svc).Repair(ctx, "conv/fenced", stranded); err != nil {
				t.Fatal(err)
			}
		}
		aid, err := e.client.ClearFence(ctx, events.FenceClear{Resource: "conv/fenced", Region: "us", Approvals: c.approvals, Reason: clear.Reason})
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := e.outcome(aid).Body.(events.AdminRefused); !ok || !strings.Contains(r.Refusal, c.says) {
			t.Fatalf("fence clear, %s: %+v", c.name, e.outcome(aid).Body)
		}
		if got := records("conv/fenced", "us"); got != stranded.String()+" "+stranded.String() {
			t.Fatalf("fence clear, %s: the refusal changed the records: %s", c.name, got)
		}
	}

	// A repair that fails: at the first service nothing has changed (a
	// refusal); at the second the first one's repair is audited with why
	// the rest was not done.
	f.mu.Lock()
	f.onRepair = func(contract.Authority) error { return contract.Errorf(contract.CodeUnavailable, "disk on fire") }
	f.mu.Unlock()
	aid, err = e.client.ClearFence(ctx, events.FenceClear{Resource: "conv/fenced", Region: "us",
		Approvals: []string{ks.approve(t, "alice", clear), ks.approve(t, "carol", clear)}, Reason: clear.Reason})
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := e.outcome(aid).Body.(events.AdminRefused); !ok || r.Code != events.RefusedFailed || !strings.Contains(r.Refusal, "us/messages: unavailable: disk on fire; nothing changed") {
		t.Fatalf("a failed repair: %+v", e.outcome(aid).Body)
	}
	if got := records("conv/fenced", "us"); got != stranded.String()+" "+stranded.String() {
		t.Fatalf("a failed repair changed the records: %s", got)
	}
	f.mu.Lock()
	f.onRepair = nil
	f.mu.Unlock()
	g := e.wrap("us", "reactions")
	g.onRepair = func(contract.Authority) error { return contract.Errorf(contract.CodeUnavailable, "disk on fire") }
	aid, err = e.client.ClearFence(ctx, events.FenceClear{Resource: "conv/fenced", Region: "us",
		Approvals: []string{ks.approve(t, "alice", clear), ks.approve(t, "carol", clear)}, Reason: clear.Reason})
	if err != nil {
		t.Fatal(err)
	}
	if ev, ok := e.outcome(aid).Body.(events.FenceForceCleared); !ok || strings.Join(ev.Services, ",") != "messages" || !strings.Contains(ev.Failed, "us/reactions: unavailable: disk on fire") {
		t.Fatalf("a repair failed at the second service: %+v", e.outcome(aid).Body)
	}
	if got := records("conv/fenced", "us"); got != want.String()+" "+stranded.String() {
		t.Fatalf("after a partial repair: %s", got)
	}

	// Two operators release the lock; the migration that held it ends.
	aid, err = e.client.ForceRelease(ctx, events.ForceRelease{Resource: "conv/stuck", Approvers: []string{"alice", "bob"},
		Approvals: []string{alice, ks.approve(t, "bob", release)}, Reason: release.Reason})
	if err != nil {
		t.Fatal(err)
	}
	rel, ok := e.outcome(aid).Body.(events.ForceReleased)
	if !ok || strings.Join(rel.Approvers, ",") != "alice,bob" || len(rel.ApprovalIDs) != 2 || rel.Reason != release.Reason {
		t.Fatalf("force-release: %+v", e.outcome(aid).Body)
	}
	if d := e.doc("conv/stuck"); !d.Primary.Lock.IsZero() || d.Primary.Region != "us" {
		t.Fatalf("after the force-release: %+v", d.Primary)
	}
	if st := e.waitDone(id, 30*time.Second); st.Status != events.StatusFailed || !strings.Contains(st.Reason, "force-released") {
		t.Fatalf("the migration: %s %s", st.Status, st.Reason)
	}
	if countType(e.history(id), events.TypeForceReleased) != 1 {
		t.Fatal("no force-released event on the migration")
	}
}

// TestTwoPersonCommandsWithoutRegistry: an orchestrator with no operator
// registry refuses every two-person command unless it runs development
// auth (UnsignedApprovals), which takes two distinct names — in their
// canonical form, so the Unicode tricks are refused there too — and
// records no approval ids.
func TestTwoPersonCommandsWithoutRegistry(t *testing.T) {
	ctx := context.Background()
	t.Run("refused", func(t *testing.T) {
		e := mustEnv(t)
		e.seed("conv/a", 1)
		e.startWorker(e.config())
		aid, err := e.client.ForceRelease(ctx, events.ForceRelease{Resource: "conv/a", Approvers: []string{"alice", "bob"}})
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := e.outcome(aid).Body.(events.AdminRefused); !ok || !strings.Contains(r.Refusal, "no operator registry") {
			t.Fatalf("%+v", e.outcome(aid).Body)
		}
	})
	t.Run("an unreadable registry", func(t *testing.T) {
		e := mustEnv(t)
		e.seed("conv/a", 1)
		cfg := e.config()
		cfg.Operators = approval.File(filepath.Join(t.TempDir(), "missing.json"))
		e.startWorker(cfg)
		aid, err := e.client.ForceRelease(ctx, events.ForceRelease{Resource: "conv/a", Approvers: []string{"alice", "bob"}, Approvals: []string{"x", "y"}})
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := e.outcome(aid).Body.(events.AdminRefused); !ok || !strings.Contains(r.Refusal, "cannot be read") {
			t.Fatalf("%+v", e.outcome(aid).Body)
		}
	})
	t.Run("development", func(t *testing.T) {
		e := mustEnv(t)
		e.seed("conv/a", 1)
		cfg := e.config()
		cfg.UnsignedApprovals = true
		e.startWorker(cfg)
		for _, names := range [][]string{{"alice", "alice\u200b"}, {"alice", "\u0430lice"}, {"alice", "alice\u00ad"}, {"alice", " ALICE "}, {"alice"}} {
			aid, err := e.client.ClearFence(ctx, events.FenceClear{Resource: "conv/a", Region: "us", Approvers: names})
			if err != nil {
				t.Fatal(err)
			}
			if r, ok := e.outcome(aid).Body.(events.AdminRefused); !ok || r.Code != events.RefusedApprovals {
				t.Fatalf("%q: %+v", names, e.outcome(aid).Body)
			}
		}
		ks, _ := mustOperators(t)
		q := approval.Request{Operation: approval.OpForceRelease, Resource: "conv/a", Reason: "dev"}
		aid, err := e.client.ForceRelease(ctx, events.ForceRelease{Resource: "conv/a", Approvals: []string{ks.approve(t, "alice", q), ks.approve(t, "bob", q)}, Reason: "dev"})
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := e.outcome(aid).Body.(events.AdminRefused); !ok || !strings.Contains(r.Refusal, "no operator registry to verify them") {
			t.Fatalf("signed approvals, no registry: %+v", e.outcome(aid).Body)
		}
		aid, err = e.client.ForceRelease(ctx, events.ForceRelease{Resource: "conv/a", Approvers: []string{"Alice", "bob"}, Reason: "dev"})
		if err != nil {
			t.Fatal(err)
		}
		if ev, ok := e.outcome(aid).Body.(events.ForceReleased); !ok || strings.Join(ev.Approvers, ",") != "alice,bob" || len(ev.ApprovalIDs) != 0 {
			t.Fatalf("%+v", e.outcome(aid).Body)
		}
	})
}

// TestTwoPersonCommandRedelivered: a command delivered again after an
// earlier delivery verified and claimed its approvals (it may have acted,
// then failed before its audit event) is finished and audited — even once
// the approvals have expired, since they were valid when it claimed them
// — and a fence clear that finds nothing left to repair says so; approvals
// claimed by another command are refused.
func TestTwoPersonCommandRedelivered(t *testing.T) {
	e := mustEnv(t)
	ks, reg := mustOperators(t)
	ctx := context.Background()
	e.seed("conv/r", 2)
	var offset atomic.Int64
	cfg := e.config()
	cfg.Operators, cfg.Clock = reg, func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	e.startWorker(cfg)
	res := kvrouting.Resource{Kind: "conv", ID: "r"}
	doc := e.doc("conv/r")
	want := doc.AuthorityAt("us", 0)
	stranded := contract.Authority{Rev: doc.Revision, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}
	strand := func() {
		for _, svc := range testServices {
			if _, err := e.participant("us", svc).Repair(ctx, "conv/r", stranded); err != nil {
				t.Fatal(err)
			}
		}
	}
	q := approval.Request{Operation: approval.OpFenceClear, Resource: "conv/r", Region: "us", Reason: "redelivered"}
	// send sends a fence clear as command cmdID whose approvals are already
	// claimed by owner's command, as an earlier delivery leaves them.
	send := func(cmdID, owner string) events.Body {
		t.Helper()
		approvals := []string{ks.approve(t, "alice", q), ks.approve(t, "bob", q)}
		for _, tok := range approvals {
			a, err := approval.Parse(tok)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.js.Publish(ctx, events.IndexSubject(res.Key(), approvalIndexID(a.ID)), []byte(AuditID(events.TypeFenceClear, owner))); err != nil {
				t.Fatal(err)
			}
		}
		offset.Store(int64(20 * time.Minute)) // the approvals (10 minutes) have expired since
		defer offset.Store(0)
		if err := sendCommand(ctx, e.js, cmdID, "", events.FenceClear{Resource: "conv/r", Region: "us", Approvals: approvals, Reason: q.Reason}); err != nil {
			t.Fatal(err)
		}
		return e.outcome(AuditID(events.TypeFenceClear, cmdID)).Body
	}
	records := func() string {
		return e.authority("us", "messages", "conv/r").String() + " " + e.authority("us", "reactions", "conv/r").String()
	}

	strand()
	if ev, ok := send("cmd-1", "cmd-1").(events.FenceForceCleared); !ok || len(ev.Services) != 2 || ev.Note != "" || len(ev.ApprovalIDs) != 2 {
		t.Fatalf("redelivered, expired since its claim: %+v", ev)
	}
	if got := records(); got != want.String()+" "+want.String() {
		t.Fatalf("after the redelivered clear: %s", got)
	}
	if ev, ok := send("cmd-2", "cmd-2").(events.FenceForceCleared); !ok || len(ev.Services) != 0 || !strings.Contains(ev.Note, "earlier delivery") {
		t.Fatalf("redelivered, nothing left to repair: %+v", ev)
	}
	strand()
	if r, ok := send("cmd-3", "cmd-other").(events.AdminRefused); !ok || !strings.Contains(r.Refusal, "expired") {
		t.Fatalf("expired approvals claimed by another command: %+v", r)
	}
	if got := records(); got != stranded.String()+" "+stranded.String() {
		t.Fatalf("a refusal changed the records: %s", got)
	}
}

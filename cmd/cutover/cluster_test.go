package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/check"
	"github.com/cutover/cutover/internal/ops"
	"github.com/cutover/cutover/internal/proctest"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/internal/workload"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"net/http"
)

// clusterEnv enables TestClusterTopology (make cluster-test sets it); the
// test starts real processes and takes about a minute, so `make test`
// skips it.
const clusterEnv = "CUTOVER_CLUSTER_TEST"

// TestClusterTopology runs the topology of DESIGN.md "Scaling out" as
// separate `cutover` processes on loopback — three `nats` nodes forming a
// JetStream cluster (R3) with TLS on client connections, mutual TLS on
// routes and users with the allowlists of nats/permissions.go (gateway:
// routing identity, orchestrators: orchestrator identity, projector:
// reader; streams created by `cutover provision` as the admin), signed
// user tokens at the gateway, a gateway serving us-east (write region) and
// eu-west (read replica: a ROUTING mirror), two orchestrators and a
// projector — migrates a tenant of conversations from us-east to eu-west
// under SDK traffic, SIGKILLs a NATS node and an orchestrator during the
// move, and checks the demo's invariants from the acknowledged client
// operations: every acknowledged write at the target with its last
// content, acknowledged deletes absent, routing at the target and
// unlocked, no orphaned lock. It also checks that no process logged a lock
// token whole.
func TestClusterTopology(t *testing.T) {
	if os.Getenv(clusterEnv) == "" {
		t.Skipf("set %s=1 (make cluster-test) to run the multi-process cluster test", clusterEnv)
	}
	start := time.Now()
	dir := t.TempDir()
	bin := proctest.Binary(t, dir)
	const (
		nConvs   = 20
		nSeed    = 15 // messages per conversation
		nUsers   = 4
		source   = "us-east"
		target   = "eu-west"
		tenantID = "cluster-tenant"
	)
	// Security as in production, set up by the documented one-time
	// commands: `cutover certs` (TLS on client connections, mutual TLS on
	// routes, users with bcrypt passwords and the allowlists of
	// nats/permissions.go, token and service secrets), then `cutover
	// provision` as the admin once the nodes are up.
	files := writeSecureFiles(t, filepath.Join(dir, "certs"))
	creds := files.creds
	ports := proctest.FreePorts(t, 8)
	cport, route := ports[0:3], ports[3:6]
	gwPort, projPort := ports[6], ports[7]

	// NATS: three nodes, each routing to the other two.
	var nodes []*proctest.Proc
	for i := range 3 {
		args := append(proctest.NATSNode("cutover", dir, i, cport, route), files.natsFlags()...)
		nodes = append(nodes, proctest.Start(t, bin, fmt.Sprintf("nats-%d", i), args...))
	}
	for _, n := range nodes {
		n.Await(t, `(Ctrl-C to stop)`, 30*time.Second)
	}
	natsURL := proctest.ClientURLs(cport)
	prov := proctest.Start(t, bin, "provision", append([]string{"provision", "--nats", natsURL, "--regions", source + "," + target}, creds("admin")...)...)
	prov.Await(t, `(cutover provision: .* provisioned)`, 90*time.Second)

	gw := proctest.Start(t, bin, "gateway", append(append([]string{"gateway", "--nats", natsURL, "--regions", source + "," + target,
		"--http", fmt.Sprintf("127.0.0.1:%d", gwPort), "--data", filepath.Join(dir, "gateway"), "--log-level", "debug"}, creds("gateway")...), files.secrets()...)...)
	api := "http://" + gw.Await(t, `HTTP API\s+http://(\S+)`, 90*time.Second)
	var orchs []*proctest.Proc
	for i := range 2 {
		orchs = append(orchs, proctest.Start(t, bin, fmt.Sprintf("orchestrator-%d", i),
			append([]string{"orchestrator", "--nats", natsURL, "--api", api, "--workers", "2", "--log-level", "debug",
				"--service-secret-file", files.path(certsServiceSecret), "--operators-file", files.path(certsOperators)}, creds("orchestrator")...)...))
	}
	for _, o := range orchs {
		o.Await(t, `(cutover orchestrator)`, 90*time.Second)
	}
	pr := proctest.Start(t, bin, "projector", append(append([]string{"projector", "--nats", natsURL, "--http", fmt.Sprintf("127.0.0.1:%d", projPort), "--log-level", "debug"},
		creds("projector")...), files.secrets()...)...)
	pr.Await(t, `(cutover projector)`, 90*time.Second)
	t.Logf("topology up in %.1f s: NATS %s, API %s", time.Since(start).Seconds(), natsURL, api)

	// Typically 30 s end to end; the bound leaves room for a loaded machine
	// and for the API's reads after the node's kill, which in some runs
	// take 5 s each (two per conversation: 146–171 s of checking in 3 of
	// 14 runs on 2026-12-07; see docs/chaos.md).
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Second)
	defer cancel()
	copts, err := files.security(t, "orchestrator").Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, js, err := cnats.Connect(ctx, natsURL, copts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	// Every routing revision, for the lock analysis and the log check.
	obs, err := check.Watch(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Stop()

	// Seed, then traffic through the SDK with the workload's one mix.
	seedStart := time.Now()
	users := make([]string, nUsers)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
	}
	led := workload.NewLedger()
	seeder := files.client(t, api, "seed")
	convs := make([]workload.Conv, nConvs)
	for i := range convs {
		convs[i] = workload.Conv{ID: fmt.Sprintf("cl-%02d", i), Size: nSeed}
	}
	if err := (workload.Seeder{Client: seeder, Users: users, Ledger: led}).All(ctx, convs, nil); err != nil {
		t.Fatalf("seed: %v", err)
	}
	t.Logf("seeded %d conversations in %.1f s", nConvs, time.Since(seedStart).Seconds())
	ids := workload.IDs(convs)
	tr, err := workload.StartTraffic(ctx, workload.TrafficConfig{APIs: []string{api}, Users: users, Convs: workload.NewConvSet(ids...), Seed: 7, Ledger: led,
		Token: func(u string) (string, error) { return files.token(t, u, "api"), nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Stop()
	time.Sleep(300 * time.Millisecond)

	// The tenant move, with a NATS node and an orchestrator killed in it.
	resources := make([]string, len(ids))
	for i, c := range ids {
		resources[i] = "conv/" + c
	}
	orch := orchestrator.NewClient(nc, js)
	migStart := time.Now()
	tid, err := orch.StartTenant(ctx, events.StartTenant{Tenant: tenantID, Target: target, Resources: resources, Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	killed := false
	var st *events.State
	for {
		if st, _, err = orch.State(ctx, tid); err == nil && st.Status.Terminal() {
			break
		}
		if !killed && err == nil && st.Fanout != nil && (st.Fanout.Finished() >= 2 || time.Since(migStart) > 3*time.Second) {
			t.Logf("%.1f s into the move (%d/%d finished): SIGKILL nats-2 and orchestrator-0", time.Since(migStart).Seconds(), st.Fanout.Finished(), nConvs)
			nodes[2].Kill(t)
			orchs[0].Kill(t)
			killed = true
		}
		if ctx.Err() != nil {
			t.Fatalf("tenant move did not finish: %v (state %+v)", ctx.Err(), st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("tenant move %s: %s in %.1f s (completed %d, failed %d, dropped %d)", tid, st.Status, time.Since(migStart).Seconds(),
		st.Fanout.Completed, st.Fanout.Failed, st.Fanout.Dropped)
	time.Sleep(500 * time.Millisecond) // traffic after the cutover lands at the target
	ts := tr.Stop()
	t.Logf("traffic: %d acknowledged, %d failed otherwise; 423: %d rejected, %d recovered, %d unrecovered", ts.Acknowledged, ts.FailedOther, ts.Rejected423, ts.Recovered, ts.Unrecovered)
	if !killed {
		t.Fatal("the move ended before the faults were injected")
	}
	if st.Status != events.StatusCompleted || st.Fanout.Completed != nConvs {
		t.Fatalf("tenant move: %s, %+v", st.Status, *st.Fanout)
	}

	// Invariants (internal/check), from what the clients saw acknowledged,
	// the routing documents read from the stream leader and the observed
	// revisions; no store access across processes.
	checkStart := time.Now()
	rs, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		t.Fatal(err)
	}
	var timings system.Config // the roles run with the default timings
	if err := timings.EnsureDefaults(); err != nil {
		t.Fatal(err)
	}
	rep, err := check.Run(ctx, check.Config{Ledger: led, Convs: ids, Reader: seeder, Routing: rs.GetLeader,
		Source: source, Target: target, Observer: obs, ClockSkew: timings.ClockSkew, WriteLease: timings.Locks.WriteLease})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("invariant check took %.1f s", time.Since(checkStart).Seconds())
	inv := rep.Invariants
	if bad := inv.Failures(); len(bad) > 0 || inv.Unacknowledged != 0 {
		for _, id := range ids {
			if strings.Contains(strings.Join(inv.Samples, "\n"), " of "+id+" ") {
				dumpRouting(t, ctx, js, obs, id)
			}
		}
		t.Fatalf("invariants violated: %v (unacknowledged present: %d)\n%s", bad, inv.Unacknowledged, strings.Join(inv.Samples, "\n"))
	}

	// Lock tokens are never logged whole (kvrouting.Token.LogValue).
	var bad []string
	tokens := obs.Tokens()
	logBytes := 0
	for _, p := range append(append([]*proctest.Proc{gw, pr}, orchs...), nodes...) {
		logs := p.Stderr() + p.Stdout() // copied once: the debug logs are large
		logBytes += len(logs)
		if i := strings.Index(strings.ToLower(logs), "permissions violation"); i >= 0 {
			bad = append(bad, fmt.Sprintf("%s met a permission violation: %.300s", p.Name, logs[i:]))
		}
		for tok := range tokens {
			if strings.Contains(logs, string(tok)) {
				bad = append(bad, fmt.Sprintf("%s logged token %s whole", p.Name, tok.Redacted()))
			}
		}
	}
	if len(tokens) == 0 {
		t.Fatal("no lock token seen in the routing documents")
	}
	if len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
	t.Logf("invariants hold for %d conversations; %d lock tokens, none in %d bytes of logs; total %.1f s", nConvs, len(tokens), logBytes, time.Since(start).Seconds())
}

// TestSecureRoles runs the roles against a `cutover nats` that requires
// TLS and users with the allowlists of nats/permissions.go, set up by the
// documented one-time commands (`cutover certs`, then `cutover provision`
// as the admin) — the gateway as the routing identity with signed user
// tokens, the orchestrator as the orchestrator identity, the projector as
// the reader — and migrates a conversation: the permissions are enough
// for the roles to work. A plaintext client is refused, a role started
// without credentials refuses to start, the projector refuses requests
// without a token of its audience, and no role logs a lock token whole.
func TestSecureRoles(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	files := writeSecureFiles(t, t.TempDir(), "us-east", "eu-west", "ap-south")
	n := startRole(t, append([]string{"nats", "--port", "0"}, files.natsFlags()[:8]...)...) // no --route-tls: one node
	url := n.await(t, `NATS\s+(nats://\S+)`)
	secRole := func(name, user string, args ...string) *role {
		return startRole(t, append(append([]string{name, "--nats", url, "--log-level", "debug"}, files.creds(user)...), args...)...)
	}
	// Without credentials, a role refuses to start.
	if code, _, errs := run(t, "orchestrator", "--nats", url); code != 2 || !strings.Contains(errs, "--insecure-dev-auth") {
		t.Fatalf("orchestrator without credentials: exit %d: %s", code, errs)
	}
	if code, out, errs := run(t, append([]string{"provision", "--nats", url, "--regions", "us-east,eu-west"}, files.creds("admin")...)...); code != 0 {
		t.Fatalf("provision: exit %d: %s%s", code, out, errs)
	}
	gw := secRole("gateway", "gateway", append([]string{"--regions", "us-east,eu-west", "--http", "127.0.0.1:0"}, files.secrets()...)...)
	api := "http://" + gw.await(t, `HTTP API\s+http://(\S+)`)
	or := secRole("orchestrator", "orchestrator", "--api", api, "--workers", "1", "--service-secret-file", files.path(certsServiceSecret),
		"--operators-file", files.path(certsOperators))
	or.await(t, `(cutover orchestrator)`)
	pr := secRole("projector", "projector", append([]string{"--http", "127.0.0.1:0"}, files.secrets()...)...)
	proj := "http://" + pr.await(t, `HTTP\s+http://(\S+)/v1/migrations`)
	// A region served by `cutover service` as that region's service user.
	svc := secRole("service", "service-ap-south", "--region", "ap-south")
	svc.await(t, `(cutover service: region ap-south)`)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if nc, _, err := cnats.Connect(ctx, url, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("connected without TLS or credentials")
	}
	opts, err := files.security(t, "orchestrator").Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, js, err := cnats.Connect(ctx, url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	deadline := time.Now().Add(30 * time.Second)
	for {
		eps, err := contractnats.Discover(ctx, nc)
		regions := map[string]int{}
		for _, ep := range eps {
			regions[ep.Region]++
		}
		if err == nil && regions["ap-south"] == len(chat.ServiceNames) && regions["us-east"] == len(chat.ServiceNames) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("contract servers discovered: %v %v", regions, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The service signs with the region key `cutover certs` wrote for it:
	// the orchestrator's keys (the contract secret) verify its replies,
	// another deployment's do not.
	for _, c := range []struct {
		secret string
		ok     bool
	}{{files.read(t, certsContractSecret), true}, {"another deployment's contract secret, 32+ bytes", false}} {
		cl := contractnats.Dial(nc, js, "ap-south", chat.ServiceNames[0], contractnats.WithKeys(contractnats.SecretKeys([]byte(c.secret))))
		if _, err := cl.Checkpoint(ctx, "m-probe"); (err == nil) != c.ok {
			t.Fatalf("a signed reply from ap-south, verified with the right secret %v: %v", c.ok, err)
		}
	}

	alice := files.client(t, api, "alice")
	if _, err := alice.CreateConversation(ctx, client.NewConversation{ID: "sec", Title: "sec"}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.PostMessage(ctx, "sec", client.NewMessage{ID: "m1", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	id := migrateAndWait(ctx, t, orchestrator.NewClient(nc, js), "conv/sec", "eu-west").ID
	got, err := alice.GetConversation(ctx, "sec")
	if err != nil || got.Region != "eu-west" {
		t.Fatalf("after: %v %+v", err, got)
	}
	// The operator commands connect as the user the environment names.
	t.Setenv(ops.EnvNATSUser, "admin")
	t.Setenv(ops.EnvNATSPasswordFile, files.path("nats-admin.password"))
	t.Setenv(ops.EnvNATSCA, files.path("ca.pem"))
	if code, out, errs := run(t, "migrate", "status", id, "--nats", url); code != 0 || !strings.Contains(out, "completed") {
		t.Errorf("migrate status as the admin: exit %d: %s%s", code, out, errs)
	}
	if code, out, errs := run(t, "routing", "get", "conv/sec", "--nats", url); code != 0 || !strings.Contains(out, "eu-west") {
		t.Errorf("routing get as the admin: exit %d: %s%s", code, out, errs)
	}
	// A dry run reads the source's digests: the admin may (it changes nothing).
	if code, out, errs := run(t, "migrate", "start", "conv/sec", "--to", "us-east", "--dry-run", "--nats", url); code != 0 || strings.Contains(out, "FAIL") {
		t.Errorf("dry run as the admin: exit %d: %s%s", code, out, errs)
	}
	// A two-person command as the admin: the orchestrator verifies the
	// operators' signed approvals and repairs the record itself; the admin
	// may not repair by itself, and names alone are refused.
	secDoc, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		t.Fatal(err)
	}
	before, err := secDoc.GetLeader(ctx, kvrouting.Resource{Kind: chat.KindConversation, ID: "sec"})
	if err != nil {
		t.Fatal(err)
	}
	stranded := contract.Authority{Rev: before.Revision, Role: contract.RoleExporting, Until: contract.UntilOf(time.Now().Add(time.Hour))}
	messages := contractnats.Dial(nc, js, "eu-west", "messages") // as the orchestrator: the test plays the bug
	if _, err := messages.Repair(ctx, "conv/sec", stranded); err != nil {
		t.Fatal(err)
	}
	held := func() string {
		t.Helper()
		a, err := messages.Authorize(ctx, "conv/sec", contract.Authority{})
		if err != nil {
			t.Fatal(err)
		}
		return a.String()
	}
	adminOpts, err := files.security(t, "admin").Options()
	if err != nil {
		t.Fatal(err)
	}
	violation := make(chan string, 4)
	anc, ajs, err := cnats.Connect(ctx, url, append(adminOpts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case violation <- err.Error():
		default:
		}
	}))...)
	if err != nil {
		t.Fatal(err)
	}
	defer anc.Close()
	rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = contractnats.Dial(anc, ajs, "eu-west", "messages").Repair(rctx, "conv/sec", before.AuthorityAt("eu-west", 0))
	rcancel()
	if err == nil || held() != stranded.String() {
		t.Fatalf("the admin repaired a record itself: %v, record %s", err, held())
	}
	select {
	case v := <-violation:
		if !strings.Contains(v, "Permissions Violation") || !strings.Contains(v, ".repair") {
			t.Fatalf("the admin's repair: %s", v)
		}
	case <-ctx.Done():
		t.Fatal("the admin's repair was not refused by the server")
	}
	clear := []string{"fence", "clear", "conv/sec", "--region", "eu-west", "--reason", "stranded in test", "--nats", url}
	if code, out, errs := run(t, append(clear, "--approver", "alice", "--approver", "bob")...); code != 1 || !strings.Contains(errs, "no signed approvals") || held() != stranded.String() {
		t.Fatalf("fence clear by names alone: exit %d: %s%s", code, out, errs)
	}
	if code, out, errs := run(t, append(clear, "--key", files.path("operator-alice.key"), "--key", files.path("operator-bob.key"))...); code != 0 ||
		!strings.Contains(out, "repaired the authority of conv/sec at eu-west/messages") || held() != before.AuthorityAt("eu-west", 0).String() {
		t.Fatalf("fence clear with two operators' approvals: exit %d: %s%s", code, out, errs)
	}
	if code, out, errs := run(t, "history", "conv/sec", "--nats", url); code != 0 || !strings.Contains(out, "fence-force-cleared") ||
		!strings.Contains(out, "alice + bob; signed approvals") || !strings.Contains(out, "fence-clear refused") {
		t.Errorf("history as the admin: exit %d: %s%s", code, out, errs)
	}
	t.Setenv(ops.EnvNATSUser, "")
	t.Setenv(ops.EnvNATSPasswordFile, "")
	if code, _, _ := run(t, "migrate", "status", id, "--nats", url); code == 0 {
		t.Error("migrate status without credentials succeeded")
	}
	// The projector: nothing without a token of its audience.
	bearer := func(tok string) http.Header { return http.Header{"Authorization": {"Bearer " + tok}} }
	for name, h := range map[string]http.Header{"no token": nil, "API token": bearer(files.token(t, "alice", "api")), "dev token": bearer("user:alice")} {
		if st, _, body := rawGet(t, proj+"/v1/migrations/"+id, h); st != http.StatusUnauthorized || strings.Contains(body, id) {
			t.Errorf("projector, %s: %d %.200q, want 401", name, st, body)
		}
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		st, _, body := rawGet(t, proj+"/v1/migrations/"+id, bearer(files.token(t, "ops", "projector")))
		if st == http.StatusOK && strings.Contains(body, `"status":"completed"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("projector with its token: %d %.300q", st, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st, _, _ := rawGet(t, proj+"/metrics", bearer("svc:validator:"+files.read(t, certsServiceSecret))); st != http.StatusOK {
		t.Errorf("projector /metrics with the service identity: %d", st)
	}
	rs, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := rs.GetLeader(ctx, kvrouting.Resource{Kind: chat.KindConversation, ID: "sec"})
	if err != nil || doc.Secondary == nil || doc.Secondary.Lock.Token == "" {
		t.Fatalf("routing: %v %+v", err, doc)
	}
	tok := string(doc.Secondary.Lock.Token)
	for name, r := range map[string]*role{"nats": n, "gateway": gw, "orchestrator": or, "projector": pr, "service": svc} {
		if strings.Contains(r.errs.String(), tok) || strings.Contains(r.out.String(), tok) {
			t.Errorf("%s logged the lock token whole", name)
		}
		if i := strings.Index(strings.ToLower(r.errs.String()), "permissions violation"); i >= 0 {
			t.Errorf("%s met a permission violation: %.300s", name, r.errs.String()[i:])
		}
	}
}

// migrateAndWait starts a migration of res to target and waits until it
// ends; it fails the test unless it completed.
func migrateAndWait(ctx context.Context, t *testing.T, oc *orchestrator.Client, res, target string) *events.State {
	t.Helper()
	id, err := oc.Start(ctx, events.Start{Resource: res, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	var st *events.State
	for {
		if st, _, err = oc.State(ctx, id); err == nil && st.Status.Terminal() {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("migration %s did not end: %v (state %+v)", id, ctx.Err(), st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Status != events.StatusCompleted {
		t.Fatalf("migration %s: %s (%s)", id, st.Status, st.Reason)
	}
	return st
}

// dumpRouting logs conv's routing revisions as the observer saw them and as
// the routing history stream holds them (every revision): the evidence a
// violation found from the revisions needs.
func dumpRouting(t *testing.T, ctx context.Context, js jetstream.JetStream, obs *check.Observer, conv string) {
	t.Helper()
	line := func(rev uint64, at time.Time, d *kvrouting.Document) string {
		s := fmt.Sprintf("rev %d at %s primary %s lock %s", rev, at.Format("15:04:05.000"), d.Primary.Region, d.Primary.Lock.Type)
		if d.Secondary != nil {
			s += fmt.Sprintf(", secondary %s %s", d.Secondary.Region, d.Secondary.Lock.Type)
		}
		return s + ", migration " + d.MigrationID
	}
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: conv}.String()
	var seen []string
	for _, h := range obs.History(res) {
		seen = append(seen, line(h.Rev, h.Created, h.Doc))
	}
	t.Logf("routing of %s as observed:\n  %s", conv, strings.Join(seen, "\n  "))
	cons, err := js.OrderedConsumer(ctx, cnats.RoutingHistoryStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Logf("routing history of %s: %v", conv, err)
		return
	}
	var stored []string
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			break
		}
		md, err := m.Metadata()
		if err != nil {
			continue
		}
		d, err := kvrouting.DecodeDocument(m.Data(), md.Sequence.Stream)
		if err != nil || d.Resource != res {
			continue
		}
		stored = append(stored, line(md.Sequence.Stream, md.Timestamp, d))
	}
	t.Logf("routing of %s in %s:\n  %s", conv, cnats.RoutingHistoryStream, strings.Join(stored, "\n  "))
}

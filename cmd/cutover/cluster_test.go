//go:build ignore

package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/services/chat"
	"github.com/cutover/cutover/services/client"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// clusterEnv enables TestClusterTopology (make cluster-test sets it); the
// test starts real processes and takes about a minute, so `make test`
// skips it.
const clusterEnv = "CUTOVER_CLUSTER_TEST"

// proc is one `cutover` process of the topology.
type proc struct {
	name      string
	cmd       *exec.Cmd
	out, errs syncBuffer
	done      chan struct{}
	waitErr   error
}

func startProc(t *testing.T, bin, name string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.errs
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			t.Errorf("%s did not stop on SIGTERM", name)
		}
		if t.Failed() {
			t.Logf("--- %s stdout:\n%s\n--- %s stderr (tail):\n%s", name, p.out.String(), name, tail(p.errs.String(), 40))
		}
	})
	return p
}

// kill ends the process at once (SIGKILL): a crash, not a shutdown.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill %s: %v", p.name, err)
	}
	<-p.done
}

// await returns the first submatch of re in the process's stdout.
func (p *proc) await(t *testing.T, re string, within time.Duration) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(within)
	for {
		if m := rx.FindStringSubmatch(p.out.String()); m != nil {
			return m[len(m)-1]
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v):\n%s\n%s", p.name, p.waitErr, p.out.String(), tail(p.errs.String(), 40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q within %s:\n%s\n%s", p.name, re, within, p.out.String(), tail(p.errs.String(), 40))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freeLoopbackPorts returns n distinct free ports on 127.0.0.1.
func freeLoopbackPorts(t *testing.T, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return ports
}

// cutoverBinary is $CUTOVER_BIN, or the package built once into dir.
func cutoverBinary(t *testing.T, dir string) string {
	t.Helper()
	if b := os.Getenv("CUTOVER_BIN"); b != "" {
		abs, err := filepath.Abs(b)
		if err != nil {
			t.Fatal(err)
		}
		return abs
	}
	bin := filepath.Join(dir, "cutover")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestClusterTopology runs the topology of DESIGN.md "Scaling out" as
// separate `cutover` processes on loopback — three `nats` nodes forming a
// JetStream cluster (R3) with TLS on client connections, mutual TLS on
// routes and users with subject permissions (gateway: routing identity,
// orchestrators: orchestrator identity, projector: reader), a gateway serving us-east (write region) and
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
	bin := cutoverBinary(t, dir)
	const (
		nConvs   = 20
		nSeed    = 15 // messages per conversation
		nUsers   = 4
		source   = "us-east"
		target   = "eu-west"
		tenantID = "cluster-tenant"
	)
	// Security as in production: TLS on client connections, mutual TLS on
	// routes, users with subject permissions (nats/security.go).
	pki, err := cnats.WriteTestPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	usersFile := filepath.Join(dir, "users.json")
	if err := os.WriteFile(usersFile, []byte(`[
		{"name": "gw", "password": "pw-gw", "identity": "routing"},
		{"name": "orch", "password": "pw-orch", "identity": "orchestrator"},
		{"name": "proj", "password": "pw-proj", "identity": "reader"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	creds := func(user string) []string {
		return []string{"--nats-user", user, "--nats-password", "pw-" + user, "--nats-ca", pki.CA}
	}
	ports := freeLoopbackPorts(t, 8)
	cport, route := ports[0:3], ports[3:6]
	gwPort, projPort := ports[6], ports[7]

	// NATS: three nodes, each routing to the other two.
	var nodes []*proc
	var urls []string
	for i := range 3 {
		var routes []string
		for j := range 3 {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", route[j]))
			}
		}
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", cport[i]))
		nodes = append(nodes, startProc(t, bin, fmt.Sprintf("nats-%d", i), "nats", "--name", fmt.Sprintf("n%d", i),
			"--port", strconv.Itoa(cport[i]), "--store", filepath.Join(dir, fmt.Sprintf("n%d", i)),
			"--cluster-name", "cutover", "--cluster-port", strconv.Itoa(route[i]), "--routes", strings.Join(routes, ","),
			"--users", usersFile, "--tls-cert", pki.ServerCert, "--tls-key", pki.ServerKey, "--tls-ca", pki.CA, "--route-tls"))
	}
	for _, n := range nodes {
		n.await(t, `(Ctrl-C to stop)`, 30*time.Second)
	}
	natsURL := strings.Join(urls, ",")

	gw := startProc(t, bin, "gateway", append([]string{"gateway", "--nats", natsURL, "--regions", source + "," + target,
		"--http", fmt.Sprintf("127.0.0.1:%d", gwPort), "--data", filepath.Join(dir, "gateway"), "--log-level", "debug"}, creds("gw")...)...)
	api := "http://" + gw.await(t, `HTTP API\s+http://(\S+)`, 90*time.Second)
	var orchs []*proc
	for i := range 2 {
		o := startProc(t, bin, fmt.Sprintf("orchestrator-%d", i), append([]string{"orchestrator", "--nats", natsURL, "--api", api, "--workers", "2", "--log-level", "debug"}, creds("orch")...)...)
		orchs = append(orchs, o)
	}
	for _, o := range orchs {
		o.await(t, `(cutover orchestrator)`, 90*time.Second)
	}
	pr := startProc(t, bin, "projector", append([]string{"projector", "--nats", natsURL, "--http", fmt.Sprintf("127.0.0.1:%d", projPort), "--log-level", "debug"}, creds("proj")...)...)
	pr.await(t, `(cutover projector)`, 90*time.Second)
	t.Logf("topology up in %.1f s: NATS %s, API %s", time.Since(start).Seconds(), natsURL, api)

	// Typically 30 s end to end; the bound leaves room for a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Second)
	defer cancel()
	copts, err := cnats.ClientSecurity{User: "orch", Password: "pw-orch", CAFile: pki.CA}.Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, js, err := cnats.Connect(ctx, natsURL, copts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	// Every lock token the routing documents ever carry, to check the logs.
	var tokMu sync.Mutex
	tokens := map[kvrouting.Token]bool{}
	kv, err := js.KeyValue(ctx, cnats.RoutingBucket)
	if err != nil {
		t.Fatal(err)
	}
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop() }()
	go func() {
		for e := range w.Updates() {
			if e == nil {
				continue
			}
			d, err := kvrouting.DecodeDocument(e.Value(), e.Revision())
			if err != nil {
				continue
			}
			tokMu.Lock()
			for _, l := range []kvrouting.Lock{d.Primary.Lock} {
				if l.Token != "" {
					tokens[l.Token] = true
				}
			}
			if d.Secondary != nil && d.Secondary.Lock.Token != "" {
				tokens[d.Secondary.Lock.Token] = true
			}
			tokMu.Unlock()
		}
	}()

	// Seed.
	seedStart := time.Now()
	users := make([]string, nUsers)
	for i := range users {
		users[i] = fmt.Sprintf("u%d", i)
	}
	seeder := mustClient(t, api, "seed")
	led := &ledger{msgs: map[string]map[string]*msgState{}}
	convs := make([]string, nConvs)
	for i := range convs {
		convs[i] = fmt.Sprintf("cl-%02d", i)
		if _, err := seeder.CreateConversation(ctx, client.NewConversation{ID: convs[i], Title: convs[i], Members: users}); err != nil {
			t.Fatalf("seed: %v", err)
		}
		for j := range nSeed {
			id, text := fmt.Sprintf("s%03d", j), fmt.Sprintf("seed %d of %s", j, convs[i])
			if _, err := seeder.PostMessage(ctx, convs[i], client.NewMessage{ID: id, Text: text}); err != nil {
				t.Fatalf("seed: %v", err)
			}
			led.set(convs[i], id, msgState{text: text})
		}
	}

	t.Logf("seeded %d conversations in %.1f s", nConvs, time.Since(seedStart).Seconds())

	// Traffic: posts, edits, deletes and reads through the SDK, as the demo.
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	defer stopTraffic()
	var acked, failed atomic.Int64
	var twg sync.WaitGroup
	var clients []*client.Client
	for ui, u := range users {
		c := mustClient(t, api, u)
		clients = append(clients, c)
		twg.Go(func() {
			r := rand.New(rand.NewPCG(7, uint64(ui)))
			own := map[string][]string{}
			n := 0
			for trafficCtx.Err() == nil {
				conv := convs[r.IntN(len(convs))]
				x := r.IntN(100)
				var err error
				switch {
				case x < 50:
					n++
					id, text := fmt.Sprintf("%s-%05d", u, n), fmt.Sprintf("live %d from %s", n, u)
					if _, err = c.PostMessage(trafficCtx, conv, client.NewMessage{ID: id, Text: text}); err == nil {
						led.set(conv, id, msgState{text: text})
						own[conv] = append(own[conv], id)
					} else {
						led.uncertain(conv, id, text, false)
					}
				case x < 65 && len(own[conv]) > 0:
					id := own[conv][r.IntN(len(own[conv]))]
					text := fmt.Sprintf("edited %d by %s", r.IntN(1e6), u)
					if _, err = c.EditMessage(trafficCtx, conv, id, text); err == nil {
						led.set(conv, id, msgState{text: text})
					} else {
						led.uncertain(conv, id, text, false)
					}
				case x < 75 && len(own[conv]) > 0:
					i := r.IntN(len(own[conv]))
					id := own[conv][i]
					if _, err = c.DeleteMessage(trafficCtx, conv, id); err == nil {
						led.set(conv, id, msgState{deleted: true})
						own[conv] = slices.Delete(own[conv], i, i+1)
					} else {
						led.uncertain(conv, id, "", true)
					}
				default:
					_, err = c.ListMessages(trafficCtx, conv, client.ListOptions{Limit: 20})
				}
				switch {
				case err == nil:
					acked.Add(1)
				case trafficCtx.Err() != nil, errors.Is(err, client.ErrUnrecovered):
				default:
					failed.Add(1)
				}
				time.Sleep(time.Duration(3+r.IntN(5)) * time.Millisecond)
			}
		})
	}
	time.Sleep(300 * time.Millisecond)

	// The tenant move, with a NATS node and an orchestrator killed in it.
	resources := make([]string, len(convs))
	for i, c := range convs {
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
			nodes[2].kill(t)
			orchs[0].kill(t)
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
	stopTraffic()
	twg.Wait()
	var rejected, recovered, unrecovered int64
	for _, c := range clients {
		s := c.Stats()
		rejected, recovered, unrecovered = rejected+s.Rejected423, recovered+s.Recovered, unrecovered+s.Unrecovered
	}
	t.Logf("traffic: %d acknowledged, %d failed otherwise; 423: %d rejected, %d recovered, %d unrecovered", acked.Load(), failed.Load(), rejected, recovered, unrecovered)
	if !killed {
		t.Fatal("the move ended before the faults were injected")
	}
	if st.Status != events.StatusCompleted || st.Fanout.Completed != nConvs {
		t.Fatalf("tenant move: %s, %+v", st.Status, *st.Fanout)
	}

	// Invariants, from what the clients saw acknowledged and the routing
	// documents read from the stream leader.
	checkStart := time.Now()
	defer func() { t.Logf("invariant check took %.1f s", time.Since(checkStart).Seconds()) }()
	rs, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	led.mu.Lock()
	defer led.mu.Unlock()
	for _, conv := range convs {
		res := kvrouting.Resource{Kind: chat.KindConversation, ID: conv}
		doc, err := rs.GetLeader(ctx, res)
		if err != nil {
			t.Fatal(err)
		}
		if doc.Primary.Region != target {
			bad = append(bad, fmt.Sprintf("%s not at the target: %s", conv, doc.Primary.Region))
		}
		if !doc.Primary.Lock.IsZero() {
			bad = append(bad, fmt.Sprintf("%s: orphaned lock %s", conv, doc.Primary.Lock.Type))
		}
		if doc.Secondary == nil || doc.Secondary.Region != source || doc.Secondary.Lock.Type != kvrouting.LockSecondary {
			bad = append(bad, fmt.Sprintf("%s: old location not a locked secondary: %+v", conv, doc.Secondary))
		}
		seen := map[string]string{}
		for m, err := range seeder.AllMessages(ctx, conv, client.ListOptions{Limit: 200}) {
			if err != nil {
				t.Fatalf("read %s: %v", conv, err)
			}
			seen[m.ID] = m.Text
		}
		for id, s := range led.msgs[conv] {
			text, ok := seen[id]
			switch {
			case !ok && (s.deleted || s.maybeDeleted):
			case ok && !s.deleted && text == s.text:
			case ok && slices.Contains(s.maybe, text):
			case s.deleted && ok:
				bad = append(bad, fmt.Sprintf("resurrected %s/%s: %q", conv, id, text))
			default:
				bad = append(bad, fmt.Sprintf("lost %s/%s: want %q, present=%v text %q", conv, id, s.text, ok, text))
			}
		}
		for id := range seen {
			if _, ok := led.msgs[conv][id]; !ok {
				bad = append(bad, fmt.Sprintf("unacknowledged %s/%s", conv, id))
			}
		}
	}
	if len(bad) > 0 {
		if len(bad) > 20 {
			bad = bad[:20]
		}
		t.Fatalf("invariants violated:\n%s", strings.Join(bad, "\n"))
	}

	// Lock tokens are never logged whole (kvrouting.Token.LogValue).
	tokMu.Lock()
	toks := len(tokens)
	logBytes := 0
	for _, p := range append(append([]*proc{gw, pr}, orchs...), nodes...) {
		logs := p.errs.String() + p.out.String() // copied once: the debug logs are large
		logBytes += len(logs)
		for tok := range tokens {
			if strings.Contains(logs, string(tok)) {
				bad = append(bad, fmt.Sprintf("%s logged token %s whole", p.name, tok.Redacted()))
			}
		}
	}
	tokMu.Unlock()
	if toks == 0 {
		t.Fatal("no lock token seen in the routing documents")
	}
	if len(bad) > 0 {
		t.Fatal(strings.Join(bad, "\n"))
	}
	t.Logf("invariants hold for %d conversations; %d lock tokens, none in %d bytes of logs; total %.1f s", nConvs, toks, logBytes, time.Since(start).Seconds())
}

// TestSecureRoles runs the roles against a `cutover nats` that requires
// TLS and users with subject permissions — the gateway as the routing
// identity, the orchestrator as the orchestrator identity, the projector
// as the unprivileged reader — and migrates a conversation: the
// permissions of nats/security.go are enough for the roles to work. A
// plaintext client is refused, and no role logs a lock token whole.
func TestSecureRoles(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	dir := t.TempDir()
	pki, err := cnats.WriteTestPKI(dir)
	if err != nil {
		t.Fatal(err)
	}
	usersFile := filepath.Join(dir, "users.json")
	if err := os.WriteFile(usersFile, []byte(`[
		{"name": "gw", "password": "pw-gw", "identity": "routing"},
		{"name": "orch", "password": "pw-orch", "identity": "orchestrator"},
		{"name": "proj", "password": "pw-proj", "identity": "reader"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startRole(t, "nats", "--port", "0", "--users", usersFile, "--tls-cert", pki.ServerCert, "--tls-key", pki.ServerKey)
	url := n.await(t, `NATS\s+(nats://\S+)`)
	secRole := func(name, user string, args ...string) *role {
		return startRole(t, append([]string{name, "--nats", url, "--nats-user", user, "--nats-password", "pw-" + user, "--nats-ca", pki.CA, "--log-level", "debug"}, args...)...)
	}
	gw := secRole("gateway", "gw", "--regions", "us-east,eu-west", "--http", "127.0.0.1:0")
	api := "http://" + gw.await(t, `HTTP API\s+http://(\S+)`)
	or := secRole("orchestrator", "orch", "--api", api, "--workers", "1")
	or.await(t, `(cutover orchestrator)`)
	pr := secRole("projector", "proj", "--http", "127.0.0.1:0")
	pr.await(t, `(cutover projector)`)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if nc, _, err := cnats.Connect(ctx, url, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("connected without TLS or credentials")
	}
	opts, err := cnats.ClientSecurity{User: "orch", Password: "pw-orch", CAFile: pki.CA}.Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, js, err := cnats.Connect(ctx, url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()

	alice := mustClient(t, api, "alice")
	if _, err := alice.CreateConversation(ctx, client.NewConversation{ID: "sec", Title: "sec"}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.PostMessage(ctx, "sec", client.NewMessage{ID: "m1", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	orch := orchestrator.NewClient(nc, js)
	id, err := orch.Start(ctx, events.Start{Resource: "conv/sec", Target: "eu-west"})
	if err != nil {
		t.Fatal(err)
	}
	var st *events.State
	for {
		if st, _, err = orch.State(ctx, id); err == nil && st.Status.Terminal() {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("migration did not end: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Status != events.StatusCompleted {
		t.Fatalf("migration %s: %s (%s)", id, st.Status, st.Reason)
	}
	got, err := alice.GetConversation(ctx, "sec")
	if err != nil || got.Region != "eu-west" {
		t.Fatalf("after: %v %+v", err, got)
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
	for name, r := range map[string]*role{"nats": n, "gateway": gw, "orchestrator": or, "projector": pr} {
		if strings.Contains(r.errs.String(), tok) || strings.Contains(r.out.String(), tok) {
			t.Errorf("%s logged the lock token whole", name)
		}
	}
}

//go:build ignore

package main

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/services/client"
)

// crashProc is one `cutover` process of a multi-process deployment.
type crashProc struct {
	name string
	args []string
	cmd  *exec.Cmd
	out  syncBuffer
}

func (p *crashProc) start(t *testing.T, bin string) {
	t.Helper()
	p.out = syncBuffer{}
	p.cmd = exec.Command(bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
}

// kill sends SIGKILL (no shutdown hook runs) and reaps the process.
func (p *crashProc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	p.cmd = nil
}

func (p *crashProc) await(t *testing.T, re string) {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(30 * time.Second)
	for !rx.MatchString(p.out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %q in:\n%s", p.name, re, p.out.String())
		}
		if p.cmd.ProcessState != nil {
			t.Fatalf("%s exited:\n%s", p.name, p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func crashFreePorts(t *testing.T, n int) []int {
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

// TestCrashDurability runs a deployment as separate processes — three
// `cutover nats` nodes (R3, sync always), a gateway and an orchestrator,
// all on data directories — starts a tenant move, SIGKILLs every process
// mid-migration, restarts them on the same directories and checks that
// every migration resumes and finishes: every acknowledged message at the
// target, routing unlocked at the target with the old location a locked
// secondary, no lock left anywhere (issue 6 item 5).
func TestCrashDurability(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process crash test")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "cutover")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ports := crashFreePorts(t, 7)
	var urls []string
	for i := range 3 {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	natsURL := strings.Join(urls, ",")
	api := fmt.Sprintf("http://127.0.0.1:%d", ports[6])

	var procs []*crashProc
	for i := range 3 {
		var routes []string
		for j := range 3 {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[3+j]))
			}
		}
		procs = append(procs, &crashProc{name: fmt.Sprintf("nats-%d", i), args: []string{"nats",
			"--port", fmt.Sprint(ports[i]), "--store", filepath.Join(dir, fmt.Sprintf("n%d", i)), "--name", fmt.Sprintf("crash-n%d", i),
			"--cluster-name", "crash", "--cluster-port", fmt.Sprint(ports[3+i]), "--routes", strings.Join(routes, ",")}})
	}
	gw := &crashProc{name: "gateway", args: []string{"gateway", "--nats", natsURL, "--regions", "us-east,eu-west",
		"--http", fmt.Sprintf("127.0.0.1:%d", ports[6]), "--data", filepath.Join(dir, "gw"), "--log-level", "warn"}}
	orch := &crashProc{name: "orchestrator", args: []string{"orchestrator", "--nats", natsURL, "--api", api, "--workers", "2", "--log-level", "warn"}}
	startAll := func() {
		t.Helper()
		var wg sync.WaitGroup
		for _, p := range procs {
			p.start(t, bin)
		}
		for _, p := range procs {
			wg.Go(func() { p.await(t, `NATS\s+nats://`) })
		}
		wg.Wait()
		gw.start(t, bin)
		gw.await(t, `HTTP API\s+http://`)
		orch.start(t, bin)
		orch.await(t, `cutover orchestrator`)
	}
	killAll := func() {
		var wg sync.WaitGroup
		for _, p := range append([]*crashProc{gw, orch}, procs...) {
			wg.Go(p.kill)
		}
		wg.Wait()
	}
	t.Cleanup(killAll)
	startAll()

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	alice := mustClient(t, api, "alice")
	const nConvs, nMsgs = 8, 25
	acked := map[string][]string{} // conversation → acknowledged message ids
	var resources []string
	for i := range nConvs {
		conv := fmt.Sprintf("crash-%d", i)
		if _, err := alice.CreateConversation(ctx, client.NewConversation{ID: conv, Title: conv}); err != nil {
			t.Fatal(err)
		}
		for j := range nMsgs {
			id := fmt.Sprintf("m%03d", j)
			if _, err := alice.PostMessage(ctx, conv, client.NewMessage{ID: id, Text: "before " + id}); err != nil {
				t.Fatal(err)
			}
			acked[conv] = append(acked[conv], id)
		}
		resources = append(resources, "conv/"+conv)
	}

	nc, js, err := cnats.Connect(ctx, natsURL)
	if err != nil {
		t.Fatal(err)
	}
	oc := orchestrator.NewClient(nc, js)
	tid, err := oc.StartTenant(ctx, events.StartTenant{Tenant: "crash", Target: "eu-west", Resources: resources, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	st, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		t.Fatal(err)
	}
	lk, err := kvrouting.NewLocker(st, kvrouting.LockConfig{PreLockLease: time.Minute, HardDeleteLease: time.Minute,
		WriteLease: 10 * time.Second, MaxLease: time.Hour, SecondaryLease: time.Hour, ConvergenceDelay: time.Second})
	if err != nil {
		t.Fatal(err)
	}

	// Mid-migration: some conversations have moved, some have not, at
	// least one holds a lock. Then SIGKILL every process at once.
	moved, locked := 0, 0
	for deadline := time.Now().Add(30 * time.Second); ; {
		moved, locked = 0, 0
		for _, r := range resources {
			res, _ := kvrouting.ParseResource(r)
			if doc, err := lk.Get(ctx, res); err == nil {
				if doc.Primary.Region == "eu-west" {
					moved++
				}
				if !doc.Primary.Lock.IsZero() {
					locked++
				}
			}
		}
		if moved >= 1 && locked >= 1 && moved < nConvs {
			break
		}
		if time.Now().After(deadline) || moved == nConvs {
			t.Fatalf("never caught the tenant mid-migration: %d moved, %d locked", moved, locked)
		}
		time.Sleep(20 * time.Millisecond)
	}
	nc.Close()
	killAll()
	t.Logf("SIGKILLed every process with %d/%d conversations moved and %d locked", moved, nConvs, locked)

	startAll()
	// Recovery has its own budget: a loaded machine may have spent much of
	// the first one before the kill.
	ctx, cancel = context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nc, js, err = cnats.Connect(ctx, natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	oc = orchestrator.NewClient(nc, js)
	if st, err = kvrouting.NewStore(ctx, nc, js, ""); err != nil {
		t.Fatal(err)
	}
	if lk, err = kvrouting.NewLocker(st, lk.Config()); err != nil {
		t.Fatal(err)
	}
	var tstate *events.State
	for {
		s, _, err := oc.State(ctx, tid)
		if err == nil && s.Status.Terminal() {
			tstate = s
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("tenant move did not finish after the restart: %v %+v\norchestrator:\n%s", err, s, orch.out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if tstate.Status != events.StatusCompleted {
		t.Fatalf("tenant ended %s", tstate.Status)
	}
	for _, id := range tstate.Children {
		s, _, err := oc.State(ctx, id)
		if err != nil || s.Status != events.StatusCompleted {
			t.Errorf("child %s: %v %+v", id, err, s)
		}
	}
	for _, r := range resources {
		res, _ := kvrouting.ParseResource(r)
		doc, err := lk.Get(ctx, res)
		if err != nil {
			t.Fatal(err)
		}
		if doc.Primary.Region != "eu-west" || !doc.Primary.Lock.IsZero() || doc.Target != "" || doc.MigrationID != "" {
			t.Errorf("%s: routing %+v", r, doc)
		}
		if doc.Secondary == nil || doc.Secondary.Region != "us-east" || doc.Secondary.Lock.Type != kvrouting.LockSecondary {
			t.Errorf("%s: old location %+v", r, doc.Secondary)
		}
		seen := map[string]bool{}
		for m, err := range alice.AllMessages(ctx, res.ID, client.ListOptions{Limit: 100}) {
			if err != nil {
				t.Fatal(err)
			}
			seen[m.ID] = true
		}
		for _, id := range acked[res.ID] {
			if !seen[id] {
				t.Errorf("%s: acknowledged message %s lost", r, id)
			}
		}
		if c, err := alice.GetConversation(ctx, res.ID); err != nil || c.Region != "eu-west" {
			t.Errorf("%s: served from %v %v", r, c.Region, err)
		}
	}
}

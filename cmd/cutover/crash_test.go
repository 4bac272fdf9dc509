package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/check"
	"github.com/cutover/cutover/internal/proctest"
	"github.com/cutover/cutover/internal/workload"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
)

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
	bin := proctest.Binary(t, dir)
	ports := proctest.FreePorts(t, 7)
	natsURL := proctest.ClientURLs(ports[:3])
	api := fmt.Sprintf("http://127.0.0.1:%d", ports[6])

	var procs []*proctest.Proc
	for i := range 3 {
		procs = append(procs, proctest.Start(t, bin, fmt.Sprintf("nats-%d", i), proctest.NATSNode("crash", dir, i, ports[:3], ports[3:6])...))
	}
	await := func() {
		t.Helper()
		var wg sync.WaitGroup
		for _, p := range procs {
			wg.Go(func() { p.Await(t, `NATS\s+nats://`, 30*time.Second) })
		}
		wg.Wait()
	}
	await()
	// Development identities (NATS without users): this test is about
	// durability; the validator's secret from a file.
	secret := filepath.Join(dir, "service.secret")
	if err := os.WriteFile(secret, []byte(testServiceSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	gwArgs := []string{"gateway", "--nats", natsURL, "--regions", "us-east,eu-west", "--insecure-dev-auth", "--service-secret-file", secret,
		"--http", fmt.Sprintf("127.0.0.1:%d", ports[6]), "--data", filepath.Join(dir, "gw"), "--log-level", "warn"}
	gw := proctest.Start(t, bin, "gateway", gwArgs...)
	gw.Await(t, `HTTP API\s+http://`, 30*time.Second)
	orch := proctest.Start(t, bin, "orchestrator", "orchestrator", "--nats", natsURL, "--api", api, "--workers", "2", "--log-level", "warn",
		"--insecure-dev-auth", "--service-secret-file", secret)
	orch.Await(t, `cutover orchestrator`, 30*time.Second)
	all := append([]*proctest.Proc{gw, orch}, procs...)
	killAll := func() {
		var wg sync.WaitGroup
		for _, p := range all {
			wg.Go(func() { p.Kill(t) })
		}
		wg.Wait()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	alice := mustClient(t, api, "alice")
	const nConvs, nMsgs = 8, 25
	led := workload.NewLedger()
	convs := make([]workload.Conv, nConvs)
	var resources []string
	for i := range convs {
		convs[i] = workload.Conv{ID: fmt.Sprintf("crash-%d", i), Size: nMsgs}
		resources = append(resources, "conv/"+convs[i].ID)
	}
	if err := (workload.Seeder{Client: alice, Ledger: led}).All(ctx, convs, nil); err != nil {
		t.Fatal(err)
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

	// Mid-migration: some conversations have moved, some have not, at
	// least one holds a lock. Then SIGKILL every process at once.
	moved, locked := 0, 0
	for deadline := time.Now().Add(90 * time.Second); ; {
		moved, locked = 0, 0
		for _, r := range resources {
			res, _ := kvrouting.ParseResource(r)
			if doc, err := st.GetLeader(ctx, res); err == nil {
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

	for _, p := range procs {
		p.Restart(t)
	}
	await()
	gw.Restart(t)
	gw.Await(t, `HTTP API\s+http://`, 30*time.Second)
	orch.Restart(t)
	orch.Await(t, `cutover orchestrator`, 30*time.Second)
	// Recovery has its own budget: a loaded machine may have spent much of
	// the first one before the kill.
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
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
	var tstate *events.State
	for {
		s, _, err := oc.State(ctx, tid)
		if err == nil && s.Status.Terminal() {
			tstate = s
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("tenant move did not finish after the restart: %v %+v\norchestrator:\n%s", err, s, orch.Stderr())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if tstate.Status != events.StatusCompleted {
		t.Fatalf("tenant ended %s", tstate.Status)
	}
	// The invariants (internal/check): every child completed (the fan-out
	// counts them), routing at
	// the target unlocked with the old location a locked secondary, every
	// acknowledged message there.
	rep, err := check.Run(ctx, check.Config{Ledger: led, Convs: workload.IDs(convs), Reader: alice, Routing: st.GetLeader,
		Source: "us-east", Target: "eu-west"})
	if err != nil {
		t.Fatal(err)
	}
	if bad := rep.Invariants.Failures(); len(bad) > 0 || tstate.Fanout == nil || tstate.Fanout.Completed != nConvs {
		t.Fatalf("after the crash: %v, fan-out %+v\n%s", bad, tstate.Fanout, strings.Join(rep.Invariants.Samples, "\n"))
	}
}

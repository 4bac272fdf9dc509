package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natstest"
)

// TestNodeExample runs docs/examples/node-watch (the official NATS
// JavaScript client and @msgpack/msgpack, decoding by docs/wire-format.md
// alone) against an embedded server during a lock lifecycle: it prints the
// pre-lock and the write lock by name, with the token redacted. Skipped,
// saying why, where node or npm or the npm registry is not available.
func TestNodeExample(t *testing.T) {
	if testing.Short() {
		t.Skip("installs npm packages")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the Node.js example is not run")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: the Node.js example is not run")
	}
	dir := t.TempDir()
	for _, f := range []string{"package.json", "watch.mjs"} {
		b, err := os.ReadFile(filepath.Join("../../docs/examples/node-watch", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Skipf("npm install failed (no registry here?): the Node.js example is not run: %v\n%s", err, out)
	}

	ns := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, ns.ClientURL())
	if _, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{}); err != nil {
		t.Fatal(err)
	}
	st, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		t.Fatal(err)
	}
	lk, err := kvrouting.NewLocker(st, kvrouting.LockConfig{FenceConvergence: true, ClockSkew: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	cmd := exec.CommandContext(ctx, node, "watch.mjs", "conv")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NATS_URL="+ns.ClientURL())
	var out, errs syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	wait := func(what string, in *syncBuffer) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !strings.Contains(in.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("the Node.js example printed no %s:\nstdout %s\nstderr %s", what, out.String(), errs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	wait("subscribed", &errs)

	res := kvrouting.Resource{Kind: "conv", ID: "node 1"}
	if _, err := lk.Register(ctx, res, "us-east"); err != nil {
		t.Fatal(err)
	}
	g, err := lk.PreLock(ctx, res, "eu-west", "m-node")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	d, err := lk.EscalateHardDelete(ctx, res, g.Token, g.Doc)
	if err != nil {
		t.Fatal(err)
	}
	if d, err = lk.EscalateWrite(ctx, res, g.Token, d); err != nil {
		t.Fatal(err)
	}
	wait(`"lock":"write"`, &out)
	if _, err := lk.Swap(ctx, res, g.Token, d); err != nil {
		t.Fatal(err)
	}
	wait(`"last_migration_id":"m-node"`, &out)
	var locks []string
	var last string
	for line := range strings.Lines(out.String()) {
		var c struct {
			Resource, Key string
			Primary       struct{ Region, Lock, Token string }
			MigrationID   string `json:"migration_id"`
			LastSwap      struct {
				MigrationID string `json:"migration_id"`
			} `json:"last_swap"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if c.Resource != "conv/node 1" || c.Key != res.Key() {
			t.Fatalf("resource %q key %q, want %q %q", c.Resource, c.Key, res, res.Key())
		}
		if strings.Contains(line, string(g.Token)) {
			t.Fatalf("a whole token: %s", line)
		}
		locks = append(locks, c.Primary.Region+":"+c.Primary.Lock)
		last = c.LastSwap.MigrationID
	}
	// The swap: eu-west primary, unlocked, naming the migration that moved it.
	if strings.Join(locks, ",") != "us-east:none,us-east:pre,us-east:hard-delete,us-east:write,eu-west:none" || last != "m-node" {
		t.Fatalf("locks seen %v, last swap by %q", locks, last)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/internal/proctest"
	"github.com/cutover/cutover/internal/wire"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natstest"
)

// decodeStdin runs `cutover decode kind` with b on stdin.
func decodeStdin(t *testing.T, kind string, b []byte) (int, string, string) {
	t.Helper()
	old := stdin
	stdin = bytes.NewReader(b)
	defer func() { stdin = old }()
	return run(t, "decode", kind)
}

// `cutover decode routing` on the raw ROUTING values of a real lock
// lifecycle (what `nats kv watch ROUTING --translate 'cutover decode
// routing'` feeds it): one JSON line per value, the lock type by name,
// no whole token.
func TestDecodeRoutingValues(t *testing.T) {
	ctx := context.Background()
	ns := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, ns.ClientURL())
	kv, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		t.Fatal(err)
	}
	lk, err := kvrouting.NewLocker(st, kvrouting.LockConfig{})
	if err != nil {
		t.Fatal(err)
	}
	res := kvrouting.Resource{Kind: "conv", ID: "lunch/1"}
	if _, err := lk.Register(ctx, res, "us-east"); err != nil {
		t.Fatal(err)
	}
	g, err := lk.PreLock(ctx, res, "eu-west", "m1")
	if err != nil {
		t.Fatal(err)
	}
	w, err := kv.WatchAll(ctx, jetstream.IncludeHistory())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var types []string
	for e := range w.Updates() {
		if e == nil {
			break
		}
		code, out, errs := decodeStdin(t, wire.KindRouting, e.Value())
		if code != 0 || strings.Count(out, "\n") != 1 {
			t.Fatalf("decode: %d %q %q", code, out, errs)
		}
		if strings.Contains(out, string(g.Token)) {
			t.Fatalf("a whole token in %s", out)
		}
		var r wire.Routing
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.Key != e.Key() || r.Resource != res.String() {
			t.Fatalf("key %q resource %q, want %q %q", r.Key, r.Resource, e.Key(), res)
		}
		types = append(types, r.Primary.Lock.Type)
	}
	if strings.Join(types, ",") != "none,pre" {
		t.Fatalf("lock types %v, want none,pre", types)
	}

	// natscli itself, where it is installed (`go install
	// github.com/nats-io/natscli/nats@v0.5.0`): the README's line. natscli
	// v0.5.0's `kv watch` has no --translate; `sub` on the bucket's
	// subjects shows the same changes live.
	natscli, err := exec.LookPath("nats")
	if err != nil {
		t.Log("natscli not on PATH: its --translate run is skipped (the decode path above is what it runs)")
		return
	}
	bin := proctest.Binary(t, t.TempDir())
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, natscli, "--server", ns.ClientURL(), "sub", "$KV.ROUTING.>", "--translate", bin+" decode routing")
	var buf syncBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	waitOutput := func(what string) {
		t.Helper()
		deadline := time.Now().Add(45 * time.Second)
		for !strings.Contains(buf.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("natscli printed no %s:\n%s", what, buf.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitOutput("Subscribing")
	if _, err := lk.EscalateHardDelete(ctx, res, g.Token, nil); err != nil {
		t.Fatal(err)
	}
	waitOutput(`"type":"hard-delete"`)
	if strings.Contains(buf.String(), string(g.Token)) {
		t.Fatalf("a whole token in natscli's output:\n%s", buf.String())
	}
}

func TestDecodeUsage(t *testing.T) {
	if code, _, _ := decodeStdin(t, "lock", []byte{0x80}); code != 2 {
		t.Fatalf("unknown kind: exit %d, want 2", code)
	}
	if code, _, errs := decodeStdin(t, "routing", []byte("garbage")); code != 1 || !strings.Contains(errs, "malformed") {
		t.Fatalf("garbage: exit %d %q", code, errs)
	}
	if code, out, _ := decodeStdin(t, "routing", nil); code != 0 || out != "null\n" {
		t.Fatalf("empty value (a delete): exit %d %q", code, out)
	}
}

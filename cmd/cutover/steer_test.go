package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/internal/ops"
	"github.com/cutover/cutover/internal/proctest"
	cnats "github.com/cutover/cutover/nats"
)

// binCLI runs the built binary's operator commands against one NATS URL.
type binCLI struct {
	t    *testing.T
	bin  string
	nats string
}

// run runs `cutover args... --nats URL` and returns its exit code and
// output.
func (c binCLI) run(args ...string) (int, string, string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append(args, "--nats", c.nats)...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errs.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errs.String()
	}
	c.t.Fatalf("cutover %v: %v", args, err)
	return 0, "", ""
}

// ok runs args and fails the test unless it exits 0; it returns stdout.
func (c binCLI) ok(args ...string) string {
	c.t.Helper()
	code, out, errs := c.run(args...)
	if code != 0 {
		c.t.Fatalf("cutover %v: exit %d\n%s%s", args, code, out, errs)
	}
	return out
}

// state is `migrate status ID --json`.
func (c binCLI) state(id string) ops.StateJSON {
	c.t.Helper()
	var st ops.StateJSON
	if err := json.Unmarshal([]byte(c.ok("migrate", "status", id, "--json")), &st); err != nil {
		c.t.Fatal(err)
	}
	return st
}

// await polls id's status until cond holds.
func (c binCLI) await(id, what string, within time.Duration, cond func(ops.StateJSON) bool) ops.StateJSON {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		st := c.state(id)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s never %s within %s: %+v", id, what, within, st)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestSteeringThroughTheBinary drives `cutover dev` (a process of its own,
// on a data directory) with the built binary's operator commands: a
// tenant move throttled at start, paused, the dev process SIGKILLed and
// restarted (still paused: the pause is an event), throttled to a higher
// concurrency, resumed, completed; a write-block budget rollback; a
// follow of a migration another process started; the pre-flights that
// refuse and write nothing.
func TestSteeringThroughTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	dir := t.TempDir()
	bin := proctest.Binary(t, dir)
	ports := proctest.FreePorts(t, 3)
	natsURL := fmt.Sprintf("nats://127.0.0.1:%d", ports[0])
	api := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	dev := proctest.Start(t, bin, "dev", "dev", "--data", filepath.Join(dir, "data"), "--nats-port", fmt.Sprint(ports[0]),
		"--http", fmt.Sprintf("127.0.0.1:%d", ports[1]), "--dashboard", fmt.Sprintf("127.0.0.1:%d", ports[2]))
	dev.Await(t, `Ctrl-C to stop`, 90*time.Second)
	cli := binCLI{t: t, bin: bin, nats: natsURL}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ann := mustClient(t, api, "ann")
	var resources []string
	for i := range 5 {
		conv := fmt.Sprintf("steer-%d", i)
		if _, err := ann.CreateConversation(ctx, client.NewConversation{ID: conv, Title: conv}); err != nil {
			t.Fatal(err)
		}
		for j := range 12 {
			if _, err := ann.PostMessage(ctx, conv, client.NewMessage{ID: fmt.Sprintf("m%d", j), Text: "hi"}); err != nil {
				t.Fatal(err)
			}
		}
		resources = append(resources, "conv/"+conv)
	}

	// A tenant move at one migration at a time, 4 records a second: slow
	// enough to steer. `migrate tenant` follows it; its first line names
	// it.
	follow := exec.CommandContext(ctx, bin, "migrate", "tenant", "steer", "--to", "eu-west", "--resources", strings.Join(resources, ","),
		"--concurrency", "1", "--rate", "4", "--nats", natsURL)
	var followOut syncBuffer
	follow.Stdout, follow.Stderr = &followOut, &followOut
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	var tid string
	for deadline := time.Now().Add(time.Minute); tid == ""; time.Sleep(50 * time.Millisecond) {
		if m := regexp.MustCompile(`tenant migration (m[0-9a-f]{31})`).FindStringSubmatch(followOut.String()); m != nil {
			tid = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no tenant move id from migrate tenant: %q", followOut.String())
		}
	}
	cli.await(tid, "running a child", time.Minute, func(st ops.StateJSON) bool { return st.Fanout != nil && st.Fanout.Active == 1 })
	if out := cli.ok("migrate", "pause", tid, "--reason", "peak hours"); !strings.Contains(out, "paused") {
		t.Fatalf("pause: %q", out)
	}
	if code, _, errs := cli.run("migrate", "pause", tid); code != 2 || !strings.Contains(errs, "already paused since") {
		t.Fatalf("a second pause: exit %d %q", code, errs)
	}
	paused := cli.await(tid, "paused", time.Minute, func(st ops.StateJSON) bool { return st.Paused })

	// The whole deployment dies and comes back on its data: still paused.
	dev.Kill(t)
	dev.Restart(t)
	dev.Await(t, `Ctrl-C to stop`, 90*time.Second)
	time.Sleep(2 * time.Second) // several tenant polls after the restart
	st := cli.state(tid)
	if !st.Paused || st.PauseReason != "peak hours" || st.Fanout.Started != paused.Fanout.Started {
		t.Fatalf("after the restart: paused %v (%q), started %d → %d", st.Paused, st.PauseReason, paused.Fanout.Started, st.Fanout.Started)
	}

	// Throttled while paused, then resumed: it completes.
	if out := cli.ok("migrate", "throttle", tid, "--concurrency", "3", "--rate", "off"); !strings.Contains(out, "concurrency 3, no rate cap") {
		t.Fatalf("throttle: %q", out)
	}
	cli.ok("migrate", "resume", tid)
	done := cli.await(tid, "completed", 3*time.Minute, func(st ops.StateJSON) bool { return st.Status != "active" })
	if done.Status != "completed" || done.Fanout.Completed != len(resources) || done.Fanout.Concurrency != 3 {
		t.Fatalf("tenant move: %+v %+v", done, done.Fanout)
	}
	if err := follow.Wait(); err != nil {
		t.Logf("migrate tenant (its follower lost NATS in the restart): %v", err)
	}
	if code, _, errs := cli.run("migrate", "resume", tid); code != 2 || !strings.Contains(errs, "already ended (completed)") {
		t.Fatalf("resume of an ended move: exit %d %q", code, errs)
	}
	hist := cli.ok("history", tid)
	for _, want := range []string{"paused: peak hours", "concurrency 3, no rate cap", "resumed"} {
		if !strings.Contains(hist, want) {
			t.Errorf("history lacks %q:\n%s", want, hist)
		}
	}

	// A write-block budget too small for any Phase 3: every attempt rolls
	// back, naming it, and the writes' blocked time is recorded.
	if _, err := ann.CreateConversation(ctx, client.NewConversation{ID: "budget", Title: "budget"}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := cli.run("migrate", "start", "conv/budget", "--to", "eu-west", "--max-write-block", "1ns", "--wait")
	if code != 1 || !strings.Contains(out+errs, "write-block budget 1ns spent") {
		t.Fatalf("budget: exit %d\n%s%s", code, out, errs)
	}
	bid := migrationIDRe.FindString(out)
	if b := cli.state(bid); b.Status != "failed" || b.WriteBlockedMs < 0 || b.MaxWriteBlockMs != 0 && b.MaxWriteBlockMs > 1 {
		t.Fatalf("budget migration: %+v", b)
	}

	// Follow a migration another process started: every event to its end.
	if _, err := ann.CreateConversation(ctx, client.NewConversation{ID: "followed", Title: "followed"}); err != nil {
		t.Fatal(err)
	}
	fid := strings.TrimSpace(cli.ok("migrate", "start", "conv/followed", "--to", "eu-west"))
	lines := strings.Split(strings.TrimSpace(cli.ok("migrate", "status", fid, "--follow", "--json", "--timeout", "2m")), "\n")
	var last struct{ Type, Status string }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Type != "completed" || len(lines) < 6 {
		t.Fatalf("follow: %d lines, last %+v (%v)", len(lines), last, err)
	}

	// Refused before acting, exit 2, nothing written.
	nc, js, err := cnats.Connect(ctx, natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	snapshot := func() map[string]uint64 {
		seqs := map[string]uint64{}
		l := js.ListStreams(ctx)
		for info := range l.Info() {
			if info.Config.Mirror == nil { // mirrors catch up on their own
				seqs[info.Config.Name] = info.State.LastSeq
			}
		}
		if err := l.Err(); err != nil {
			t.Fatal(err)
		}
		return seqs
	}
	time.Sleep(time.Second) // the followed migration's last writes settle
	before := snapshot()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "start", "conv/nope", "--to", "eu-west"}, "conv/nope"},
		{[]string{"migrate", "start", "conv/followed", "--to", "eu-west"}, "already at eu-west"},
		{[]string{"migrate", "start", "conv/followed", "--to", "ap-south"}, "unknown region ap-south (served: eu-west, us-east)"},
		{[]string{"migrate", "pause", fid}, "already ended (completed)"},
		{[]string{"migrate", "throttle", fid, "--rate", "5"}, "already ended (completed)"},
	} {
		code, _, errs := cli.run(c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", c.args, code, errs, c.want)
		}
	}
	if after := snapshot(); !reflect.DeepEqual(before, after) {
		t.Fatalf("a refused command wrote: streams %v → %v", before, after)
	}
}

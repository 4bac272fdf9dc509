package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// A worker whose consumer cannot be created stops `cutover orchestrator`
// with its error and a non-zero exit (every role runs its components in
// one run.Group; issue 13 item 9). Another unfiltered consumer holds the
// work queue stream, which admits only one.
func TestOrchestratorExitsWhenAWorkerFails(t *testing.T) {
	srv := natstest.RunServer(t)
	_, js := natstest.MustConnect(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := system.Provision(ctx, js, system.ProvisionConfig{Nodes: 1, Migration: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateConsumer(ctx, events.WorkStream, jetstream.ConsumerConfig{Durable: "intruder",
		AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	var out, errs bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"orchestrator", "--nats", srv.ClientURL(), "--workers", "1", "--log-level", "error", "--insecure-dev-auth"}, &out, &errs)
	}()
	select {
	case code := <-done:
		if code != 1 || !strings.Contains(errs.String(), "work consumer") {
			t.Fatalf("exit %d, stderr %q, stdout %q", code, errs.String(), out.String())
		}
	case <-ctx.Done():
		t.Fatalf("cutover orchestrator kept running without its worker:\n%s", out.String())
	}
}

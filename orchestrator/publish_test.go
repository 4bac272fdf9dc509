package orchestrator

import (
	"context"
	"testing"
	"time"

	"github.com/cutover/cutover/nats/natstest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPublishAttemptIsBounded: a publish whose reply never comes (a stream
// leader that crashed: the request is taken, nobody answers) ends after
// its attempts, each bounded, not at the caller's long deadline.
func TestPublishAttemptIsBounded(t *testing.T) {
	defer func(d time.Duration) { publishAttemptTimeout = d }(publishAttemptTimeout)
	publishAttemptTimeout = 50 * time.Millisecond
	srv := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, srv.ClientURL())
	// A subscriber that takes every request and never replies.
	sub, err := nc.SubscribeSync("silent.>")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	msg := nats.NewMsg("silent.cmd")
	msg.Data = []byte("x")
	if _, err := publishRetry(ctx, js, msg, jetstream.WithMsgID("id-1")); err == nil {
		t.Fatal("a publish nobody answered succeeded")
	}
	if ctx.Err() != nil {
		t.Fatal("publishRetry waited for the caller's deadline")
	}
	// Every attempt reached the subscriber: the retries happened.
	n, _, _ := sub.Pending()
	if n != 4 {
		t.Fatalf("%d attempts, want 4", n)
	}
}

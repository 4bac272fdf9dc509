package kvrouting

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cutover/cutover/internal/testutil"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

type env struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	store *Store
	clock *testutil.Clock
	lk    *Locker
}

// testLockConfig uses short leases measured on the fake clock.
func testLockConfig(c *testutil.Clock) LockConfig {
	return LockConfig{
		PreLockLease: time.Hour, HardDeleteLease: 10 * time.Minute, WriteLease: time.Minute,
		MaxLease: 3 * time.Hour, SecondaryLease: 24 * time.Hour, ConvergenceDelay: 30 * time.Second,
		ClockSkew: time.Second, Clock: c.Now,
	}
}

func mustEnv(tb testing.TB) *env {
	tb.Helper()
	srv := natstest.RunServer(tb)
	return mustEnvURL(tb, srv.ClientURL(), 1)
}

func mustEnvURL(tb testing.TB, url string, replicas int) *env {
	tb.Helper()
	nc, js := natstest.MustConnect(tb, url)
	ctx := context.Background()
	if _, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{Replicas: replicas}); err != nil {
		tb.Fatalf("provision: %v", err)
	}
	if _, err := cnats.ProvisionRoutingHistory(ctx, js, replicas, 0); err != nil {
		tb.Fatalf("provision history: %v", err)
	}
	st, err := NewStore(ctx, nc, js, "")
	if err != nil {
		tb.Fatal(err)
	}
	c := testutil.NewClock()
	lk, err := NewLocker(st, testLockConfig(c))
	if err != nil {
		tb.Fatal(err)
	}
	return &env{nc: nc, js: js, store: st, clock: c, lk: lk}
}

func mustRegister(tb testing.TB, e *env, id, region string) Resource {
	tb.Helper()
	res := Resource{Kind: "conv", ID: id}
	if _, err := e.lk.Register(context.Background(), res, region); err != nil {
		tb.Fatalf("register %s: %v", res, err)
	}
	return res
}

func mustGet(tb testing.TB, e *env, res Resource) *Document {
	tb.Helper()
	d, err := e.store.GetLeader(context.Background(), res)
	if err != nil {
		tb.Fatalf("get %s: %v", res, err)
	}
	return d
}

func resN(i int) string { return fmt.Sprintf("c%04d", i) }

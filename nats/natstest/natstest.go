// Package natstest runs embedded NATS servers and clusters for tests in any package.
package natstest

import (
	"context"
	"testing"

	cnats "github.com/cutover/cutover/nats"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The helpers live here, not in package cnats, so that a binary importing
// cnats does not link package testing.

// RunServer starts a single embedded server with a temporary store and sync
// always, for tests in any package, and shuts it down (removing the store)
// when the test ends. It fails the test if the server does not start.
func RunServer(tb testing.TB) *cnats.Server {
	tb.Helper()
	s, err := cnats.StartServer(cnats.Options{})
	if err != nil {
		tb.Fatalf("natstest.RunServer: %v", err)
	}
	tb.Cleanup(s.Shutdown)
	return s
}

// RunCluster starts an n-node cluster (n <= 0 means
// cnats.DefaultClusterNodes) with temporary stores and sync always, and shuts
// it down when the test ends. It fails the test if the cluster does not form.
func RunCluster(tb testing.TB, n int) *cnats.Cluster {
	tb.Helper()
	if n <= 0 {
		n = cnats.DefaultClusterNodes
	}
	c, err := cnats.StartCluster(cnats.ClusterOptions{Nodes: n})
	if err != nil {
		tb.Fatalf("natstest.RunCluster: %v", err)
	}
	tb.Cleanup(c.Shutdown)
	return c
}

// MustConnect connects to urls with cnats.Connect's defaults and closes the
// connection when the test ends. It fails the test if it cannot connect.
func MustConnect(tb testing.TB, urls string) (*nats.Conn, jetstream.JetStream) {
	tb.Helper()
	nc, js, err := cnats.Connect(context.Background(), urls)
	if err != nil {
		tb.Fatalf("natstest.MustConnect: %v", err)
	}
	tb.Cleanup(nc.Close)
	return nc, js
}

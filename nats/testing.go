package cnats

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TB is the part of testing.TB the helpers below use. They take it rather
// than testing.TB so that the packages importing cnats (kvrouting,
// orchestrator, the cutover binary) do not link package testing.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// RunServer starts a single embedded server with a temporary store and sync
// always, for tests in any package, and shuts it down (removing the store)
// when the test ends. It fails the test if the server does not start.
func RunServer(tb TB) *Server {
	tb.Helper()
	s, err := StartServer(Options{})
	if err != nil {
		tb.Fatalf("cnats.RunServer: %v", err)
	}
	tb.Cleanup(s.Shutdown)
	return s
}

// RunCluster starts an n-node cluster (n <= 0 means DefaultClusterNodes) with
// temporary stores and sync always, and shuts it down when the test ends. It
// fails the test if the cluster does not form.
func RunCluster(tb TB, n int) *Cluster {
	tb.Helper()
	if n <= 0 {
		n = DefaultClusterNodes
	}
	c, err := StartCluster(ClusterOptions{Nodes: n})
	if err != nil {
		tb.Fatalf("cnats.RunCluster: %v", err)
	}
	tb.Cleanup(c.Shutdown)
	return c
}

// MustConnect connects to urls with Connect's defaults and closes the
// connection when the test ends. It fails the test if it cannot connect.
func MustConnect(tb TB, urls string) (*nats.Conn, jetstream.JetStream) {
	tb.Helper()
	nc, js, err := Connect(context.Background(), urls)
	if err != nil {
		tb.Fatalf("cnats.MustConnect: %v", err)
	}
	tb.Cleanup(nc.Close)
	return nc, js
}

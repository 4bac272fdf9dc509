package cnats

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestProxyModes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	p, err := StartProxy(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	echo := func() error {
		c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		_, err = io.ReadFull(c, buf)
		return err
	}
	t.Run("open", func(t *testing.T) {
		if err := echo(); err != nil {
			t.Fatalf("open proxy: %v", err)
		}
	})
	t.Run("drop", func(t *testing.T) {
		p.SetMode(ProxyDrop)
		if err := echo(); err == nil {
			t.Fatal("dropped proxy forwarded")
		}
	})
	t.Run("blackhole", func(t *testing.T) {
		p.SetMode(ProxyBlackhole)
		if err := echo(); err == nil {
			t.Fatal("blackholed proxy forwarded")
		}
	})
	t.Run("healed", func(t *testing.T) {
		p.SetMode(ProxyOpen)
		if err := echo(); err != nil {
			t.Fatalf("healed proxy: %v", err)
		}
	})
}

func TestProxiedClusterPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	pc, err := StartProxiedCluster(ClusterOptions{Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Shutdown()
	waitRoutes := func(k int, cond func(int) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond(pc.Routes(k)) {
			if time.Now().After(deadline) {
				t.Fatalf("node %d: %d routes", k, pc.Routes(k))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitRoutes(2, func(n int) bool { return n > 0 })
	pc.Partition(2, ProxyDrop)
	// Every proxied link of node 2 is cut at once. (Its route count usually
	// drops to 0 too, but an implicit route to its real port can survive:
	// see Routes.)
	deadline := time.Now().Add(5 * time.Second)
	for j := range 3 {
		for _, p := range []*Proxy{pc.Proxies[2][j], pc.Proxies[j][2]} {
			for p != nil && p.Conns() > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("proxy %s keeps %d connections after the drop", p.Addr(), p.Conns())
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	// The nodes gossip an unreachable route address, so no implicit route
	// bypasses the proxies: the partition isolates node 2 completely.
	waitRoutes(2, func(n int) bool { return n == 0 })
	pc.Heal(2)
	waitRoutes(2, func(n int) bool { return n > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := pc.waitReady(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// Also after a peer restarts (the case that used to leak: the restarted
	// node learned node 2's real address and routed around the proxies).
	pc.KillNode(0)
	if err := pc.RestartNode(0); err != nil {
		t.Fatal(err)
	}
	waitRoutes(0, func(n int) bool { return n >= 2 })
	pc.Partition(2, ProxyDrop)
	waitRoutes(2, func(n int) bool { return n == 0 })
	pc.Heal(2)
	waitRoutes(2, func(n int) bool { return n > 0 })
}

// TestCrashNodeLosesNoAcknowledgedWrite: the leader of an R3 stream is
// crashed (CrashNode: no handoff reaches its peers); the survivors elect a
// leader among themselves, every acknowledged publish is there, publishing
// goes on, and the crashed node rejoins and catches up after a restart.
func TestCrashNodeLosesNoAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	pc, err := StartProxiedCluster(ClusterOptions{Nodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, js, err := Connect(ctx, pc.ClientURLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const stream = "CRASH"
	// Each attempt bounded (RetryIdempotent): on a loaded machine a create
	// sent while the meta group still settles may get no answer at all
	// (seen in CI: one unanswered request waited out the whole 2 minutes).
	if err := RetryIdempotent(ctx, func(ctx context.Context) error {
		_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"crash.>"}, Replicas: 3})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	acked := 0
	publish := func(n int) {
		t.Helper()
		for range n {
			// Retried until acknowledged: an unacknowledged publish may or
			// may not be stored, an acknowledged one must be.
			for {
				pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := js.Publish(pctx, "crash.x", []byte("m"))
				pcancel()
				if err == nil {
					acked++
					break
				} else if ctx.Err() != nil {
					t.Fatalf("publish: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	publish(50)
	leader, err := pc.WaitStreamLeader(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	pc.CrashNode(leader)
	next, err := pc.WaitStreamLeader(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	if next == leader {
		t.Fatalf("node %d still leads after its crash", leader)
	}
	publish(50)
	info := func() uint64 {
		t.Helper()
		for {
			s, err := js.Stream(ctx, stream)
			if err == nil {
				return s.CachedInfo().State.Msgs
			}
			if ctx.Err() != nil {
				t.Fatalf("stream info: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if got := info(); got < uint64(acked) {
		t.Fatalf("%d messages stored after the crash, %d acknowledged", got, acked)
	}
	if err := pc.RestartNode(leader); err != nil {
		t.Fatal(err)
	}
	publish(10)
	if got := info(); got < uint64(acked) {
		t.Fatalf("%d messages stored after the restart, %d acknowledged", got, acked)
	}
}

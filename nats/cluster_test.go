package cnats_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// TestCluster runs one 3-node cluster for all cluster subtests, in order:
// forming a cluster and electing leaders takes seconds.
func TestCluster(t *testing.T) {
	start := time.Now()
	c := natstest.RunCluster(t, 3)
	t.Logf("cluster formed in %v", time.Since(start))
	nc, js := natstest.MustConnect(t, c.ClientURLs())
	ctx := testCtx(t)

	t.Run("nodes", func(t *testing.T) {
		if len(c.Servers) != 3 {
			t.Fatalf("%d servers", len(c.Servers))
		}
		if n := len(strings.Split(c.ClientURLs(), ",")); n != 3 {
			t.Fatalf("ClientURLs %q", c.ClientURLs())
		}
		names := map[string]bool{}
		for i, s := range c.Servers {
			ns := s.Inner()
			if !ns.JetStreamIsClustered() {
				t.Errorf("node %d not clustered", i)
			}
			if jc := ns.JetStreamConfig(); !jc.SyncAlways {
				t.Errorf("node %d: SyncAlways not set", i)
			}
			names[s.Name()] = true
		}
		if len(names) != 3 {
			t.Fatalf("names not distinct: %v", names)
		}
	})

	var kv jetstream.KeyValue
	t.Run("routing replicas", func(t *testing.T) {
		var err error
		kv, err = cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{Nodes: len(c.Servers)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{Nodes: len(c.Servers)}); err != nil {
			t.Fatalf("idempotent: %v", err)
		}
		st, err := js.Stream(ctx, cnats.RoutingStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Config.Replicas != 3 {
			t.Fatalf("Replicas = %d, want 3", info.Config.Replicas)
		}
		if info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
			t.Fatalf("cluster info %+v", info.Cluster)
		}
		i, err := c.WaitStreamLeader(ctx, cnats.RoutingStream)
		if err != nil {
			t.Fatal(err)
		}
		if c.Servers[i].Name() != info.Cluster.Leader {
			t.Fatalf("StreamLeader = %s, stream info says %s", c.Servers[i].Name(), info.Cluster.Leader)
		}
	})
	if kv == nil {
		t.Fatal("no routing bucket")
	}

	t.Run("mirror in cluster", func(t *testing.T) {
		if _, err := cnats.ProvisionMirror(ctx, js, "us-east", 1); err != nil {
			t.Fatal(err)
		}
		rev, err := kv.Put(ctx, "m", []byte("mirrored"))
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, func() error {
			data, seq, err := cnats.DirectGetLast(ctx, nc, cnats.MirrorStream("us-east"), cnats.RoutingSubject("m"))
			if err != nil {
				return err
			}
			if string(data) != "mirrored" || seq != rev {
				return fmt.Errorf("got %q seq %d", data, seq)
			}
			return nil
		})
	})

	t.Run("leader failover and rejoin", func(t *testing.T) {
		rev, err := kv.Create(ctx, "doc", []byte("v1"))
		if err != nil {
			t.Fatal(err)
		}
		old, err := c.WaitStreamLeader(ctx, cnats.RoutingStream)
		if err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		c.KillNode(old)
		if c.Servers[old].Running() {
			t.Fatal("killed node still running")
		}
		if strings.Contains(c.ClientURLs(), c.Servers[old].ClientURL()) {
			t.Fatalf("ClientURLs still lists the killed node: %s", c.ClientURLs())
		}

		nu, err := c.WaitStreamLeader(ctx, cnats.RoutingStream)
		if err != nil {
			t.Fatal(err)
		}
		if nu == old {
			t.Fatalf("leader still node %d", old)
		}
		t.Logf("new leader n%d after %v", nu, time.Since(killed))

		// CAS writes succeed again (the client may have to reconnect first).
		eventually(t, 20*time.Second, func() error {
			r, err := kv.Update(ctx, "doc", []byte("v2"), rev)
			if errors.Is(err, jetstream.ErrKeyExists) {
				// An earlier attempt timed out but was applied: read it back.
				e, gerr := kv.Get(ctx, "doc")
				if gerr == nil && string(e.Value()) == "v2" {
					rev = e.Revision()
					return nil
				}
			}
			if err != nil {
				return err
			}
			rev = r
			return nil
		})
		t.Logf("writes resumed %v after the kill", time.Since(killed))
		data, seq, err := cnats.LeaderGetLast(ctx, nc, cnats.RoutingStream, cnats.RoutingSubject("doc"))
		if err != nil || string(data) != "v2" || seq != rev {
			t.Fatalf("leader get after failover: %q seq %d err %v, want v2 seq %d", data, seq, err, rev)
		}

		restarted := time.Now()
		if err := c.RestartNode(old); err != nil {
			t.Fatalf("RestartNode: %v", err)
		}
		t.Logf("n%d rejoined the meta group in %v", old, time.Since(restarted))
		if !c.Servers[old].Running() {
			t.Fatal("restarted node not running")
		}
		// The restarted node catches up on ROUTING as a follower.
		eventually(t, 20*time.Second, func() error {
			if !c.Servers[old].Inner().JetStreamIsStreamCurrent(cnats.AccountName, cnats.RoutingStream) {
				return fmt.Errorf("n%d not current on %s", old, cnats.RoutingStream)
			}
			st, err := js.Stream(ctx, cnats.RoutingStream)
			if err != nil {
				return err
			}
			ci := st.CachedInfo().Cluster
			if ci == nil || len(ci.Replicas) != 2 {
				return fmt.Errorf("cluster info %+v", ci)
			}
			for _, p := range ci.Replicas {
				if p.Offline || !p.Current {
					return fmt.Errorf("replica %s offline=%v current=%v", p.Name, p.Offline, p.Current)
				}
			}
			return nil
		})
		t.Logf("n%d current on %s %v after restart", old, cnats.RoutingStream, time.Since(restarted))
		if n := len(strings.Split(c.ClientURLs(), ",")); n != 3 {
			t.Fatalf("ClientURLs after restart %q", c.ClientURLs())
		}
		// A client that talks only to the restarted node reads the latest
		// revision through the leader.
		nc2, _ := natstest.MustConnect(t, c.Servers[old].ClientURL())
		if data, seq, err := cnats.LeaderGetLast(ctx, nc2, cnats.RoutingStream, cnats.RoutingSubject("doc")); err != nil || string(data) != "v2" || seq != rev {
			t.Fatalf("leader get via restarted node: %q seq %d err %v", data, seq, err)
		}
	})

	t.Run("stream leader errors", func(t *testing.T) {
		if _, err := c.StreamLeader(ctx, "NOPE"); !errors.Is(err, cnats.ErrNoLeader) {
			t.Fatalf("StreamLeader(NOPE) = %v", err)
		}
		if err := c.RestartNode(7); !errors.Is(err, cnats.ErrInvalidOptions) {
			t.Fatalf("RestartNode(7) = %v", err)
		}
	})
}

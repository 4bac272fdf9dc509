package cnats

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestSupercluster: two regions joined by WAN-shaped gateways; ROUTING is
// placed in the home region, its mirror and a PAGES-like stream in the
// other; a write made through the other region's own cluster is readable
// from its mirror; a partitioned region still serves its local streams and
// catches up after the heal.
func TestSupercluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	const home, away = "us-east", "eu-west"
	sc, err := StartSupercluster(SuperclusterOptions{
		Regions: []string{home, away},
		WAN:     WAN{RTT: 20 * time.Millisecond, Mbps: 200},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Each region's clients connect to their own cluster only.
	ncHome, jsHome, err := Connect(ctx, sc.Region(home).ClientURLs())
	if err != nil {
		t.Fatal(err)
	}
	defer ncHome.Close()
	ncAway, jsAway, err := Connect(ctx, sc.Region(away).ClientURLs())
	if err != nil {
		t.Fatal(err)
	}
	defer ncAway.Close()

	clusterOf := func(t *testing.T, js jetstream.JetStream, stream string) string {
		t.Helper()
		st, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatalf("stream %s: %v", stream, err)
		}
		if st.CachedInfo().Cluster == nil {
			t.Fatalf("stream %s: no cluster info", stream)
		}
		return st.CachedInfo().Cluster.Name
	}

	t.Run("placement", func(t *testing.T) {
		// Provisioned from the away region: placement, not the client's
		// cluster, decides where ROUTING lives.
		if _, err := ProvisionRouting(ctx, jsAway, RoutingConfig{Cluster: home}); err != nil {
			t.Fatal(err)
		}
		if _, err := ProvisionMirror(ctx, jsHome, away, 1, MirrorInCluster(away)); err != nil {
			t.Fatal(err)
		}
		if _, err := jsHome.CreateStream(ctx, jetstream.StreamConfig{
			Name: "PAGES", Subjects: []string{"pages.>"}, Placement: InRegion(away),
		}); err != nil {
			t.Fatal(err)
		}
		for stream, want := range map[string]string{RoutingStream: home, MirrorStream(away): away, "PAGES": away} {
			if got := clusterOf(t, jsHome, stream); got != want {
				t.Errorf("stream %s in %s, want %s", stream, got, want)
			}
		}
	})

	t.Run("mirror", func(t *testing.T) {
		kv, err := jsAway.KeyValue(ctx, RoutingBucket)
		if err != nil {
			t.Fatal(err)
		}
		rev, err := kv.Create(ctx, "doc", []byte("v1"))
		if err != nil {
			t.Fatal(err)
		}
		err = poll(ctx, 20*time.Millisecond, func() bool {
			_, seq, err := DirectGetLast(ctx, ncAway, MirrorStream(away), RoutingSubject("doc"))
			return err == nil && seq >= rev
		}, func() error { return errors.New("mirror never caught up") })
		if err != nil {
			t.Fatal(err)
		}
	})

	t.Run("partition", func(t *testing.T) {
		sc.Partition(away, ProxyDrop)
		// The away region still takes writes to its own PAGES stream.
		if _, err := jsAway.Publish(ctx, "pages.1", []byte("p")); err != nil {
			t.Fatalf("publish in a partitioned region: %v", err)
		}
		sc.Heal(away)
		if err := sc.WaitGateways(ctx); err != nil {
			t.Fatal(err)
		}
		kv, err := jsHome.KeyValue(ctx, RoutingBucket)
		if err != nil {
			t.Fatal(err)
		}
		rev, err := kv.Put(ctx, "doc", []byte("v2"))
		if err != nil {
			t.Fatal(err)
		}
		err = poll(ctx, 20*time.Millisecond, func() bool {
			_, seq, err := DirectGetLast(ctx, ncAway, MirrorStream(away), RoutingSubject("doc"))
			return err == nil && seq >= rev
		}, func() error { return errors.New("mirror did not catch up after the heal") })
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestSuperclusterR3: with three nodes per region, ROUTING is R3 and all
// three replicas are in the home region.
func TestSuperclusterR3(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	const home, away = "us-east", "eu-west"
	sc, err := StartSupercluster(SuperclusterOptions{Regions: []string{home, away}, Nodes: 3, WAN: WAN{RTT: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, js, err := Connect(ctx, sc.Region(away).ClientURLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := ProvisionRouting(ctx, js, RoutingConfig{Nodes: 3, Cluster: home}); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, RoutingStream)
	if err != nil {
		t.Fatal(err)
	}
	ci := st.CachedInfo().Cluster
	if ci == nil || ci.Name != home || len(ci.Replicas) != 2 {
		t.Fatalf("ROUTING cluster info %+v, want %s with a leader and 2 replicas", ci, home)
	}
	homeNodes := map[string]bool{}
	for _, s := range sc.Region(home).Servers {
		homeNodes[s.Name()] = true
	}
	if !homeNodes[ci.Leader] {
		t.Errorf("leader %s outside %s", ci.Leader, home)
	}
	for _, r := range ci.Replicas {
		if !homeNodes[r.Name] {
			t.Errorf("replica %s outside %s", r.Name, home)
		}
	}
}

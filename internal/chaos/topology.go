package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/cutover/cutover/internal/system"
	cnats "github.com/cutover/cutover/nats"
)

// topology is the NATS deployment a run breaks: one cluster of three
// nodes behind TCP proxies (the default), or a supercluster of one cluster
// per region whose gateways pass through WAN-shaped proxies
// (Options.Supercluster). The nemesis reaches it only through these
// methods, so every fault has the same shape on both.
type topology interface {
	// configure points cfg at the deployment.
	configure(cfg *system.Config)
	// crashLeader crashes the node leading stream and returns its name and
	// a function that restarts it.
	crashLeader(ctx context.Context, stream string) (node string, restart func() error, err error)
	// partition cuts a seeded part of the deployment off with mode (never
	// the node the run's own connection uses, in a cluster) and returns
	// its name, a wait that holds the cut until end and reports whether
	// the cut leaked, and the heal.
	partition(rng *rand.Rand, mode cnats.ProxyMode, connected string) (what string, hold func(end time.Time) (leaked bool), heal func(), ok bool)
	// healAll reopens every link and restarts every stopped node.
	healAll(ctx context.Context) error
	shutdown()
}

// clusterTopology is three nodes behind TCP proxies.
type clusterTopology struct{ pc *cnats.ProxiedCluster }

func startCluster(base string) (*clusterTopology, error) {
	pc, err := cnats.StartProxiedCluster(cnats.ClusterOptions{Nodes: 3, BaseDir: filepath.Join(base, "nats"), Name: "chaos"})
	if err != nil {
		return nil, err
	}
	return &clusterTopology{pc}, nil
}

func (t *clusterTopology) configure(cfg *system.Config) {
	cfg.NATSURL, cfg.Cluster = t.pc.ClientURLs(), 3
}

// crashLeader: ProxiedCluster.CrashNode, the in-process equivalent of
// SIGKILL: the node's links are cut before it stops, so no leadership
// handoff reaches its peers and they elect a new leader after the old one
// went silent (a graceful shutdown would hand off first). The process-level
// SIGKILL is TestCrashDurability and the cluster test.
func (t *clusterTopology) crashLeader(ctx context.Context, stream string) (string, func() error, error) {
	i, err := t.pc.StreamLeader(ctx, stream)
	if err != nil {
		return "", nil, err
	}
	t.pc.CrashNode(i)
	return fmt.Sprintf("node %d", i), func() error { return t.pc.RestartNode(i) }, nil
}

// partition cuts one node that the run's own connection is not attached to
// off from its peers (its client port stays up). A dropped node must lose
// every route, or the partition leaked.
func (t *clusterTopology) partition(rng *rand.Rand, mode cnats.ProxyMode, connected string) (string, func(time.Time) bool, func(), bool) {
	var cands []int
	for i, s := range t.pc.Servers {
		if s.Running() && s.ClientURL() != connected {
			cands = append(cands, i)
		}
	}
	if len(cands) == 0 {
		return "", nil, nil, false
	}
	k := cands[rng.IntN(len(cands))]
	t.pc.Partition(k, mode)
	hold := func(end time.Time) bool {
		leaked := false
		if mode == cnats.ProxyDrop {
			for t.pc.Routes(k) > 0 && time.Now().Before(end) {
				time.Sleep(20 * time.Millisecond)
			}
			leaked = t.pc.Routes(k) > 0
		}
		time.Sleep(time.Until(end))
		return leaked
	}
	heal := func() {
		t.pc.Heal(k)
		deadline := time.Now().Add(15 * time.Second)
		for t.pc.Routes(k) == 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	return fmt.Sprintf("node %d", k), hold, heal, true
}

func (t *clusterTopology) healAll(ctx context.Context) error {
	for i, s := range t.pc.Servers {
		t.pc.Heal(i)
		if !s.Running() {
			if err := t.pc.RestartNode(i); err != nil {
				return err
			}
		}
	}
	_, err := t.pc.WaitStreamLeader(ctx, cnats.RoutingStream)
	return err
}

func (t *clusterTopology) shutdown() { t.pc.Shutdown() }

// superTopology is one cluster per region joined by WAN-shaped gateways:
// ROUTING and the migration streams in the first region,
// PAGES in the second, a ROUTING mirror in every other; each region's
// services on their own cluster.
type superTopology struct {
	sc    *cnats.Supercluster
	nodes int
}

func startSupercluster(base string, regions []string, nodes int, wan cnats.WAN) (*superTopology, error) {
	sc, err := cnats.StartSupercluster(cnats.SuperclusterOptions{Regions: regions, Nodes: nodes, BaseDir: filepath.Join(base, "nats"), WAN: wan})
	if err != nil {
		return nil, err
	}
	return &superTopology{sc: sc, nodes: nodes}, nil
}

func (t *superTopology) configure(cfg *system.Config) {
	cfg.Supercluster, cfg.Cluster = true, t.nodes
	cfg.NATSURL = t.sc.Regions[0].ClientURLs()
	cfg.RegionURLs = map[string]string{}
	for _, r := range t.sc.Regions {
		cfg.RegionURLs[r.Name] = r.ClientURLs()
	}
}

// crashLeader stops the node of the home region that leads stream. A
// region of one node is then down whole (a region's JetStream outage);
// with three, its peers elect a new leader.
func (t *superTopology) crashLeader(ctx context.Context, stream string) (string, func() error, error) {
	home := t.sc.Regions[0]
	i, err := home.StreamLeader(ctx, stream)
	if err != nil {
		return "", nil, err
	}
	home.KillNode(i)
	return fmt.Sprintf("%s node %d", home.Name, i), func() error { return home.RestartNode(i) }, nil
}

// partition cuts a seeded region off from every other one through its
// gateway proxies (its own routes and client ports stay up).
func (t *superTopology) partition(rng *rand.Rand, mode cnats.ProxyMode, _ string) (string, func(time.Time) bool, func(), bool) {
	r := t.sc.Regions[rng.IntN(len(t.sc.Regions))]
	t.sc.Partition(r.Name, mode)
	hold := func(end time.Time) bool { time.Sleep(time.Until(end)); return false }
	heal := func() {
		t.sc.Heal(r.Name)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = t.sc.WaitGateways(ctx)
	}
	return "region " + r.Name, hold, heal, true
}

func (t *superTopology) healAll(ctx context.Context) error {
	for _, r := range t.sc.Regions {
		t.sc.Heal(r.Name)
		for i, s := range r.Servers {
			if !s.Running() {
				if err := r.RestartNode(i); err != nil {
					return err
				}
			}
		}
	}
	if err := t.sc.WaitGateways(ctx); err != nil {
		return err
	}
	_, err := t.sc.Regions[0].WaitStreamLeader(ctx, cnats.RoutingStream)
	return err
}

func (t *superTopology) shutdown() { t.sc.Shutdown() }

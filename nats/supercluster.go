package cnats

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/nats/natsclient"
)

// DefaultRegions are the regions of a supercluster whose options name none.
var DefaultRegions = []string{"us-east", "eu-west"}

// unreachable is an address nobody listens on: nodes gossip it as their
// route and gateway address so that no peer opens a link around a proxy.
const unreachable = "127.0.0.1:1"

// SuperclusterOptions configures StartSupercluster. Zero values mean the
// documented defaults.
type SuperclusterOptions struct {
	// Regions name the clusters, one per region; default DefaultRegions.
	// Each must pass ValidateRegion.
	Regions []string
	// Nodes is the number of servers per region (1 or 3 in practice);
	// default 1.
	Nodes int
	// BaseDir holds one directory per region ("<BaseDir>/<region>/n0",
	// ...). "" creates temporary directories that Shutdown removes.
	BaseDir string
	// SyncAlways is passed to every node; nil means true (see Options).
	SyncAlways *bool
	// WAN shapes every gateway link from the start; SetWAN changes it.
	WAN WAN
	// Logging prints every node's log to stderr.
	Logging bool
}

// Supercluster is one JetStream cluster per region on loopback, joined by
// gateways (DESIGN.md "Regions for real"). Every gateway link passes
// through a Proxy, which shapes it like a WAN and can cut a region off;
// routes inside a region are direct. The JetStream meta group spans every
// node, so a partition that leaves no majority stops stream and consumer
// creation (not reads and writes of existing streams whose replicas are all
// in one region). Its methods are safe for concurrent use.
type Supercluster struct {
	// Regions are the clusters, in the order of SuperclusterOptions.Regions.
	Regions []*Region
	// all holds every node of every region, for the meta-group wait.
	all *Cluster
	// links[i][j] are the proxies that carry the gateway connections region
	// i solicits to region j, one per node of j (nil on the diagonal).
	links [][][]*Proxy
}

// Region is one region's cluster.
type Region struct {
	// Name is the region, also the cluster and gateway name, which
	// JetStream placement (Placement.Cluster) takes.
	Name string
	*Cluster
}

// StartSupercluster starts every region's nodes, routes within each region
// and gateways (through proxies) between every pair, and returns once the
// JetStream meta group spans every node and every node has a gateway to
// every other region. It returns an error wrapping ErrInvalidOptions or
// ErrStartFailed; on error nothing is left running.
func StartSupercluster(opts SuperclusterOptions) (*Supercluster, error) {
	return retryBind(func() (*Supercluster, error) { return startSupercluster(opts) })
}

// startSupercluster is one attempt of StartSupercluster.
func startSupercluster(opts SuperclusterOptions) (*Supercluster, error) {
	regions := opts.Regions
	if len(regions) == 0 {
		regions = DefaultRegions
	}
	if len(regions) < 2 {
		return nil, fmt.Errorf("%w: a supercluster needs >= 2 regions, got %d", ErrInvalidOptions, len(regions))
	}
	seen := map[string]bool{}
	for _, r := range regions {
		if err := ValidateRegion(r); err != nil {
			return nil, err
		}
		if seen[r] {
			return nil, fmt.Errorf("%w: region %q twice", ErrInvalidOptions, r)
		}
		seen[r] = true
	}
	nodes := opts.Nodes
	if nodes == 0 {
		nodes = 1
	}
	if nodes < 1 {
		return nil, fmt.Errorf("%w: %d nodes per region", ErrInvalidOptions, nodes)
	}

	sc := &Supercluster{all: &Cluster{}, links: make([][][]*Proxy, len(regions))}
	fail := func(err error) (*Supercluster, error) {
		sc.Shutdown()
		return nil, err
	}
	// Gateway ports first: every link's proxy needs its target.
	gwPorts := make([][]int, len(regions))
	for i := range regions {
		ports, err := freePorts(DefaultHost, nodes)
		if err != nil {
			return fail(err)
		}
		gwPorts[i] = ports
	}
	for i := range regions {
		sc.links[i] = make([][]*Proxy, len(regions))
		for j := range regions {
			if i == j {
				continue
			}
			for _, port := range gwPorts[j] {
				p, err := StartProxy(net.JoinHostPort(DefaultHost, strconv.Itoa(port)))
				if err != nil {
					return fail(err)
				}
				p.SetWAN(opts.WAN)
				sc.links[i][j] = append(sc.links[i][j], p)
			}
		}
	}
	for i, name := range regions {
		var remotes []Gateway
		for j, other := range regions {
			if i == j {
				continue
			}
			g := Gateway{Name: other}
			for _, p := range sc.links[i][j] {
				g.URLs = append(g.URLs, "nats://"+p.Addr())
			}
			remotes = append(remotes, g)
		}
		gateways := func(k int, o *Options) error {
			o.GatewayPort = gwPorts[i][k]
			o.Gateways = remotes
			o.GatewayAdvertise = unreachable
			return nil
		}
		copts := ClusterOptions{Nodes: nodes, Name: name, SyncAlways: opts.SyncAlways, Logging: opts.Logging}
		if opts.BaseDir != "" {
			copts.BaseDir = filepath.Join(opts.BaseDir, name)
		}
		c, err := newCluster(copts, "cutover-sc-"+name+"-", regionRoutes, gateways)
		if err != nil {
			return fail(err)
		}
		sc.Regions = append(sc.Regions, &Region{Name: name, Cluster: c})
		sc.all.Servers = append(sc.all.Servers, c.Servers...)
	}
	if err := sc.all.startAll(); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultClusterTimeout)
	defer cancel()
	if err := sc.WaitGateways(ctx); err != nil {
		return fail(err)
	}
	return sc, nil
}

// regionRoutes routes a region's nodes straight to each other. A one-node
// region routes to itself: clustered JetStream (which a supercluster needs)
// refuses to start without a configured route, and nats-server drops a
// route that reaches its own server.
func regionRoutes(i int, ports []int) ([]string, string, error) {
	if len(ports) == 1 {
		return []string{fmt.Sprintf("nats-route://%s:%d", DefaultHost, ports[0])}, "", nil
	}
	return directRoutes(i, ports)
}

// WaitGateways polls until every running node has an outbound gateway to
// every other region, and returns an error wrapping ErrStartFailed and the
// context error when ctx ends first.
func (sc *Supercluster) WaitGateways(ctx context.Context) error {
	want := len(sc.Regions) - 1
	return poll(ctx, 20*time.Millisecond, func() bool {
		for _, s := range sc.all.Servers {
			if s.Running() && s.Inner().NumOutboundGateways() < want {
				return false
			}
		}
		return true
	}, func() error { return fmt.Errorf("%w: gateways not connected", ErrStartFailed) })
}

// Region returns the region named name, or nil.
func (sc *Supercluster) Region(name string) *Region {
	for _, r := range sc.Regions {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// SetWAN shapes every gateway link (both directions) from now on.
func (sc *Supercluster) SetWAN(w WAN) {
	sc.eachLink(func(i, j int, p *Proxy) { p.SetWAN(w) })
}

// Partition cuts region name off from every other region (both directions)
// with mode (ProxyDrop or ProxyBlackhole); its own routes and client ports
// stay up. An unknown name is ignored.
func (sc *Supercluster) Partition(name string, mode ProxyMode) {
	k := sc.index(name)
	sc.eachLink(func(i, j int, p *Proxy) {
		if k >= 0 && (i == k || j == k) {
			p.SetMode(mode)
		}
	})
}

// Heal reopens every gateway link of region name.
func (sc *Supercluster) Heal(name string) { sc.Partition(name, ProxyOpen) }

// Shutdown stops every node, then every proxy, and removes temporary
// directories. It is idempotent.
func (sc *Supercluster) Shutdown() {
	for _, r := range sc.Regions {
		r.Shutdown()
	}
	sc.eachLink(func(_, _ int, p *Proxy) { _ = p.Close() })
}

func (sc *Supercluster) index(name string) int {
	for i, r := range sc.Regions {
		if r.Name == name {
			return i
		}
	}
	return -1
}

func (sc *Supercluster) eachLink(f func(i, j int, p *Proxy)) {
	for i, row := range sc.links {
		for j, ps := range row {
			for _, p := range ps {
				if p != nil {
					f(i, j, p)
				}
			}
		}
	}
}

// InRegion is the JetStream placement of a stream in region's cluster
// (natsclient.InRegion).
func InRegion(region string) *jetstream.Placement { return natsclient.InRegion(region) }

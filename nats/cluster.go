package cnats

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cutover/cutover/nats/natsclient"
)

// Cluster defaults.
const (
	// DefaultClusterNodes is the node count of a cluster (DESIGN.md "Scaling
	// out": 3 nodes, R3).
	DefaultClusterNodes = 3
	// DefaultClusterName is the cluster name.
	DefaultClusterName = "cutover"
	// DefaultClusterTimeout bounds StartCluster's and RestartNode's wait for
	// the JetStream meta group, and WaitStreamLeader when its context has no
	// deadline.
	DefaultClusterTimeout = 30 * time.Second
)

// accountName is the account all embedded streams live in (no auth
// configured, so clients land in the global account).
const accountName = server.DEFAULT_GLOBAL_ACCOUNT

// ClusterOptions configures StartCluster. Zero values mean the documented
// defaults.
type ClusterOptions struct {
	// Nodes is the number of servers; default DefaultClusterNodes.
	Nodes int
	// Name is the cluster name, also the prefix of node names
	// ("<name>-n0", ...); default DefaultClusterName.
	Name string
	// BaseDir holds one store directory per node ("<BaseDir>/n0", ...). ""
	// creates a temporary directory that Cluster.Shutdown removes.
	BaseDir string
	// SyncAlways is passed to every node; nil means true (see Options).
	SyncAlways *bool
	// Logging prints every node's log to stderr.
	Logging bool
}

// Cluster is an N-node JetStream cluster on loopback, all nodes routed to
// each other. Servers is indexed by node; a killed node keeps its slot. The
// methods are safe for concurrent use, but killing and restarting the same
// node from two goroutines at once is the caller's race to avoid.
type Cluster struct {
	// Servers are the nodes, in start order.
	Servers []*Server

	baseDir  string
	tempBase bool
}

// StartCluster starts opts.Nodes servers with routes to each other on free
// loopback ports and returns once the JetStream meta leader is elected, it
// sees every node as a peer, and every node is current with it. It returns an
// error wrapping ErrInvalidOptions or ErrStartFailed; on error nothing is
// left running.
func StartCluster(opts ClusterOptions) (*Cluster, error) {
	return retryBind(func() (*Cluster, error) { return startCluster(opts, "cutover-cluster-", directRoutes) })
}

// routeFunc gives node i of a cluster, knowing every node's route port, the
// route URLs it solicits and the route address it gossips to its peers (""
// for its real one).
type routeFunc func(i int, ports []int) (routes []string, advertise string, err error)

// directRoutes routes node i straight to every other node.
func directRoutes(i int, ports []int) ([]string, string, error) {
	var routes []string
	for j, p := range ports {
		if j != i {
			routes = append(routes, fmt.Sprintf("nats-route://%s:%d", DefaultHost, p))
		}
	}
	return routes, "", nil
}

// startCluster is StartCluster with each node's routes from routes; a
// temporary base directory is named after dirPrefix. On error it shuts down
// every node it started; what routes started is the caller's to stop.
func startCluster(opts ClusterOptions, dirPrefix string, routes routeFunc) (*Cluster, error) {
	c, err := newCluster(opts, dirPrefix, routes, nil)
	if err != nil {
		return nil, err
	}
	if err := c.startAll(); err != nil {
		c.Shutdown()
		return nil, err
	}
	return c, nil
}

// nodeFunc adds to node i's options what a caller layers on a cluster (the
// supercluster's gateways).
type nodeFunc func(i int, o *Options) error

// newCluster resolves opts and creates the nodes without starting them;
// extra, when set, adds to each node's options. On error nothing is left
// behind but what routes or extra started.
func newCluster(opts ClusterOptions, dirPrefix string, routes routeFunc, extra nodeFunc) (*Cluster, error) {
	n := opts.Nodes
	if n == 0 {
		n = DefaultClusterNodes
	}
	if n < 1 {
		return nil, fmt.Errorf("%w: %d nodes", ErrInvalidOptions, n)
	}
	name := opts.Name
	if name == "" {
		name = DefaultClusterName
	}
	if !natsclient.ValidToken(name, false) {
		return nil, fmt.Errorf("%w: cluster name %q", ErrInvalidOptions, name)
	}

	c := &Cluster{baseDir: opts.BaseDir}
	if c.baseDir == "" {
		dir, err := os.MkdirTemp("", dirPrefix)
		if err != nil {
			return nil, fmt.Errorf("cnats: create cluster dir: %w", err)
		}
		c.baseDir, c.tempBase = dir, true
	}
	fail := func(err error) (*Cluster, error) {
		c.Shutdown()
		return nil, err
	}

	ports, err := freePorts(DefaultHost, n)
	if err != nil {
		return fail(err)
	}
	for i := range n {
		r, advertise, err := routes(i, ports)
		if err != nil {
			return fail(err)
		}
		o := Options{
			Name:             fmt.Sprintf("%s-n%d", name, i),
			StoreDir:         filepath.Join(c.baseDir, fmt.Sprintf("n%d", i)),
			SyncAlways:       opts.SyncAlways,
			Logging:          opts.Logging,
			ClusterName:      name,
			ClusterPort:      ports[i],
			Routes:           r,
			ClusterAdvertise: advertise,
		}
		if extra != nil {
			if err := extra(i, &o); err != nil {
				return fail(err)
			}
		}
		s, err := newServer(o)
		if err != nil {
			return fail(err)
		}
		c.Servers = append(c.Servers, s)
	}
	return c, nil
}

// startAll starts every node in parallel (each one's JetStream waits for
// its peers) and waits until the meta group is ready.
func (c *Cluster) startAll() error {
	errs := make([]error, len(c.Servers))
	var wg sync.WaitGroup
	for i, s := range c.Servers {
		wg.Go(func() {
			s.life.Lock()
			defer s.life.Unlock()
			errs[i] = s.startLocked()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultClusterTimeout)
	defer cancel()
	return c.waitReady(ctx, -1)
}

// waitReady polls until a running node is meta leader, sees every running
// node as an online peer, and every running node (or only node must, if
// must >= 0) is current with the meta group.
func (c *Cluster) waitReady(ctx context.Context, must int) error {
	check := func() bool {
		running := 0
		var leader *server.Server
		for i, s := range c.Servers {
			if !s.Running() {
				continue
			}
			running++
			ns := s.Inner()
			if ns.JetStreamIsLeader() {
				leader = ns
			}
			if (must < 0 || must == i) && !ns.JetStreamIsCurrent() {
				return false
			}
		}
		return leader != nil && len(leader.JetStreamClusterPeers()) >= running
	}
	return poll(ctx, 20*time.Millisecond, check, func() error {
		return fmt.Errorf("%w: JetStream meta group not ready", ErrStartFailed)
	})
}

// poll calls ok every interval until it returns true or ctx ends; then it
// returns timeout() joined with the context error.
func poll(ctx context.Context, interval time.Duration, ok func() bool, timeout func() error) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if ok() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%w)", timeout(), ctx.Err())
		case <-t.C:
		}
	}
}

// ClientURLs returns the comma-joined client URLs of the running nodes, which
// nats.Connect and Connect accept as a server list.
func (c *Cluster) ClientURLs() string {
	var urls []string
	for _, s := range c.Servers {
		if s.Running() {
			urls = append(urls, s.ClientURL())
		}
	}
	return strings.Join(urls, ",")
}

// StreamLeader returns the index of the running node that leads stream (in
// the global account), as seen by that node's own Raft state. It returns
// ErrNoLeader when no running node leads it at this moment, for example
// during an election; WaitStreamLeader polls instead.
func (c *Cluster) StreamLeader(ctx context.Context, stream string) (int, error) {
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	for i, s := range c.Servers {
		if s.Running() && s.Inner().JetStreamIsStreamLeader(accountName, stream) {
			return i, nil
		}
	}
	return -1, fmt.Errorf("%w: %s", ErrNoLeader, stream)
}

// WaitStreamLeader polls until a running node leads stream and returns its
// index. It waits DefaultClusterTimeout when ctx has no deadline and returns
// an error wrapping ErrNoLeader and the context error when time runs out.
func (c *Cluster) WaitStreamLeader(ctx context.Context, stream string) (int, error) {
	ctx, cancel := withDefaultTimeout(ctx, DefaultClusterTimeout)
	defer cancel()
	leader := -1
	err := poll(ctx, 20*time.Millisecond, func() bool {
		i, err := c.StreamLeader(ctx, stream)
		leader = i
		return err == nil
	}, func() error { return fmt.Errorf("%w: %s", ErrNoLeader, stream) })
	if err != nil {
		return -1, err
	}
	return leader, nil
}

// KillNode shuts node i down, keeping its store. nats-server's shutdown is
// graceful: the node first hands off the Raft groups it leads. Out-of-range
// indexes are ignored.
func (c *Cluster) KillNode(i int) {
	if i < 0 || i >= len(c.Servers) {
		return
	}
	c.Servers[i].Stop()
}

// RestartNode restarts node i on its ports and store and waits (up to
// DefaultClusterTimeout) until it has rejoined: a meta leader exists, sees it
// as a peer, and node i is current with the meta group. Its streams may still
// be catching up when it returns. It returns ErrInvalidOptions for a bad
// index, or the start and wait errors.
func (c *Cluster) RestartNode(i int) error {
	if i < 0 || i >= len(c.Servers) {
		return fmt.Errorf("%w: node %d of %d", ErrInvalidOptions, i, len(c.Servers))
	}
	if err := c.Servers[i].Restart(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultClusterTimeout)
	defer cancel()
	return c.waitReady(ctx, i)
}

// Shutdown shuts every node down (in parallel) and removes the base
// directory if it was temporary. It is idempotent.
func (c *Cluster) Shutdown() {
	var wg sync.WaitGroup
	for _, s := range c.Servers {
		wg.Go(s.Shutdown)
	}
	wg.Wait()
	if c.tempBase {
		_ = os.RemoveAll(c.baseDir)
	}
}

package cnats

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// ProxyMode is what a Proxy does with traffic.
type ProxyMode uint8

const (
	// ProxyOpen forwards bytes both ways.
	ProxyOpen ProxyMode = iota
	// ProxyDrop closes every connection and refuses new ones (accepted,
	// then closed at once): the peer sees a reset link.
	ProxyDrop
	// ProxyBlackhole keeps connections open and new ones accepted but
	// forwards nothing: the peer sees a silent link until its own timeouts
	// fire.
	ProxyBlackhole
)

// Proxy is a loopback TCP proxy in front of one address, used to partition
// a cluster node from its peers (chaos tests) and to shape a gateway link
// between regions like a WAN (delay and bandwidth, SetWAN). Its methods are
// safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	done   chan struct{}
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		mode  ProxyMode
		wan   WAN
		conns map[net.Conn]struct{} // both sides of every open pair
	}
}

// StartProxy listens on a free loopback port and forwards to target. It
// returns an error wrapping ErrStartFailed when it cannot listen.
func StartProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(DefaultHost, "0"))
	if err != nil {
		return nil, fmt.Errorf("%w: proxy listen: %w", ErrStartFailed, err)
	}
	p := &Proxy{target: target, ln: ln, done: make(chan struct{})}
	p.mu.conns = map[net.Conn]struct{}{}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listen address ("127.0.0.1:port").
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Mode returns the current mode.
func (p *Proxy) Mode() ProxyMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.mode
}

// SetWAN shapes every byte forwarded from now on, in each direction: it
// reaches the other side w.RTT/2 after it was read, and no faster than
// w.Mbps allows. The zero WAN forwards as fast as loopback does.
func (p *Proxy) SetWAN(w WAN) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.wan = w
}

// WAN returns the current shape.
func (p *Proxy) WAN() WAN {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.wan
}

func (p *Proxy) state() (ProxyMode, WAN) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.mode, p.mu.wan
}

// SetMode switches the proxy. ProxyDrop closes every open connection;
// ProxyBlackhole stalls them; ProxyOpen forwards again (new connections
// only: connections stalled by a blackhole are closed on reopening, as a
// healed network would reset them after their timeouts).
func (p *Proxy) SetMode(m ProxyMode) {
	p.mu.Lock()
	prev := p.mu.mode
	p.mu.mode = m
	var toClose []net.Conn
	if m == ProxyDrop || (m == ProxyOpen && prev == ProxyBlackhole) {
		for c := range p.mu.conns {
			toClose = append(toClose, c)
		}
	}
	p.mu.Unlock()
	for _, c := range toClose {
		_ = c.Close()
	}
}

// Conns returns how many connections (counting both sides of each pair)
// the proxy holds open.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.mu.conns)
}

// Close stops the proxy and closes every connection. It is idempotent.
func (p *Proxy) Close() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	close(p.done)
	err := p.ln.Close()
	p.SetMode(ProxyDrop)
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.Mode() == ProxyDrop {
			_ = c.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.mu.conns[c] = struct{}{}
	} else {
		delete(p.mu.conns, c)
	}
}

func (p *Proxy) serve(in net.Conn) {
	defer p.wg.Done()
	defer in.Close()
	p.track(in, true)
	defer p.track(in, false)
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer out.Close()
	p.track(out, true)
	defer p.track(out, false)
	if p.Mode() == ProxyDrop {
		return // dropped while dialing
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(out, in) }()
	go func() { defer wg.Done(); p.pipe(in, out) }()
	wg.Wait()
}

// chunk is bytes read from one side, to be written to the other at due.
type chunk struct {
	b   []byte
	due time.Time
}

// shapeQueue bounds how many chunks a shaped direction holds in flight; a
// full queue stops the reader, which is TCP's own back-pressure.
const shapeQueue = 256

// pipe copies src to dst until either ends, then closes both. A reader
// stamps each chunk with the time it may arrive (bandwidth, then one-way
// delay); a writer delivers the chunks in order at those times, so a shaped
// link keeps many bytes in flight like a real long fat pipe.
func (p *Proxy) pipe(dst, src net.Conn) {
	q := make(chan chunk, shapeQueue)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // writer
		defer wg.Done()
		defer close(stop)
		t := time.NewTimer(0)
		defer t.Stop()
		for c := range q {
			if d := time.Until(c.due); d > 0 {
				t.Reset(d)
				<-t.C
			}
			switch p.Mode() {
			case ProxyDrop:
				return // a pair that raced the drop
			case ProxyBlackhole:
				continue
			}
			if _, err := dst.Write(c.b); err != nil {
				return
			}
		}
	}()
	var free time.Time // when the link has sent everything queued so far
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		mode, wan := p.state()
		if mode == ProxyDrop {
			break
		}
		if n > 0 && mode == ProxyOpen {
			now := time.Now()
			if free.Before(now) {
				free = now
			}
			free = free.Add(wan.transmit(n))
			c := chunk{b: append([]byte(nil), buf[:n]...), due: free.Add(wan.RTT / 2)}
			select {
			case q <- c:
			case <-stop:
				err = io.ErrClosedPipe
			}
		}
		if err != nil {
			break
		}
	}
	close(q)
	// Either side ending ends the pair; the writer delivers what was read
	// before src ended unless dst fails first.
	wg.Wait()
	_ = dst.Close()
	_ = src.Close()
}

var _ io.Closer = (*Proxy)(nil)

// ProxiedCluster is a Cluster whose route connections all pass through
// proxies: node i reaches node j only through Proxies[i][j] (nil on the
// diagonal), so one node can be partitioned from its peers while its client
// port stays reachable (a cut-off node that still answers clients).
type ProxiedCluster struct {
	*Cluster
	// Proxies[i][j] carries the routes that node i solicits to node j.
	Proxies [][]*Proxy
}

// StartProxiedCluster starts opts.Nodes servers like StartCluster, with
// every route through a Proxy. Because nats-server dedupes routes between a
// pair and every node lists every peer, all route connections are
// solicited through some proxy. It returns the errors of StartCluster; on
// error nothing is left running.
func StartProxiedCluster(opts ClusterOptions) (*ProxiedCluster, error) {
	n := opts.Nodes
	if n == 0 {
		n = DefaultClusterNodes
	}
	if n < 2 {
		return nil, fmt.Errorf("%w: a proxied cluster needs >= 2 nodes, got %d", ErrInvalidOptions, n)
	}
	return retryBind(func() (*ProxiedCluster, error) {
		pc := &ProxiedCluster{Proxies: make([][]*Proxy, n)}
		c, err := startCluster(opts, "cutover-pcluster-", pc.proxiedRoutes)
		if err != nil {
			pc.closeProxies()
			return nil, err
		}
		pc.Cluster = c
		return pc, nil
	})
}

// proxiedRoutes is the routeFunc of a proxied cluster: node i reaches node
// j through a new proxy, Proxies[i][j].
func (pc *ProxiedCluster) proxiedRoutes(i int, ports []int) ([]string, string, error) {
	pc.Proxies[i] = make([]*Proxy, len(ports))
	var routes []string
	for j, port := range ports {
		if j == i {
			continue
		}
		p, err := StartProxy(net.JoinHostPort(DefaultHost, fmt.Sprint(port)))
		if err != nil {
			return nil, "", err
		}
		pc.Proxies[i][j] = p
		routes = append(routes, "nats-route://"+p.Addr())
	}
	// Gossip an address nobody listens on: a peer that learns of this node
	// cannot open an implicit route around the proxies (connection
	// refused), only the explicit one.
	return routes, "127.0.0.1:1", nil
}

// Partition cuts node k off from every peer (both directions) with mode
// (ProxyDrop or ProxyBlackhole). Out-of-range indexes are ignored.
func (pc *ProxiedCluster) Partition(k int, mode ProxyMode) {
	pc.setLinks(k, mode)
}

// Heal reopens every link of node k.
func (pc *ProxiedCluster) Heal(k int) { pc.setLinks(k, ProxyOpen) }

// CrashNode is the closest in-process equivalent of SIGKILL of node k: its
// links are blackholed first, so nothing it sends while shutting down
// reaches a peer (nats-server's shutdown hands off the Raft groups it leads;
// a killed process cannot), then it is stopped, keeping its store. Its
// peers see its routes close without a word, as after a kill; replies in
// flight are lost. Unlike a kill, the node's store is flushed on the way
// down — with sync_interval always every acknowledged write was already
// synced, so what a kill could lose is only what no one was told is stored.
// The links are reopened for RestartNode. Out-of-range indexes are
// ignored.
func (pc *ProxiedCluster) CrashNode(k int) {
	if k < 0 || k >= len(pc.Servers) {
		return
	}
	pc.setLinks(k, ProxyBlackhole)
	pc.KillNode(k)
	pc.Heal(k)
}

func (pc *ProxiedCluster) setLinks(k int, mode ProxyMode) {
	if k < 0 || k >= len(pc.Proxies) {
		return
	}
	for j := range pc.Proxies {
		if p := pc.Proxies[k][j]; p != nil {
			p.SetMode(mode)
		}
		if p := pc.Proxies[j][k]; p != nil {
			p.SetMode(mode)
		}
	}
}

// Routes returns how many route connections node k has (0 when it is
// stopped). After a ProxyDrop partition it drops to 0 unless a peer still
// holds a route to k that bypasses the proxies; the nodes gossip an
// unreachable route address so none should, but callers should check.
func (pc *ProxiedCluster) Routes(k int) int {
	if k < 0 || k >= len(pc.Servers) || !pc.Servers[k].Running() {
		return 0
	}
	return pc.Servers[k].Inner().NumRoutes()
}

// Shutdown stops every node, then every proxy. It is idempotent.
func (pc *ProxiedCluster) Shutdown() {
	pc.Cluster.Shutdown()
	pc.closeProxies()
}

func (pc *ProxiedCluster) closeProxies() {
	for _, row := range pc.Proxies {
		for _, p := range row {
			if p != nil {
				_ = p.Close()
			}
		}
	}
}

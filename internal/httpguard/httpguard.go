// Package httpguard hardens the HTTP listeners of the gateway and the
// projector: a listener that caps connections in total and per client
// address, a counter of concurrent long-lived requests (server-sent event
// streams) with the same two caps, and a Host check that keeps a loopback
// listener out of reach of DNS rebinding.
package httpguard

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
)

// ErrInvalid is returned for limits that cannot work.
var ErrInvalid = errors.New("httpguard: invalid limits")

// Slots counts holders of a scarce resource (connections, streams) in
// total and per client address. Safe for concurrent use.
type Slots struct {
	max, perClient int

	mu struct {
		sync.Mutex
		total  int
		client map[string]int
	}
}

// NewSlots returns Slots allowing max holders in total and perClient per
// client address. Errors: ErrInvalid unless 1 <= perClient <= max.
func NewSlots(max, perClient int) (*Slots, error) {
	if perClient < 1 || max < perClient {
		return nil, ErrInvalid
	}
	s := &Slots{max: max, perClient: perClient}
	s.mu.client = map[string]int{}
	return s, nil
}

// Acquire takes a slot for client; false (nothing taken) when either cap
// is reached. A true result must be given back with Release.
func (s *Slots) Acquire(client string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.total >= s.max || s.mu.client[client] >= s.perClient {
		return false
	}
	s.mu.total++
	s.mu.client[client]++
	return true
}

// Release gives back a slot of client.
func (s *Slots) Release(client string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.total--
	if s.mu.client[client]--; s.mu.client[client] <= 0 {
		delete(s.mu.client, client)
	}
}

// InUse returns the slots held in total.
func (s *Slots) InUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.total
}

// ClientOf is the client address of a remote address: its IP, or the
// whole address when it has no port.
func ClientOf(remote string) string {
	if h, _, err := net.SplitHostPort(remote); err == nil {
		return h
	}
	return remote
}

// Listener wraps ln so that a connection beyond the slots' caps is closed
// as soon as it is accepted (the client sees the connection end before any
// response); a connection gives its slot back when closed.
func Listener(ln net.Listener, slots *Slots) net.Listener {
	return &listener{Listener: ln, slots: slots}
}

type listener struct {
	net.Listener
	slots *Slots
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := ClientOf(c.RemoteAddr().String())
		if !l.slots.Acquire(client) {
			_ = c.Close()
			continue
		}
		return &conn{Conn: c, release: sync.OnceFunc(func() { l.slots.Release(client) })}, nil
	}
}

type conn struct {
	net.Conn
	release func()
}

func (c *conn) Close() error {
	c.release()
	return c.Conn.Close()
}

// IsLoopback reports whether a listen address (host:port) is on loopback
// only: 127.0.0.0/8, ::1 or "localhost".
func IsLoopback(addr string) bool {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Hosts is the Host check of a loopback listener: the request's host name
// (port ignored, case-insensitive) must be localhost, a loopback IP, or
// one of the configured names. A browser sends the name it resolved, so a
// page of another site whose name was rebound to 127.0.0.1 is refused.
type Hosts struct{ names []string }

// NewHosts allows the loopback names plus names.
func NewHosts(names ...string) Hosts {
	h := Hosts{}
	for _, n := range names {
		if n = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(n), ".")); n != "" {
			h.names = append(h.names, n)
		}
	}
	return h
}

// Allowed reports whether host (a Host header) is allowed.
func (h Hosts) Allowed(host string) bool {
	name := host
	if n, _, err := net.SplitHostPort(host); err == nil {
		name = n
	}
	name = strings.ToLower(strings.TrimSuffix(strings.Trim(name, "[]"), "."))
	if name == "localhost" {
		return true
	}
	if ip := net.ParseIP(name); ip != nil {
		return ip.IsLoopback()
	}
	for _, n := range h.names {
		if n == name {
			return true
		}
	}
	return false
}

// Check wraps next: a request whose Host is not allowed gets refuse.
func (h Hosts) Check(next http.Handler, refuse http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.Allowed(r.Host) {
			refuse(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

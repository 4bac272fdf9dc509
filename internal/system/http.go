package system

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/cutover/cutover/app/api"
	"github.com/cutover/cutover/internal/httpguard"
	"go.uber.org/fx"
)

// HTTPLimits harden an HTTP listener (the API's and the projector's).
// Zero values mean the defaults below.
type HTTPLimits struct {
	// ReadHeaderTimeout bounds reading a request's headers (10 s),
	// ReadTimeout the whole request with its body (30 s: a client that
	// trickles a body is cut off), WriteTimeout a request from the end of
	// its headers to the end of its response (60 s; the dashboard's event
	// stream extends it per event, StreamWriteTimeout), IdleTimeout a
	// keep-alive connection between requests (60 s).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// MaxConns caps open connections (4096) and MaxConnsPerClient those of
	// one client IP (1024: on a loopback deployment every client shares
	// 127.0.0.1); a connection beyond either is closed when accepted.
	MaxConns, MaxConnsPerClient int
	// MaxStreams and MaxStreamsPerClient cap the dashboard's concurrent
	// event streams (64 and 8); one more is refused with 503.
	// StreamWriteTimeout bounds each event's write (10 s): a client that
	// stops reading is dropped.
	MaxStreams, MaxStreamsPerClient int
	StreamWriteTimeout              time.Duration
	// Hosts are the Host names a loopback listener accepts besides
	// localhost and the loopback IPs (DNS rebinding: any other name is
	// refused); on a listener that is not loopback-only they are the only
	// names accepted, when given.
	Hosts []string
}

func (l *HTTPLimits) ensureDefaults() error {
	for _, d := range []*time.Duration{&l.ReadHeaderTimeout, &l.ReadTimeout, &l.WriteTimeout, &l.IdleTimeout, &l.StreamWriteTimeout} {
		if *d < 0 {
			return fmt.Errorf("%w: negative HTTP timeout %v", ErrConfig, *d)
		}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&l.ReadHeaderTimeout, 10*time.Second)
	def(&l.ReadTimeout, 30*time.Second)
	def(&l.WriteTimeout, 60*time.Second)
	def(&l.IdleTimeout, 60*time.Second)
	def(&l.StreamWriteTimeout, 10*time.Second)
	defInt := func(n *int, v int) {
		if *n == 0 {
			*n = v
		}
	}
	defInt(&l.MaxConns, 4096)
	defInt(&l.MaxConnsPerClient, min(1024, l.MaxConns))
	defInt(&l.MaxStreams, 64)
	defInt(&l.MaxStreamsPerClient, min(8, l.MaxStreams))
	if l.MaxConnsPerClient < 1 || l.MaxConns < l.MaxConnsPerClient || l.MaxStreamsPerClient < 1 || l.MaxStreams < l.MaxStreamsPerClient {
		return fmt.Errorf("%w: HTTP connection limits %d total / %d per client, streams %d / %d", ErrConfig,
			l.MaxConns, l.MaxConnsPerClient, l.MaxStreams, l.MaxStreamsPerClient)
	}
	return nil
}

// listen opens addr ("" = any free loopback port) when the app starts and
// serves h on it as an actor, hardened by lim: request headers capped at
// api.MaxHeaderBytes (net/http's default is 1 MiB), the timeouts, the
// connection caps, and the Host check of a loopback listener.
func listen(lc fx.Lifecycle, actors *Actors, name, addr string, lim HTTPLimits, h http.Handler) *HTTPServer {
	hs := &HTTPServer{}
	srv := &http.Server{ReadHeaderTimeout: lim.ReadHeaderTimeout, ReadTimeout: lim.ReadTimeout, WriteTimeout: lim.WriteTimeout,
		IdleTimeout: lim.IdleTimeout, MaxHeaderBytes: api.MaxHeaderBytes}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			a := addr
			if a == "" {
				a = "127.0.0.1:0"
			}
			slots, err := httpguard.NewSlots(lim.MaxConns, lim.MaxConnsPerClient)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrConfig, name, err)
			}
			ln, err := net.Listen("tcp", a)
			if err != nil {
				return fmt.Errorf("http listen %s: %w", a, err)
			}
			srv.Handler = h
			if httpguard.IsLoopback(a) || len(lim.Hosts) > 0 {
				srv.Handler = httpguard.NewHosts(lim.Hosts...).Check(h, refuseHost)
			}
			hs.Addr = ln.Addr().String()
			actors.serveHTTP(name, srv, func() error { return srv.Serve(httpguard.Listener(ln, slots)) })
			return nil
		},
		OnStop: func(ctx context.Context) error { return srv.Shutdown(ctx) },
	})
	return hs
}

// refuseHost answers a request for a Host this listener does not serve:
// 421 in the API's JSON error shape.
func refuseHost(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusMisdirectedRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "invalid",
		"message": fmt.Sprintf("host %q is not served here (a loopback listener answers localhost, 127.0.0.1 and [::1], and the names configured)", r.Host)}})
}

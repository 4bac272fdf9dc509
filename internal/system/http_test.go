package system

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/app/api"
)

// The HTTP listeners' hardening, on the real listeners of an in-process
// deployment: small limits make the behaviour show without waiting long;
// every wait is on a condition with a generous deadline.

func startHTTP(t *testing.T, mod func(*Config)) *System {
	t.Helper()
	cfg := Config{InMemory: true, DashboardAddr: "127.0.0.1:0", Workers: -1}
	mod(&cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func hostOf(url string) string { return strings.TrimPrefix(url, "http://") }

// closedByServer reads from c until the server closes it (true) or the
// generous deadline passes (false); any response bytes are drained.
func closedByServer(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestHTTPSlowBodyAndIdle: a client that declares a body and trickles it
// is cut off (ReadTimeout), and so is a keep-alive connection left idle
// (IdleTimeout), on the API and on the projector.
func TestHTTPSlowBodyAndIdle(t *testing.T) {
	s := startHTTP(t, func(c *Config) {
		c.HTTP.ReadTimeout, c.HTTP.IdleTimeout = 500*time.Millisecond, 500*time.Millisecond
	})
	for _, base := range []string{s.APIURL, s.DashboardURL} {
		addr := hostOf(base)
		slow := dial(t, addr)
		fmt.Fprintf(slow, "POST /v1/conversations HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer user:alice\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", addr)
		// Keep trickling, a byte now and then, until the server gives up.
		done := make(chan bool, 1)
		go func() { done <- closedByServer(t, slow) }()
		trickle := time.NewTicker(100 * time.Millisecond)
	wait:
		for {
			select {
			case closed := <-done:
				if !closed {
					t.Fatalf("%s: a trickled body was not cut off", base)
				}
				break wait
			case <-trickle.C:
				_, _ = slow.Write([]byte(" "))
			}
		}
		trickle.Stop()

		idle := dial(t, addr)
		fmt.Fprintf(idle, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: healthz: %v %v", base, resp, err)
		}
		resp.Body.Close()
		if !closedByServer(t, idle) {
			t.Fatalf("%s: an idle keep-alive connection stayed open", base)
		}
	}
}

// TestHTTPConnectionLimit: beyond the per-client cap a new connection is
// closed at once; once one closes, a new one is served.
func TestHTTPConnectionLimit(t *testing.T) {
	s := startHTTP(t, func(c *Config) {
		c.HTTP.MaxConns, c.HTTP.MaxConnsPerClient = 8, 3
		c.HTTP.ReadHeaderTimeout = time.Minute
	})
	addr := hostOf(s.APIURL)
	var held []net.Conn
	for range 3 {
		c := dial(t, addr)
		// A completed request proves the connection holds a slot.
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("connection within the cap: %v %v", resp, err)
		}
		resp.Body.Close()
		held = append(held, c)
	}
	over := dial(t, addr)
	fmt.Fprintf(over, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	_ = over.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := over.Read(make([]byte, 64)); n != 0 || err == nil {
		t.Fatalf("a connection beyond the cap was served: %d bytes, %v", n, err)
	}
	_ = held[0].Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection served after one closed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDashboardStreamLimit: the dashboard's event streams are capped per
// client; one more is refused with 503 until one ends.
func TestDashboardStreamLimit(t *testing.T) {
	s := startHTTP(t, func(c *Config) { c.HTTP.MaxStreams, c.HTTP.MaxStreamsPerClient = 4, 2 })
	open := func() (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.DashboardURL+"/v1/dashboard/stream", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		return resp, func() { cancel(); resp.Body.Close() }
	}
	var stops []context.CancelFunc
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	for range 2 {
		resp, stop := open()
		stops = append(stops, stop)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream within the cap: %d", resp.StatusCode)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "event: board") {
			t.Fatalf("first event: %q %v", line, err)
		}
	}
	resp, stop := open()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a stream beyond the cap: %d, want 503 with Retry-After", resp.StatusCode)
	}
	stop()
	stops[0]()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, stop := open()
		code := resp.StatusCode
		stop()
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stream after one ended: %d", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHTTPHostCheck: a loopback listener answers localhost, the loopback
// IPs and the configured names, and refuses any other Host (DNS
// rebinding) with 421 before the handler runs.
func TestHTTPHostCheck(t *testing.T) {
	s := startHTTP(t, func(c *Config) { c.HTTP.Hosts = []string{"cutover.internal"} })
	for _, base := range []string{s.APIURL, s.DashboardURL} {
		_, port, _ := net.SplitHostPort(hostOf(base))
		for host, want := range map[string]int{
			"localhost:" + port: 200, "127.0.0.1:" + port: 200, "[::1]:" + port: 200, "LOCALHOST": 200, "cutover.internal:" + port: 200,
			"evil.example:" + port: 421, "127.0.0.1.nip.io:" + port: 421, "localhost.evil.example": 421,
		} {
			req, _ := http.NewRequest(http.MethodGet, base+"/healthz", nil)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("%s with Host %q: %d, want %d", base, host, resp.StatusCode, want)
			}
		}
	}
}

// TestProjectorAuth: with a token secret the projector's HTTP answers only
// tokens of its own audience and service identities (401 otherwise, in the
// JSON error shape), /healthz stays open, and a browser signs in once with
// ?token=, which becomes an HttpOnly cookie the page and its stream carry.
func TestProjectorAuth(t *testing.T) {
	const secret = "projector-test-secret-0123456789"
	s := startHTTP(t, func(c *Config) { c.AuthSecret, c.ServiceSecret = secret, "projector-service-secret-01234" })
	tok := func(aud string) string {
		tk, err := api.SignUserToken([]byte(secret), "ops", aud, time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path, bearer string, cookies ...*http.Cookie) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, s.DashboardURL+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, path := range []string{"/v1/migrations", "/v1/tenants/t", "/metrics", "/", "/v1/dashboard", "/v1/dashboard/stream"} {
		for name, bearer := range map[string]string{"no token": "", "dev token": "user:ops", "API token": tok(api.AudienceAPI), "bad service secret": "svc:validator:nope"} {
			if r := get(path, bearer); r.StatusCode != http.StatusUnauthorized || r.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s, %s: %d, want 401", path, name, r.StatusCode)
			}
		}
	}
	if r := get("/v1/migrations", tok(api.AudienceProjector)); r.StatusCode != http.StatusOK {
		t.Errorf("projector token: %d", r.StatusCode)
	}
	if r := get("/metrics", "svc:validator:projector-service-secret-01234"); r.StatusCode != http.StatusOK {
		t.Errorf("service identity: %d", r.StatusCode)
	}
	if r := get("/healthz", ""); r.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %d", r.StatusCode)
	}
	if r := get("/?token="+tok(api.AudienceAPI), ""); r.StatusCode != http.StatusUnauthorized || len(r.Cookies()) != 0 {
		t.Errorf("sign-in with an API token: %d %v", r.StatusCode, r.Cookies())
	}
	r := get("/?token="+tok(api.AudienceProjector), "")
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/" || len(r.Cookies()) != 1 || !r.Cookies()[0].HttpOnly {
		t.Fatalf("sign-in: %d %q %v", r.StatusCode, r.Header.Get("Location"), r.Cookies())
	}
	if r := get("/", "", r.Cookies()[0]); r.StatusCode != http.StatusOK {
		t.Errorf("the page with the cookie: %d", r.StatusCode)
	}
	if r := get("/", "", &http.Cookie{Name: "cutover_token", Value: "forged"}); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forged cookie: %d", r.StatusCode)
	}
}

// TestRolesRefuseOpenAuth: composed as a role, the API and the projector
// refuse to run without a token secret unless development auth is chosen.
func TestRolesRefuseOpenAuth(t *testing.T) {
	cfg := &Config{InMemory: true}
	if err := cfg.EnsureDefaults(); err != nil {
		t.Fatal(err)
	}
	if _, err := NewAPI(cfg, Regions{}, Resolvers{}, nil, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("API without auth: %v", err)
	}
	if _, err := ProjectorAuth(cfg); !errors.Is(err, ErrConfig) {
		t.Errorf("projector without auth: %v", err)
	}
	cfg.InsecureDevAuth = true
	if a, err := ProjectorAuth(cfg); err != nil || a != nil {
		t.Errorf("projector with development auth: %v %v", a, err)
	}
}

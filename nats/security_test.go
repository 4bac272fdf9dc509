package cnats

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/crypto/bcrypt"
)

func TestPermissionSubjects(t *testing.T) {
	if eventStream != events.EventStream || eventSubjects != events.EventPrefix+">" ||
		commandSubjects != events.CommandPrefix+">" || workSubjects != events.WorkPrefix+">" || indexSubjects != events.IndexPrefix+">" ||
		commandStream != events.CommandStream || workStream != events.WorkStream || indexStream != events.IndexStream {
		t.Fatal("permissions.go's subjects are out of step with package events")
	}
	if _, err := Permissions("root"); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("unknown identity: %v", err)
	}
	hash := mustHash(t, "x")
	bad := []SecureOptions{
		{Users: []User{{Name: "a", Password: "", Identity: IdentityReader}}},
		{Users: []User{{Name: "a", Password: hash, Identity: IdentityReader}, {Name: "a", Password: hash, Identity: IdentityReader}}},
		{Users: []User{{Name: "a", Password: hash, Identity: "root"}}},
		{Users: []User{{Name: "a", Password: "plaintext", Identity: IdentityReader}}},
		{Users: []User{{Name: "a.b", Password: hash, Identity: IdentityReader}}},
		{Users: []User{{Name: "a", Password: hash, Identity: IdentityService}}},
		{Users: []User{{Name: "a", Password: hash, Identity: IdentityService, Regions: []string{"us.east"}}}},
		{Users: []User{{Name: "a", Password: hash, Identity: IdentityReader, Regions: []string{"us-east"}}}},
		{RouteTLS: &tls.Config{}},
	}
	for i, o := range bad {
		if err := o.Validate(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("case %d: %v", i, err)
		}
	}
	if _, err := (ClientSecurity{User: "a b", Password: "x"}).Options(); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("client user with a space: %v", err)
	}
}

// mustHash is HashPassword at bcrypt's minimum cost (tests only: fast).
func mustHash(tb testing.TB, pw string) string {
	tb.Helper()
	h, err := HashPassword(pw, bcrypt.MinCost)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// users gives every identity a user named after it (routing and service
// serving us-east) with the password "pw-<name>".
func users(tb testing.TB) []User {
	var us []User
	for _, id := range Identities {
		u := User{Name: string(id), Password: mustHash(tb, "pw-"+string(id)), Identity: id}
		if id == IdentityService || id == IdentityRouting {
			u.Regions = []string{"us-east"}
		}
		us = append(us, u)
	}
	return us
}

// secureConn connects as id over TLS and records the asynchronous errors
// (permission violations arrive that way).
type secureConn struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	mu   sync.Mutex
	errs []string
}

func (c *secureConn) asyncErrs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.errs, "; ")
}

func connectAs(t *testing.T, url string, pki PKI, id Identity) *secureConn {
	t.Helper()
	sc := &secureConn{}
	opts, err := ClientSecurity{User: string(id), Password: "pw-" + string(id), CAFile: pki.CA}.Options()
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		sc.mu.Lock()
		sc.errs = append(sc.errs, err.Error())
		sc.mu.Unlock()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sc.nc, sc.js, err = Connect(ctx, url, opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", id, err)
	}
	t.Cleanup(sc.nc.Close)
	return sc
}

func startSecure(t *testing.T) (*SecureServer, PKI) {
	t.Helper()
	pki, err := WriteTestPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := ServerTLS(pki.CA, pki.ServerCert, pki.ServerKey, false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := StartSecureServer(SecureOptions{Users: users(t), TLS: tc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s, pki
}

// TestSecurePermissions: only the admin creates the buckets and streams;
// the admin, routing and orchestrator identities write ROUTING, only the
// orchestrator publishes migration events; a service or reader connection
// gets a permission violation. (security_probe_test.go tries every attack.)
func TestSecurePermissions(t *testing.T) {
	s, pki := startSecure(t)
	admin := connectAs(t, s.ClientURL(), pki, IdentityAdmin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := ProvisionRouting(ctx, admin.js, RoutingConfig{Nodes: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.js.CreateStream(ctx, jetstream.StreamConfig{Name: events.EventStream, Subjects: []string{events.EventPrefix + ">"}}); err != nil {
		t.Fatal(err)
	}

	type want struct{ routing, events bool }
	for _, tc := range []struct {
		id Identity
		want
	}{
		{IdentityAdmin, want{true, false}},
		{IdentityOrchestrator, want{true, true}},
		{IdentityRouting, want{true, false}},
		{IdentityService, want{false, false}},
		{IdentityReader, want{false, false}},
	} {
		t.Run(string(tc.id), func(t *testing.T) {
			c := connectAs(t, s.ClientURL(), pki, tc.id)
			kv, err := c.js.KeyValue(ctx, RoutingBucket)
			if err != nil {
				t.Fatal(err)
			}
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			_, err = kv.Put(pctx, "conv.x-"+string(tc.id), []byte("doc"))
			pcancel()
			if (err == nil) != tc.routing {
				t.Errorf("ROUTING put: err %v, want allowed=%v", err, tc.routing)
			}
			pctx, pcancel = context.WithTimeout(ctx, time.Second)
			_, err = c.js.Publish(pctx, events.EventPrefix+"m1", []byte("evt"))
			pcancel()
			if (err == nil) != tc.events {
				t.Errorf("event publish: err %v, want allowed=%v", err, tc.events)
			}
			if !tc.routing || !tc.events {
				deadline := time.Now().Add(5 * time.Second)
				for !strings.Contains(strings.ToLower(c.asyncErrs()), "permissions violation") {
					if time.Now().After(deadline) {
						t.Fatalf("no permission violation reported; async errors: %q", c.asyncErrs())
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	// The reader may still read the bucket.
	r := connectAs(t, s.ClientURL(), pki, IdentityReader)
	kv, err := r.js.KeyValue(ctx, RoutingBucket)
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctx, "conv.x-orchestrator"); err != nil || string(e.Value()) != "doc" {
		t.Fatalf("reader get: %v", err)
	}
}

// TestSecurePlaintextRefused: with TLS required, a client speaking plain
// NATS is refused, a TLS client without the CA cannot verify the server,
// and a wrong password is refused.
func TestSecurePlaintextRefused(t *testing.T) {
	s, pki := startSecure(t)
	addr := strings.TrimPrefix(s.ClientURL(), "nats://")
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	rd := bufio.NewReader(conn)
	info, err := rd.ReadString('\n')
	if err != nil || !strings.Contains(info, `"tls_required":true`) {
		t.Fatalf("INFO %q: %v", info, err)
	}
	fmt.Fprintf(conn, "CONNECT {\"user\":\"reader\",\"pass\":\"pw-reader\",\"verbose\":false}\r\nPING\r\n")
	var got strings.Builder
	for {
		line, err := rd.ReadString('\n')
		got.WriteString(line)
		if err != nil || strings.HasPrefix(line, "PONG") || strings.HasPrefix(line, "-ERR") {
			break
		}
	}
	if strings.Contains(got.String(), "PONG") {
		t.Fatalf("plaintext client served: %q", got.String())
	}

	// nats.go itself, without the CA: the handshake fails verification.
	if nc, err := nats.Connect(s.ClientURL(), nats.UserInfo("reader", "pw-reader"), nats.Timeout(2*time.Second), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("connected without trusting the server's CA")
	}
	// Wrong password, right CA.
	opts, err := ClientSecurity{User: "reader", Password: "nope", CAFile: pki.CA}.Options()
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(s.ClientURL(), append(opts, nats.Timeout(2*time.Second), nats.MaxReconnects(0))...); err == nil {
		nc.Close()
		t.Fatal("wrong password accepted")
	}
}

// TestSecureCluster: three nodes with mutual TLS on routes and TLS on
// client ports form a cluster and serve an R3 ROUTING bucket; a restarted
// node keeps its security.
func TestSecureCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	pki, err := WriteTestPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctls, err := ServerTLS(pki.CA, pki.ServerCert, pki.ServerKey, false)
	if err != nil {
		t.Fatal(err)
	}
	rtls, err := RouteTLSConfig(pki.CA, pki.ServerCert, pki.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	// The free ports are picked, released, then bound by the nodes: on a
	// busy machine another process may take one in between; retryBind
	// starts again on fresh ports.
	nodes, err := retryBind(func() ([]*SecureServer, error) {
		ports, err := freePorts(DefaultHost, 3)
		if err != nil {
			return nil, err
		}
		nodes := make([]*SecureServer, 3)
		errs := make([]error, 3)
		var wg sync.WaitGroup
		for i := range 3 {
			var routes []string
			for j, p := range ports {
				if j != i {
					routes = append(routes, fmt.Sprintf("nats-route://%s:%d", DefaultHost, p))
				}
			}
			wg.Go(func() {
				nodes[i], errs[i] = StartSecureServer(SecureOptions{
					Options: Options{Name: fmt.Sprintf("sec-n%d", i), StoreDir: t.TempDir(), ClusterName: "sec", ClusterPort: ports[i], Routes: routes},
					Users:   users(t), TLS: ctls, RouteTLS: rtls})
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			for _, n := range nodes {
				if n != nil {
					n.Shutdown()
				}
			}
			return nil, err
		}
		return nodes, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		t.Cleanup(n.Shutdown)
	}
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.ClientURL())
	}
	c := connectAs(t, strings.Join(urls, ","), pki, IdentityAdmin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var kv jetstream.KeyValue
	for {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		kv, err = ProvisionRouting(actx, c.js, RoutingConfig{Nodes: 3})
		acancel()
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas != 3 {
		t.Fatalf("status: %v", err)
	}
	if _, err := kv.Put(ctx, "conv.a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := nodes[2].Restart(); err != nil {
		t.Fatal(err)
	}
	if info := readInfo(t, nodes[2].ClientURL()); !strings.Contains(info, `"tls_required":true`) {
		t.Fatalf("restart dropped TLS: %s", info)
	}
	for {
		_, err := kv.Put(ctx, "conv.b", []byte("2"))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readInfo returns the INFO line a server sends a new connection.
func readInfo(t *testing.T, url string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "nats://"), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	info, _ := bufio.NewReader(conn).ReadString('\n')
	return info
}

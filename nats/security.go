package cnats

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Security of a deployment (issue 8): users with subject permissions, TLS
// on client connections and on cluster routes. The plain Options/StartServer
// of server.go stay as they are; SecureOptions wraps them and
// StartSecureServer layers the security settings (SecureOptions.apply) on
// the options server.go builds, at every start.

// Identity is the kind of NATS user a process connects as; it decides the
// user's subject permissions (Permissions).
type Identity string

const (
	// IdentityRouting may write the ROUTING bucket (and nothing in the
	// migration event log). The gateway runs as it: creating a
	// conversation creates its routing document.
	IdentityRouting Identity = "routing"
	// IdentityOrchestrator may publish migration events (cutover.evt.>).
	// The orchestrator's locker is the writer of routing documents during
	// a migration, so it may write ROUTING too.
	IdentityOrchestrator Identity = "orchestrator"
	// IdentityService serves the migration contract (cutover.contract.>,
	// cutover.pages.>) and may read routing, but neither write ROUTING nor
	// publish migration events.
	IdentityService Identity = "service"
	// IdentityReader is unprivileged: it may read (JetStream API, the
	// contract's read-only requests: export, digests, slice) but write
	// neither ROUTING nor events nor commands, nor send the contract's
	// mutating requests (fences, imports, grants, cleanups) or pages.
	// Routing documents and events carry lock tokens whole (the
	// enforcers need them); a reader sees them, and a token gives it
	// nothing to act with (docs/wire-format.md "Tokens").
	IdentityReader Identity = "reader"
)

// Identities lists every identity, privileged first.
var Identities = []Identity{IdentityRouting, IdentityOrchestrator, IdentityService, IdentityReader}

// Subjects the permissions protect.
const (
	eventSubjects   = "cutover.evt.>"
	commandSubjects = "cutover.cmd.>"
	workSubjects    = "cutover.work.>"
	eventStream     = "MIGRATION_EVENTS" // events.EventStream, kept in step by TestPermissionSubjects
	pageSubjects    = "cutover.pages.>"  // contractnats.PagesSubjectPrefix
	indexSubjects   = "cutover.idx.>"    // events.IndexPrefix, the resource index
)

// contractMutations are the migration contract's requests that change a
// service's state (contractnats.Op*, kept in step by
// TestPermissionSubjects): cutover.contract.<region>.<service>.<op>.
var contractMutations = []string{"authority", "repair", "cleanup", "import", "checkpoint"}

// destructive are the JetStream API requests that alter a stream's content
// other than by publishing to it.
func destructive(stream string) []string {
	return []string{
		"$JS.API.STREAM.PURGE." + stream,
		"$JS.API.STREAM.DELETE." + stream,
		"$JS.API.STREAM.MSG.DELETE." + stream,
	}
}

// Permissions returns the subject permissions of id: publish everything
// except what the identity may not write. Deny wins over allow in
// nats-server, so each identity is "> minus its denials". Every identity
// may subscribe to everything (reads are not the concern here; an account
// split would be).
func Permissions(id Identity) (*server.Permissions, error) {
	routing := append([]string{RoutingSubjectPrefix + ">"}, destructive(RoutingStream)...)
	evts := append([]string{eventSubjects}, destructive(eventStream)...)
	var deny []string
	switch id {
	case IdentityRouting:
		deny = append(append(deny, evts...), workSubjects, indexSubjects)
	case IdentityOrchestrator:
		// may write routing (its locker) and events
	case IdentityService:
		deny = append(append(append(deny, routing...), evts...), workSubjects, commandSubjects, indexSubjects)
	case IdentityReader:
		deny = append(append(append(deny, routing...), evts...), workSubjects, commandSubjects, pageSubjects, indexSubjects)
		for _, op := range contractMutations {
			deny = append(deny, "cutover.contract.*.*."+op)
		}
	default:
		return nil, fmt.Errorf("%w: identity %q (want one of %v)", ErrInvalidOptions, id, Identities)
	}
	p := &server.SubjectPermission{Allow: []string{">"}}
	if len(deny) > 0 {
		p.Deny = deny
	}
	return &server.Permissions{Publish: p, Subscribe: &server.SubjectPermission{Allow: []string{">"}}}, nil
}

// User is one NATS user of a secure server.
type User struct {
	Name     string
	Password string
	Identity Identity
}

// SecureOptions are Options plus the security settings.
type SecureOptions struct {
	Options
	// Users, when not empty, are the only accepted users (user/password
	// authentication), each with its identity's permissions.
	Users []User
	// TLS, when set, is required on client connections (a plaintext
	// client is refused). Build it with ServerTLS.
	TLS *tls.Config
	// RouteTLS, when set, is required on cluster routes (mutual TLS: build
	// it with RouteTLSConfig).
	RouteTLS *tls.Config
	// TLSTimeout bounds a TLS handshake; 0 means 2 s.
	TLSTimeout time.Duration
}

// Validate reports whether the options can start a secure server.
func (o SecureOptions) Validate() error {
	if err := o.Options.Validate(); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, u := range o.Users {
		if u.Name == "" || u.Password == "" {
			return fmt.Errorf("%w: user %q needs a name and a password", ErrInvalidOptions, u.Name)
		}
		if seen[u.Name] {
			return fmt.Errorf("%w: duplicate user %q", ErrInvalidOptions, u.Name)
		}
		seen[u.Name] = true
		if _, err := Permissions(u.Identity); err != nil {
			return err
		}
	}
	if o.RouteTLS != nil && o.ClusterName == "" {
		return fmt.Errorf("%w: route TLS without a cluster name", ErrInvalidOptions)
	}
	if o.TLSTimeout < 0 {
		return fmt.Errorf("%w: negative TLS timeout", ErrInvalidOptions)
	}
	return nil
}

// apply adds the security settings to one start's server options.
func (o SecureOptions) apply(so *server.Options) error {
	for _, u := range o.Users {
		p, err := Permissions(u.Identity)
		if err != nil {
			return err
		}
		so.Users = append(so.Users, &server.User{Username: u.Name, Password: u.Password, Permissions: p})
	}
	timeout := o.TLSTimeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	if o.TLS != nil {
		so.TLS = true
		so.TLSConfig = o.TLS.Clone()
		so.TLSTimeout = timeout.Seconds()
		so.TLSVerify = o.TLS.ClientAuth == tls.RequireAndVerifyClientCert
	}
	if o.RouteTLS != nil {
		so.Cluster.TLSConfig = o.RouteTLS.Clone()
		so.Cluster.TLSTimeout = timeout.Seconds()
	}
	return nil
}

// SecureServer is a Server started with SecureOptions. Restart keeps the
// security settings.
type SecureServer struct {
	*Server
}

// StartSecureServer is StartServer with users, permissions and TLS. It
// returns the errors of StartServer, and ErrInvalidOptions for bad users or
// security settings.
func StartSecureServer(opts SecureOptions) (*SecureServer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s, err := newServer(opts.Options)
	if err != nil {
		return nil, err
	}
	s.layer = opts.apply
	if err := s.firstStart(); err != nil {
		return nil, err
	}
	return &SecureServer{Server: s}, nil
}

// ------------------------------------------------------------------ TLS

// loadPair loads a certificate and the CA pool it is checked against.
func loadPair(caFile, certFile, keyFile string) (*x509.CertPool, []tls.Certificate, error) {
	var pool *x509.CertPool
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, nil, fmt.Errorf("cnats: read CA: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("%w: no certificate in %s", ErrInvalidOptions, caFile)
		}
	}
	var certs []tls.Certificate
	if certFile != "" || keyFile != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("cnats: load key pair: %w", err)
		}
		certs = []tls.Certificate{c}
	}
	return pool, certs, nil
}

// ServerTLS is the TLS configuration of a server's client port: its
// certificate, and (verifyClients) client certificates required and checked
// against caFile.
func ServerTLS(caFile, certFile, keyFile string, verifyClients bool) (*tls.Config, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("%w: server TLS needs a certificate and a key", ErrInvalidOptions)
	}
	pool, certs, err := loadPair(caFile, certFile, keyFile)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: certs, ClientCAs: pool}
	if verifyClients {
		if pool == nil {
			return nil, fmt.Errorf("%w: verifying clients needs a CA", ErrInvalidOptions)
		}
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// RouteTLSConfig is the mutual TLS configuration of cluster routes: every
// node presents certFile and verifies its peers against caFile.
func RouteTLSConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" || certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("%w: route TLS needs a CA, a certificate and a key", ErrInvalidOptions)
	}
	pool, certs, err := loadPair(caFile, certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: certs, RootCAs: pool, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert}, nil
}

// ClientSecurity is how a client authenticates and secures its connection.
type ClientSecurity struct {
	User, Password string
	// CAFile verifies the server; CertFile/KeyFile are a client certificate.
	CAFile, CertFile, KeyFile string
}

// Options returns the nats.Options for s (none when s is zero), to pass to
// Connect.
func (s ClientSecurity) Options() ([]nats.Option, error) {
	var out []nats.Option
	if s.User != "" || s.Password != "" {
		out = append(out, nats.UserInfo(s.User, s.Password))
	}
	if s.CAFile != "" || s.CertFile != "" {
		pool, certs, err := loadPair(s.CAFile, s.CertFile, s.KeyFile)
		if err != nil {
			return nil, err
		}
		out = append(out, nats.Secure(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: certs}))
	}
	return out, nil
}

// ------------------------------------------------------------------ test PKI

// TestPKI names the files WriteTestPKI wrote.
type TestPKI struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// WriteTestPKI writes a fresh throwaway CA and, signed by it, a
// server/route certificate for loopback (127.0.0.1, ::1, localhost and
// hosts) and a client certificate, into dir. It is for tests and
// development; the keys are ECDSA P-256 and valid for a day.
func WriteTestPKI(dir string, hosts ...string) (TestPKI, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return TestPKI{}, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "cutover test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return TestPKI{}, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return TestPKI{}, err
	}
	p := TestPKI{CA: filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client-key.pem")}
	if err := writePEM(p.CA, "CERTIFICATE", caDER); err != nil {
		return TestPKI{}, err
	}
	leaf := func(cn string, usage []x509.ExtKeyUsage, certFile, keyFile string, sans bool) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		t := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage}
		if sans {
			t.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
			t.DNSNames = []string{"localhost"}
			for _, h := range hosts {
				if ip := net.ParseIP(h); ip != nil {
					t.IPAddresses = append(t.IPAddresses, ip)
				} else {
					t.DNSNames = append(t.DNSNames, h)
				}
			}
		}
		der, err := x509.CreateCertificate(rand.Reader, t, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		return errors.Join(writePEM(certFile, "CERTIFICATE", der), writePEM(keyFile, "EC PRIVATE KEY", kb))
	}
	// The server certificate serves both ends of a route, so it is also a
	// client certificate.
	if err := leaf("cutover nats", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, p.ServerCert, p.ServerKey, true); err != nil {
		return TestPKI{}, err
	}
	if err := leaf("cutover client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, p.ClientCert, p.ClientKey, false); err != nil {
		return TestPKI{}, err
	}
	return p, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

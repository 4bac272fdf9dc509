package cnats

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"golang.org/x/crypto/bcrypt"
)

// Security of a deployment: users with subject permissions
// (permissions.go), bcrypt-hashed passwords, TLS on client connections and
// on cluster routes. The plain Options/StartServer of server.go stay as
// they are; SecureOptions wraps them and StartSecureServer layers the
// security settings (SecureOptions.apply) on the options server.go builds,
// at every start.

// User is one NATS user of a secure server.
type User struct {
	// Name is one subject token (it names the user's inbox prefix).
	Name string
	// Password is a bcrypt hash (HashPassword): nats-server compares a
	// plaintext password as stored, so a users file would hold every
	// secret in the clear.
	Password string
	Identity Identity
	// Regions are the regions whose contract the user serves (service:
	// required; routing: its gateway's regions; others: none).
	Regions []string
}

// HashPassword returns the bcrypt hash of password for User.Password, at
// bcrypt's default cost (cost 0) or the given one. Errors: bcrypt's
// (a password longer than 72 bytes, a cost out of range).
func HashPassword(password string, cost int) (string, error) {
	if cost == 0 {
		cost = bcrypt.DefaultCost
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return string(h), nil
}

// isBcrypt reports whether p is a bcrypt hash nats-server accepts as one.
func isBcrypt(p string) bool {
	if !strings.HasPrefix(p, "$2") {
		return false
	}
	_, err := bcrypt.Cost([]byte(p))
	return err == nil
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
		if !isBcrypt(u.Password) {
			return fmt.Errorf("%w: user %q: the password is not a bcrypt hash (`cutover certs` writes hashed users; cnats.HashPassword)", ErrInvalidOptions, u.Name)
		}
		if seen[u.Name] {
			return fmt.Errorf("%w: duplicate user %q", ErrInvalidOptions, u.Name)
		}
		seen[u.Name] = true
		if _, err := u.Permissions(); err != nil {
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
		p, err := u.Permissions()
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
// Connect. A user's connection takes the user's inbox prefix
// (InboxPrefix), the only inboxes its permissions let it read.
func (s ClientSecurity) Options() ([]nats.Option, error) {
	var out []nats.Option
	if s.User != "" || s.Password != "" {
		if err := validUserName(s.User); err != nil {
			return nil, err
		}
		out = append(out, nats.UserInfo(s.User, s.Password), nats.CustomInboxPrefix(InboxPrefix(s.User)))
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

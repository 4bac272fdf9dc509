package ops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// conn is a connection to a deployment.
type conn struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	orch *orchestrator.Client
}

// dial connects to the deployment at url (comma-separated URLs), giving up
// after 5 seconds, as the NATS user the environment names (EnvSecurity).
func dial(ctx context.Context, url string) (*conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sec, err := EnvSecurity()
	if err != nil {
		return nil, err
	}
	opts, err := sec.Options()
	if err != nil {
		return nil, err
	}
	nc, js, err := cnats.Connect(cctx, url, append(opts, nats.Name("cutover-cli"))...)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, js: js, orch: orchestrator.NewClient(nc, js)}, nil
}

func (o *conn) Close() { o.nc.Close() }

// Environment variables of the operator commands' NATS security: a secured
// deployment's operators connect as a user of theirs (the admin identity,
// nats/permissions.go) without a secret on the command line.
const (
	EnvNATSUser         = "CUTOVER_NATS_USER"
	EnvNATSPassword     = "CUTOVER_NATS_PASSWORD"
	EnvNATSPasswordFile = "CUTOVER_NATS_PASSWORD_FILE"
	EnvNATSCA           = "CUTOVER_NATS_CA"
	EnvNATSCert         = "CUTOVER_NATS_CERT"
	EnvNATSKey          = "CUTOVER_NATS_KEY"
)

// EnvSecurity is the operator commands' NATS security from the
// environment (none when no variable is set). Errors: ErrUsage for a user
// without a password or a password without a user; the password file's.
func EnvSecurity() (cnats.ClientSecurity, error) {
	s := cnats.ClientSecurity{User: os.Getenv(EnvNATSUser), Password: os.Getenv(EnvNATSPassword),
		CAFile: os.Getenv(EnvNATSCA), CertFile: os.Getenv(EnvNATSCert), KeyFile: os.Getenv(EnvNATSKey)}
	if f := os.Getenv(EnvNATSPasswordFile); f != "" && s.Password == "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return s, fmt.Errorf("$%s: %w", EnvNATSPasswordFile, err)
		}
		s.Password = strings.TrimRight(string(b), "\r\n")
	}
	if (s.User == "") != (s.Password == "") {
		return s, fmt.Errorf("%w: $%s and $%s (or $%s) go together", ErrUsage, EnvNATSUser, EnvNATSPassword, EnvNATSPasswordFile)
	}
	return s, nil
}

// routingStore binds to the deployment's routing bucket.
func (o *conn) routingStore(ctx context.Context) (*kvrouting.Store, error) {
	return kvrouting.NewStore(ctx, o.nc, o.js, "")
}

// dialRouting is dial, then the routing bucket bound; the caller closes
// the connection.
func dialRouting(ctx context.Context, url string) (*conn, *kvrouting.Store, error) {
	o, err := dial(ctx, url)
	if err != nil {
		return nil, nil, err
	}
	st, err := o.routingStore(ctx)
	if err != nil {
		o.Close()
		return nil, nil, err
	}
	return o, st, nil
}

// leaderDoc reads res's routing document from the leader.
func (o *conn) leaderDoc(ctx context.Context, res kvrouting.Resource) (*kvrouting.Document, error) {
	st, err := o.routingStore(ctx)
	if err != nil {
		return nil, err
	}
	d, err := st.GetLeader(ctx, res)
	if errors.Is(err, kvrouting.ErrNotFound) {
		return nil, fmt.Errorf("%s has %w", res, errNoDocument)
	}
	return d, err
}

// errNoDocument is leaderDoc's error for a resource without a routing
// document.
var errNoDocument = errors.New("no routing document")

// withTimeout bounds ctx by d unless d is 0.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

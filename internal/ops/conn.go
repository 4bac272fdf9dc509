package ops

import (
	"context"
	"errors"
	"fmt"
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
// after 5 seconds.
func dial(ctx context.Context, url string) (*conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nc, js, err := cnats.Connect(cctx, url, nats.Name("cutover-cli"))
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, js: js, orch: orchestrator.NewClient(nc, js)}, nil
}

func (o *conn) Close() { o.nc.Close() }

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
		return nil, fmt.Errorf("%s has no routing document", res)
	}
	return d, err
}

// withTimeout bounds ctx by d unless d is 0.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

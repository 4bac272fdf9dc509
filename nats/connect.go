package cnats

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/nats/natsclient"
)

// DefaultTimeout is applied to I/O in this package when the caller's context
// has no deadline (natsclient.DefaultTimeout).
const DefaultTimeout = natsclient.DefaultTimeout

// Connection defaults applied by Connect before the caller's options
// (natsclient.DefaultClientName, natsclient.DefaultReconnectWait).
const (
	// DefaultClientName is the connection name shown in server monitoring.
	DefaultClientName = natsclient.DefaultClientName
	// DefaultReconnectWait is the pause between reconnect attempts.
	DefaultReconnectWait = natsclient.DefaultReconnectWait
)

// withDefaultTimeout returns ctx unchanged (with a cancel) when it has a
// deadline, or ctx bounded by d otherwise (natsclient.WithDefaultTimeout).
func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return natsclient.WithDefaultTimeout(ctx, d)
}

// RetryIdempotent is natsclient.RetryIdempotent: fn (an idempotent
// JetStream API call) with each attempt bounded by DefaultTimeout, tried
// again while ctx allows when an attempt failed transiently.
func RetryIdempotent(ctx context.Context, fn func(context.Context) error) error {
	return natsclient.RetryIdempotent(ctx, fn)
}

// Transient is natsclient.Transient: whether err means "no answer yet"
// rather than "no", so that retrying an idempotent request is safe.
func Transient(err error) bool { return natsclient.Transient(err) }

// Connect is natsclient.Connect: a connection to urls with cutover's
// defaults, and a JetStream handle on it.
func Connect(ctx context.Context, urls string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	return natsclient.Connect(ctx, urls, opts...)
}

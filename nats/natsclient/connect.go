package natsclient

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Connection defaults applied by Connect before the caller's options.
const (
	// DefaultClientName is the connection name shown in server monitoring.
	DefaultClientName = "cutover"
	// DefaultReconnectWait is the pause between reconnect attempts. It is
	// short because the servers are local and fault tests restart them.
	DefaultReconnectWait = 100 * time.Millisecond
	// defaultDialTimeout bounds one dial attempt to one server.
	defaultDialTimeout = 2 * time.Second
)

// RetryIdempotent runs fn (an idempotent JetStream API call, such as a
// create-or-update) with each attempt bounded by DefaultTimeout, and tries
// again while ctx allows when an attempt failed transiently (Transient): a
// request lost in a meta-leader change would otherwise wait out the whole
// caller deadline (seen in CI: a mirror provision hung 20 s on a loaded
// 2-core machine), and a cluster restarting after a crash answers "not
// ready" for a while. Other errors are returned at once; with a context
// that has no deadline it retries until the context ends.
func RetryIdempotent(ctx context.Context, fn func(context.Context) error) error {
	for {
		actx, cancel := WithRequestTimeout(ctx, DefaultTimeout)
		err := fn(actx)
		cancel()
		if err == nil || ctx.Err() != nil || !Transient(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Transient reports whether err means "no answer yet" rather than "no":
// a timeout, no responders, no stream response, or JetStream saying its
// cluster is not ready (no peers for placement while the meta group
// forms, 10005; temporarily unavailable, 10008). Retrying an idempotent
// request on such an error is safe and eventually answers.
func Transient(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == 10005 || apiErr.ErrorCode == 10008)
}

// Connect connects to urls (a comma-separated list, as nats.Connect accepts)
// and returns the connection and a JetStream handle on it. Defaults: name
// DefaultClientName, reconnect forever every DefaultReconnectWait with small
// jitter, a dial timeout no longer than the context allows. opts are applied
// after the defaults and so override them. The context bounds the initial
// connect only (DefaultTimeout when it has no deadline); the connection then
// lives until the caller closes it. It returns the nats.Connect error or the
// context error, wrapped. Safe for concurrent use.
func Connect(ctx context.Context, urls string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	ctx, cancel := WithDefaultTimeout(ctx, DefaultTimeout)
	defer cancel()

	dial := defaultDialTimeout
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < dial {
			dial = max(left, time.Millisecond)
		}
	}
	all := append([]nats.Option{
		nats.Name(DefaultClientName),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(DefaultReconnectWait),
		nats.ReconnectJitter(DefaultReconnectWait/2, DefaultReconnectWait/2),
		nats.Timeout(dial),
	}, opts...)

	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := nats.Connect(urls, all...)
		done <- result{nc, err}
	}()

	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		go func() { // close a connection that arrives after we gave up
			if late := <-done; late.nc != nil {
				late.nc.Close()
			}
		}()
		return nil, nil, fmt.Errorf("cnats: connect %s: %w", urls, ctx.Err())
	}
	if r.err != nil {
		return nil, nil, fmt.Errorf("cnats: connect %s: %w", urls, r.err)
	}
	js, err := jetstream.New(r.nc)
	if err != nil {
		r.nc.Close()
		return nil, nil, fmt.Errorf("cnats: jetstream: %w", err)
	}
	return r.nc, js, nil
}

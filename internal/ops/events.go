package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/eventlog"
	"github.com/cutover/cutover/events"
)

// Reading MIGRATION_EVENTS: following a subject, and the last event of
// every migration.

// followEvents calls fn with every event of migration id after stream
// sequence after (0: from the first), until fn returns true or ctx ends
// (eventlog.Log.Follow). It tells stderr once when nothing arrives for a
// while (no orchestrator running?), and gives up with an error saying so
// when o's NATS connection is lost for NATSLostAfter (or closed): a follow
// never hangs on a deployment that has gone away.
func followEvents(ctx context.Context, o *conn, id string, after uint64, stderr io.Writer, fn func(seq uint64, e *events.Envelope) bool) error {
	quiet := time.AfterFunc(10*time.Second, func() {
		fmt.Fprintln(stderr, "cutover: no events for 10s; is an orchestrator running?")
	})
	defer quiet.Stop()
	ctx, stop := watchConn(ctx, o.nc)
	defer stop()
	err := eventlog.New(nil, o.js).Follow(ctx, id, after+1, func(e eventlog.Entry) error {
		quiet.Stop()
		if e.Err != nil {
			return nil // another schema version; nothing we can show
		}
		if fn(e.Seq, e.Event) {
			return eventlog.ErrStop
		}
		return nil
	})
	if cause := context.Cause(ctx); errors.Is(cause, errNATSLost) {
		return cause
	}
	if err != nil {
		return noStream(err)
	}
	return ctx.Err()
}

// NATSLostAfter is how long a follow (`--wait`, `--follow`, a tenant's
// progress) waits for a lost NATS connection to come back before it exits
// with an error.
var NATSLostAfter = 10 * time.Second

// errNATSLost is the cause of a follow ended by a lost connection.
var errNATSLost = errors.New("lost the NATS connection")

// watchConn returns ctx cancelled, with a cause wrapping errNATSLost, when
// nc is closed or stays disconnected for NATSLostAfter; stop releases it.
func watchConn(ctx context.Context, nc *nats.Conn) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	ch := nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CONNECTED, nats.CLOSED)
	done := make(chan struct{})
	lost := func(why string) {
		cancel(fmt.Errorf("%w (%s): the migration goes on; follow it again with `cutover migrate status ID --follow`", errNATSLost, why))
	}
	go func() {
		var timer <-chan time.Time
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-timer:
				lost(fmt.Sprintf("disconnected for %s", NATSLostAfter))
				return
			case s := <-ch:
				switch s {
				case nats.CLOSED:
					lost("connection closed")
					return
				case nats.CONNECTED:
					timer = nil
				default:
					if timer == nil {
						timer = time.After(NATSLostAfter)
					}
				}
			}
		}
	}()
	if st := nc.Status(); st == nats.CLOSED {
		lost("connection closed")
	}
	return ctx, func() {
		close(done)
		nc.RemoveStatusListener(ch)
		cancel(nil)
	}
}

// lastEvents reads the last event of every migration (one per subject of
// MIGRATION_EVENTS; each carries its migration's full state).
func lastEvents(ctx context.Context, js jetstream.JetStream) ([]eventlog.Entry, error) {
	ctx, cancel := withTimeout(ctx, time.Minute)
	defer cancel()
	heads, err := eventlog.New(nil, js).Heads(ctx)
	return heads, noStream(err)
}

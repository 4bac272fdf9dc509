package ops

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cutover/cutover/eventlog"
	"github.com/cutover/cutover/events"
	"github.com/nats-io/nats.go/jetstream"
)

// Reading MIGRATION_EVENTS: following a subject, and the last event of
// every migration.

// followEvents calls fn with every event of migration id, from the
// first, until fn returns true or ctx ends (eventlog.Log.Follow). It tells
// stderr once when nothing arrives for a while (no orchestrator running?).
func followEvents(ctx context.Context, js jetstream.JetStream, id string, stderr io.Writer, fn func(seq uint64, e *events.Envelope) bool) error {
	quiet := time.AfterFunc(10*time.Second, func() {
		fmt.Fprintln(stderr, "cutover: no events for 10s; is an orchestrator running?")
	})
	defer quiet.Stop()
	err := eventlog.New(nil, js).Follow(ctx, id, 0, func(e eventlog.Entry) error {
		quiet.Stop()
		if e.Err != nil {
			return nil // another schema version; nothing we can show
		}
		if fn(e.Seq, e.Event) {
			return eventlog.ErrStop
		}
		return nil
	})
	if err != nil {
		return noStream(err)
	}
	return ctx.Err()
}

// lastEvents reads the last event of every migration (one per subject of
// MIGRATION_EVENTS; each carries its migration's full state).
func lastEvents(ctx context.Context, js jetstream.JetStream) ([]eventlog.Entry, error) {
	ctx, cancel := withTimeout(ctx, time.Minute)
	defer cancel()
	heads, err := eventlog.New(nil, js).Heads(ctx)
	return heads, noStream(err)
}

package cnats

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/nats/natsclient"
)

// RoutingHistoryStream keeps every revision of every routing document for
// a while: ROUTING itself keeps only a few per key, so a watcher that fell
// behind (or resumes) would miss lock transitions (kvrouting.Store.Watch
// reads this stream when it exists).
const RoutingHistoryStream = natsclient.RoutingHistoryStream

// DefaultRoutingHistoryAge is how long RoutingHistoryStream keeps a revision.
const DefaultRoutingHistoryAge = 7 * 24 * time.Hour

// RoutingHistoryMaxBytes bounds RoutingHistoryStream (the oldest revisions
// go first).
const RoutingHistoryMaxBytes = 256 << 20

// ProvisionRoutingHistory creates or updates RoutingHistoryStream: a mirror
// of KV_ROUTING (same sequences, so a revision is the KV revision) with no
// per-key limit, keeping revisions maxAge (0: DefaultRoutingHistoryAge) and
// at most RoutingHistoryMaxBytes. It is kept in memory: on a server with
// sync_interval always a file mirror doubled the fsyncs of every routing
// write and slowed the lock steps (the demo's pre-lock p99 204 → 310 ms);
// after a restart it holds what ROUTING still keeps (16 revisions a key)
// and everything after.
// ROUTING must exist. Errors: ErrInvalidOptions, ErrStreamNotFound, the
// JetStream error.
func ProvisionRoutingHistory(ctx context.Context, js jetstream.JetStream, replicas int, maxAge time.Duration) (jetstream.Stream, error) {
	if replicas == 0 {
		replicas = 1
	}
	if replicas < 1 || replicas > MaxReplicas || maxAge < 0 {
		return nil, fmt.Errorf("%w: routing history replicas %d, age %s", ErrInvalidOptions, replicas, maxAge)
	}
	if maxAge == 0 {
		maxAge = DefaultRoutingHistoryAge
	}
	ctx, cancel := withDefaultTimeout(ctx, DefaultTimeout)
	defer cancel()
	if _, err := js.Stream(ctx, RoutingStream); errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("cnats: provision routing history: %w: %s: %w", ErrStreamNotFound, RoutingStream, err)
	} else if err != nil {
		return nil, fmt.Errorf("cnats: provision routing history: %w", err)
	}
	var st jetstream.Stream
	err := RetryIdempotent(ctx, func(ctx context.Context) (err error) {
		st, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:              RoutingHistoryStream,
			Description:       "cutover: every revision of every routing document, for lock-change watchers (kvrouting.Store.Watch)",
			Mirror:            &jetstream.StreamSource{Name: RoutingStream},
			MaxMsgsPerSubject: -1,
			MaxMsgs:           -1,
			MaxBytes:          RoutingHistoryMaxBytes,
			MaxAge:            maxAge,
			MaxConsumers:      -1,
			Storage:           jetstream.MemoryStorage,
			Replicas:          replicas,
			DenyDelete:        true,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cnats: provision routing history: %w", err)
	}
	return st, nil
}

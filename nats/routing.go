package cnats

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/nats/natsclient"
)

// Names of the routing bucket (DESIGN.md "The routing document").
const (
	// RoutingBucket is the KV bucket holding one routing document per
	// logical resource.
	RoutingBucket = natsclient.RoutingBucket
	// RoutingStream is the JetStream stream behind RoutingBucket.
	RoutingStream = natsclient.RoutingStream
	// RoutingSubjectPrefix prefixes every key's subject in RoutingStream.
	RoutingSubjectPrefix = natsclient.RoutingSubjectPrefix
)

// Routing bucket defaults (natsclient.DefaultRoutingHistory,
// natsclient.MaxReplicas).
const (
	// DefaultRoutingHistory keeps a few migrations' revisions per key.
	DefaultRoutingHistory = natsclient.DefaultRoutingHistory
	// MaxReplicas is the largest replica count JetStream accepts.
	MaxReplicas = natsclient.MaxReplicas
)

// RoutingSubject returns the stream subject of a routing key,
// "$KV.ROUTING.<key>" (natsclient.RoutingSubject).
func RoutingSubject(key string) string { return natsclient.RoutingSubject(key) }

// DefaultReplicas returns the replica count for a cluster of nodes JetStream
// servers: min(3, nodes), and 1 for nodes <= 1 (natsclient.DefaultReplicas).
func DefaultReplicas(nodes int) int { return natsclient.DefaultReplicas(nodes) }

// RoutingConfig configures ProvisionRouting (natsclient.RoutingConfig).
type RoutingConfig = natsclient.RoutingConfig

// ProvisionRouting is natsclient.ProvisionRouting: it creates the ROUTING
// bucket, or updates it to cfg if it exists, and returns it.
func ProvisionRouting(ctx context.Context, js jetstream.JetStream, cfg RoutingConfig) (jetstream.KeyValue, error) {
	return natsclient.ProvisionRouting(ctx, js, cfg)
}

// RoutingEpochKey is natsclient.RoutingEpochKey: the ROUTING bucket's
// metadata key holding its epoch.
const RoutingEpochKey = natsclient.RoutingEpochKey

// RoutingEpoch is natsclient.RoutingEpoch: the ROUTING bucket's epoch.
func RoutingEpoch(ctx context.Context, js jetstream.JetStream) (string, error) {
	return natsclient.RoutingEpoch(ctx, js)
}

// ServedEpoch is the epoch a contract server checks its store against
// (contractnats.ServeOptions.RoutingEpoch): the ROUTING bucket's, or ""
// (nothing to check) while the deployment has no routing bucket yet.
func ServedEpoch(ctx context.Context, js jetstream.JetStream) (string, error) {
	e, err := natsclient.RoutingEpoch(ctx, js)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return "", nil
	}
	return e, err
}

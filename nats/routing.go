package cnats

import (
	"context"
	"fmt"

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

// Routing bucket defaults.
const (
	// DefaultRoutingHistory keeps a few migrations' revisions per key.
	// Compare-and-swap needs only the latest; the rest let an operator see
	// the lock states a document went through, and let the routing history
	// mirror (ProvisionRoutingHistory) copy every revision even while it
	// lags behind by a few.
	DefaultRoutingHistory uint8 = 16
	// MaxReplicas is the largest replica count JetStream accepts.
	MaxReplicas = 5
)

// RoutingSubject returns the stream subject of a routing key, for the get
// functions: "$KV.ROUTING.<key>". key must already be in KV's key alphabet.
func RoutingSubject(key string) string { return RoutingSubjectPrefix + key }

// DefaultReplicas returns the replica count for a cluster of nodes JetStream
// servers: min(3, nodes), and 1 for nodes <= 1.
func DefaultReplicas(nodes int) int {
	return max(1, min(3, nodes))
}

// RoutingConfig configures ProvisionRouting. Zero values mean the documented
// defaults.
type RoutingConfig struct {
	// Nodes is the number of JetStream servers in the cluster, used only to
	// default Replicas; 0 means a single server.
	Nodes int
	// Replicas is the stream replica count; 0 = DefaultReplicas(Nodes), i.e.
	// 3 on a cluster of 3 or more (DESIGN.md "Durability and hazards").
	Replicas int
	// History is the number of revisions kept per key (1..64); 0 =
	// DefaultRoutingHistory.
	History uint8
	// Storage is the storage type; the zero value is jetstream.FileStorage,
	// which the routing bucket must use to survive restarts.
	Storage jetstream.StorageType
	// Cluster places the bucket in this cluster (a supercluster's home
	// region); "" lets JetStream choose (the connected client's cluster).
	Cluster string
}

// withDefaults returns cfg with defaults applied, or an error wrapping
// ErrInvalidOptions.
func (cfg RoutingConfig) withDefaults() (RoutingConfig, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = DefaultReplicas(cfg.Nodes)
	}
	if cfg.History == 0 {
		cfg.History = DefaultRoutingHistory
	}
	switch {
	case cfg.Replicas < 1 || cfg.Replicas > MaxReplicas:
		return cfg, fmt.Errorf("%w: routing replicas %d", ErrInvalidOptions, cfg.Replicas)
	case cfg.History > jetstream.KeyValueMaxHistory:
		return cfg, fmt.Errorf("%w: routing history %d", ErrInvalidOptions, cfg.History)
	case cfg.Storage != jetstream.FileStorage && cfg.Storage != jetstream.MemoryStorage:
		return cfg, fmt.Errorf("%w: routing storage %v", ErrInvalidOptions, cfg.Storage)
	}
	return cfg, nil
}

// ProvisionRouting creates the ROUTING bucket, or updates it to cfg if it
// exists, and returns it. Calling it again with the same cfg changes nothing.
// Raising Replicas scales the stream up; changing Storage of an existing
// bucket is refused by the server. It applies DefaultTimeout when ctx has no
// deadline and returns ErrInvalidOptions or the wrapped JetStream error.
func ProvisionRouting(ctx context.Context, js jetstream.JetStream, cfg RoutingConfig) (jetstream.KeyValue, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := withDefaultTimeout(ctx, DefaultTimeout)
	defer cancel()
	var kv jetstream.KeyValue
	err = RetryIdempotent(ctx, func(ctx context.Context) (err error) {
		kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      RoutingBucket,
			Description: "cutover routing documents",
			History:     cfg.History,
			Storage:     cfg.Storage,
			Replicas:    cfg.Replicas,
			Placement:   InRegion(cfg.Cluster),
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cnats: provision %s: %w", RoutingBucket, err)
	}
	return kv, nil
}

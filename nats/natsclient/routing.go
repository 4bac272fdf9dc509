// Package natsclient is the client side of cutover's NATS layer:
// connecting, retrying idempotent JetStream calls, the routing bucket (its
// names and provisioning), the leader and direct gets, a mirror's health.
// It depends on nats.go only (not on nats-server), so the packages a
// downstream service imports — kvrouting, app/client, events,
// orchestrator, projector, services/contractnats — do not pull the server
// into its build; package cnats (the embedded servers) re-exports these
// names.
package natsclient

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Names of the routing bucket (DESIGN.md "The routing document").
const (
	// RoutingBucket is the KV bucket holding one routing document per
	// logical resource.
	RoutingBucket = "ROUTING"
	// RoutingStream is the JetStream stream behind RoutingBucket.
	RoutingStream = "KV_" + RoutingBucket
	// RoutingSubjectPrefix prefixes every key's subject in RoutingStream.
	RoutingSubjectPrefix = "$KV." + RoutingBucket + "."
	// RoutingHistoryStream mirrors RoutingStream keeping every revision
	// for days (cnats.ProvisionRoutingHistory).
	RoutingHistoryStream = "ROUTING_HISTORY"
)

// maxRegionLen keeps mirror stream names well inside JetStream's limits.
const maxRegionLen = 64

// ValidateRegion reports whether region can name a mirror: 1 to 64 of
// A-Z a-z 0-9 '-' '_' (the KV bucket alphabet). It returns an error wrapping
// ErrInvalidName. Regions are not sanitised, because two regions that
// sanitise to the same name would silently share a mirror.
func ValidateRegion(region string) error {
	if region == "" || len(region) > maxRegionLen {
		return fmt.Errorf("%w: region %q: length must be 1..%d", ErrInvalidName, region, maxRegionLen)
	}
	for _, r := range region {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
		if !ok {
			return fmt.Errorf("%w: region %q: character %q", ErrInvalidName, region, r)
		}
	}
	return nil
}

// MirrorBucket returns the bucket name of region's read replica of ROUTING,
// e.g. "ROUTING_MIRROR_eu-west". It does not validate region; the functions
// that create or read the mirror do (ValidateRegion).
func MirrorBucket(region string) string { return RoutingBucket + "_MIRROR_" + region }

// MirrorStream returns the stream name of region's mirror,
// "KV_" + MirrorBucket(region). Its subjects are those of ROUTING
// ("$KV.ROUTING.<key>"), so RoutingSubject works on it.
func MirrorStream(region string) string { return "KV_" + MirrorBucket(region) }

// MirrorHealth is what a mirror stream reports about its replication from
// the origin.
type MirrorHealth struct {
	// Lag is how many messages the mirror is behind the origin, as of the
	// last contact. It is only meaningful while Active is small.
	Lag uint64
	// Active is the time since the mirror last heard from the origin
	// (messages or the 1 s idle heartbeat). Negative means never.
	Active time.Duration
	// Err is the replication error the server reports, "" when healthy.
	Err string
}

// Fresh reports whether the mirror may serve reads under a staleness bound:
// no error, heard from the origin within maxSilence, and at most maxLag
// messages behind (DESIGN.md "Reading the routing document").
func (h MirrorHealth) Fresh(maxLag uint64, maxSilence time.Duration) bool {
	return h.Err == "" && h.Active >= 0 && h.Active <= maxSilence && h.Lag <= maxLag
}

// ReadMirrorHealth reads region's mirror stream info and returns its
// replication health. It returns ErrInvalidName, ErrStreamNotFound when the
// mirror does not exist, ErrNotMirror, or the wrapped JetStream error, and
// applies DefaultTimeout when ctx has no deadline.
func ReadMirrorHealth(ctx context.Context, js jetstream.JetStream, region string) (MirrorHealth, error) {
	if err := ValidateRegion(region); err != nil {
		return MirrorHealth{}, err
	}
	ctx, cancel := WithDefaultTimeout(ctx, DefaultTimeout)
	defer cancel()
	name := MirrorStream(region)
	st, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return MirrorHealth{}, fmt.Errorf("cnats: mirror health %s: %w: %w", name, ErrStreamNotFound, err)
	}
	if err != nil {
		return MirrorHealth{}, fmt.Errorf("cnats: mirror health %s: %w", name, err)
	}
	m := st.CachedInfo().Mirror
	if m == nil {
		return MirrorHealth{}, fmt.Errorf("cnats: mirror health %s: %w", name, ErrNotMirror)
	}
	h := MirrorHealth{Lag: m.Lag, Active: m.Active}
	if m.Error != nil {
		h.Err = m.Error.Description
		if h.Err == "" {
			h.Err = m.Error.Error()
		}
	}
	return h, nil
}

// Routing bucket defaults.
const (
	// DefaultRoutingHistory keeps a few migrations' revisions per key.
	// Compare-and-swap needs only the latest; the rest let an operator see
	// the lock states a document went through, and let the routing history
	// mirror (cnats.ProvisionRoutingHistory) copy every revision even while
	// it lags behind by a few.
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

// InRegion is the JetStream placement of a stream in region's cluster; nil
// (JetStream chooses) for "".
func InRegion(region string) *jetstream.Placement {
	if region == "" {
		return nil
	}
	return &jetstream.Placement{Cluster: region}
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

// RoutingEpochKey is the ROUTING bucket's metadata key that holds its
// epoch: an identifier of this bucket's stream, set when it is created and
// kept by every later ProvisionRouting. Routing revisions are the stream's
// sequence numbers, the only fencing token the stores keep
// (contract.Authority); a stream deleted and created again restarts them,
// and a store holding revisions of the old stream would then refuse
// requests as stale, or worse, take a new revision for an old one. The
// epoch tells the two streams apart: services keep the epoch they served
// under and refuse to start under another (contractnats.ServeOptions).
const RoutingEpochKey = "cutover.epoch"

// ProvisionRouting creates the ROUTING bucket, or updates it to cfg if it
// exists, and returns it. Calling it again with the same cfg changes nothing.
// Raising Replicas scales the stream up; changing Storage of an existing
// bucket is refused by the server. A new bucket gets a new epoch
// (RoutingEpochKey); an existing one keeps its own, and one provisioned
// before epochs existed gets one derived from its stream's creation time.
// It applies DefaultTimeout when ctx has no deadline and returns
// ErrInvalidOptions or the wrapped JetStream error.
func ProvisionRouting(ctx context.Context, js jetstream.JetStream, cfg RoutingConfig) (jetstream.KeyValue, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancel := WithDefaultTimeout(ctx, DefaultTimeout)
	defer cancel()
	var kv jetstream.KeyValue
	provision := func(ctx context.Context) error {
		kc := jetstream.KeyValueConfig{
			Bucket:      RoutingBucket,
			Description: "cutover routing documents",
			History:     cfg.History,
			Storage:     cfg.Storage,
			Replicas:    cfg.Replicas,
			Placement:   InRegion(cfg.Cluster),
		}
		old, err := js.KeyValue(ctx, RoutingBucket)
		switch {
		case errors.Is(err, jetstream.ErrBucketNotFound):
			// Created, never updated: of two provisioners racing to
			// create the bucket, one epoch wins and the other retries as
			// an update that keeps it.
			kc.Metadata = map[string]string{RoutingEpochKey: newEpoch()}
			kv, err = js.CreateKeyValue(ctx, kc)
			if errors.Is(err, jetstream.ErrBucketExists) {
				return errRetryEpoch
			}
			return err
		case err != nil:
			return err
		}
		epoch, err := epochOf(ctx, old)
		if err != nil {
			return err
		}
		kc.Metadata = map[string]string{RoutingEpochKey: epoch}
		kv, err = js.UpdateKeyValue(ctx, kc)
		return err
	}
	for range 3 {
		if err = RetryIdempotent(ctx, provision); !errors.Is(err, errRetryEpoch) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cnats: provision %s: %w", RoutingBucket, err)
	}
	return kv, nil
}

// errRetryEpoch is a lost race to create the bucket: provision again.
var errRetryEpoch = errors.New("the routing bucket was created meanwhile")

// RoutingEpoch returns the ROUTING bucket's epoch (RoutingEpochKey), or
// the wrapped JetStream error. A bucket with none (provisioned before
// epochs existed, not provisioned since) has the one its stream's creation
// time gives, as ProvisionRouting would set.
func RoutingEpoch(ctx context.Context, js jetstream.JetStream) (string, error) {
	ctx, cancel := WithDefaultTimeout(ctx, DefaultTimeout)
	defer cancel()
	kv, err := js.KeyValue(ctx, RoutingBucket)
	if err != nil {
		return "", fmt.Errorf("cnats: routing epoch: %w", err)
	}
	epoch, err := epochOf(ctx, kv)
	if err != nil {
		return "", fmt.Errorf("cnats: routing epoch: %w", err)
	}
	return epoch, nil
}

func epochOf(ctx context.Context, kv jetstream.KeyValue) (string, error) {
	st, err := kv.Status(ctx)
	if err != nil {
		return "", err
	}
	if e := st.Metadata()[RoutingEpochKey]; e != "" {
		return e, nil
	}
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok {
		return "created-" + strconv.FormatInt(bs.StreamInfo().Created.UnixNano(), 36), nil
	}
	return "", fmt.Errorf("bucket %s: no epoch and no stream info", RoutingBucket)
}

// newEpoch is a fresh epoch: 16 random bytes, hex.
func newEpoch() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

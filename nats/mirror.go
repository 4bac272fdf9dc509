package cnats

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/nats/natsclient"
)

// ValidateRegion is natsclient.ValidateRegion.
func ValidateRegion(region string) error { return natsclient.ValidateRegion(region) }

// MirrorBucket is natsclient.MirrorBucket ("ROUTING_MIRROR_<region>").
func MirrorBucket(region string) string { return natsclient.MirrorBucket(region) }

// MirrorStream is natsclient.MirrorStream ("KV_ROUTING_MIRROR_<region>").
func MirrorStream(region string) string { return natsclient.MirrorStream(region) }

// ProvisionMirror creates or updates region's read replica of ROUTING: a
// stream mirroring KV_ROUTING with the same per-key history, with direct gets
// allowed on the mirror itself (AllowDirect), so DirectGetLast on
// MirrorStream(region) reads it; cutover judges its staleness with
// ReadMirrorHealth. replicas 0 means 1. ROUTING must exist
// (ProvisionRouting); otherwise it returns ErrStreamNotFound. It also returns
// ErrInvalidName, ErrInvalidOptions or the wrapped JetStream error, and
// applies DefaultTimeout when ctx has no deadline.
//
// The request asks for MirrorDirect false (the mirror should not answer the
// origin's direct gets), but nats-server 2.15 overrides MirrorDirect with the
// origin's AllowDirect whenever it can see the origin (same account and
// domain, as in one cluster or a supercluster). KV_ROUTING allows direct
// gets, so such a mirror, once within 10 messages of the origin, joins the
// queue group for $JS.API.DIRECT.GET.KV_ROUTING and keeps answering it even
// if it later falls behind. Direct gets on KV_ROUTING (jetstream.KeyValue.Get)
// can therefore be answered by a mirror: they are for unlocked lookups only;
// lock enforcement uses LeaderGetLast (DESIGN.md "Reading the routing
// document"). A mirror in another JetStream domain keeps MirrorDirect false.
//
// In a supercluster, MirrorInCluster places the mirror in region's cluster.
//
// A new one-replica mirror persists asynchronously (PersistMode async): it
// is a cache of ROUTING, never the record — a server that restarts having
// lost its unsynced tail resumes mirroring from its last sequence, and until
// then it answers like any mirror that lags, which every reader of it
// already allows for (lock enforcement reads the leader; a store refuses a
// request routed by an older revision "moved"). On a server with sync
// always, a synced mirror cost one fsync more per routing write (4 of a
// migration's ~45 on one node). nats-server cannot change a stream's persist
// mode, so an existing mirror keeps its own; asking for more than one
// replica of an asynchronous mirror returns ErrInvalidOptions (delete the
// mirror first: `nats stream rm KV_ROUTING_MIRROR_<region>`).
func ProvisionMirror(ctx context.Context, js jetstream.JetStream, region string, replicas int, opts ...MirrorOption) (jetstream.Stream, error) {
	var mo mirrorOptions
	for _, o := range opts {
		o(&mo)
	}
	if err := ValidateRegion(region); err != nil {
		return nil, err
	}
	if replicas == 0 {
		replicas = 1
	}
	if replicas < 1 || replicas > MaxReplicas {
		return nil, fmt.Errorf("%w: mirror replicas %d", ErrInvalidOptions, replicas)
	}
	ctx, cancel := withDefaultTimeout(ctx, DefaultTimeout)
	defer cancel()

	origin, err := js.Stream(ctx, RoutingStream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("cnats: provision mirror %s: %w: %s: %w", region, ErrStreamNotFound, RoutingStream, err)
	}
	if err != nil {
		return nil, fmt.Errorf("cnats: provision mirror %s: %w", region, err)
	}
	oc := origin.CachedInfo().Config

	mode := jetstream.DefaultPersistMode
	if replicas == 1 {
		mode = jetstream.AsyncPersistMode
	}
	old, err := js.Stream(ctx, MirrorStream(region))
	switch {
	case err == nil:
		mode = old.CachedInfo().Config.PersistMode
		if mode == jetstream.AsyncPersistMode && replicas > 1 {
			return nil, fmt.Errorf("cnats: provision mirror %s: %w: %s persists asynchronously, which nats-server allows one replica only; delete it to provision %d", region, ErrInvalidOptions, MirrorStream(region), replicas)
		}
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, fmt.Errorf("cnats: provision mirror %s: %w", region, err)
	}

	var st jetstream.Stream
	err = RetryIdempotent(ctx, func(ctx context.Context) (err error) {
		st, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:              MirrorStream(region),
			Description:       "cutover read replica of " + RoutingBucket + " for region " + region,
			Mirror:            &jetstream.StreamSource{Name: RoutingStream},
			MaxMsgsPerSubject: oc.MaxMsgsPerSubject,
			MaxMsgs:           -1,
			MaxBytes:          -1,
			MaxConsumers:      -1,
			Storage:           jetstream.FileStorage,
			PersistMode:       mode,
			Replicas:          replicas,
			AllowDirect:       true,
			MirrorDirect:      false,
			AllowRollup:       true,
			DenyDelete:        true,
			Placement:         InRegion(mo.cluster),
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cnats: provision mirror %s: %w", region, err)
	}
	return st, nil
}

// MirrorOption is an extra of ProvisionMirror.
type MirrorOption func(*mirrorOptions)

type mirrorOptions struct{ cluster string }

// MirrorInCluster places the mirror in cluster (JetStream placement), e.g.
// the region's own cluster of a supercluster.
func MirrorInCluster(cluster string) MirrorOption {
	return func(o *mirrorOptions) { o.cluster = cluster }
}

// MirrorHealth is natsclient.MirrorHealth.
type MirrorHealth = natsclient.MirrorHealth

// ReadMirrorHealth is natsclient.ReadMirrorHealth.
func ReadMirrorHealth(ctx context.Context, js jetstream.JetStream, region string) (MirrorHealth, error) {
	return natsclient.ReadMirrorHealth(ctx, js, region)
}

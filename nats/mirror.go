package cnats

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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
	ctx, cancel := withDefaultTimeout(ctx, DefaultTimeout)
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

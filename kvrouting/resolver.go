package kvrouting

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	cnats "github.com/cutover/cutover/nats/natsclient"
	"github.com/nats-io/nats.go/jetstream"
)

// ResolverConfig configures a Resolver. Zero values mean defaults.
type ResolverConfig struct {
	// Region is where the resolving process runs (its mirror is used).
	Region string
	// Tiers are the cache tiers, fastest first (default: one service-local
	// tier of 2 s — the dev setting; production uses hours).
	Tiers []*Tier
	// MirrorRegion names the region whose read replica (a KV mirror made by
	// cnats.ProvisionMirror) this resolver reads on a miss; "" for none.
	MirrorRegion string
	// JS is used to read the mirror's health; required with MirrorRegion.
	JS jetstream.JetStream
	// ReplicationBound is the staleness bound a mirror must meet to be
	// read (paper 000 §2.4: bounded staleness, 5 min there). Default 5 s.
	ReplicationBound time.Duration
	// HealthInterval is how often the mirror's health is re-read (default
	// ReplicationBound/4).
	HealthInterval time.Duration
	// ClockSkew is the margin applied to lock start and expiry (default 2 s).
	ClockSkew time.Duration
	// Clock is the time source (default time.Now).
	Clock func() time.Time
}

// EnsureDefaults fills zero fields.
func (c *ResolverConfig) EnsureDefaults() {
	if len(c.Tiers) == 0 {
		c.Tiers = []*Tier{NewTier("local", 2*time.Second, 0)}
	}
	if c.ReplicationBound == 0 {
		c.ReplicationBound = 5 * time.Second
	}
	if c.HealthInterval == 0 {
		c.HealthInterval = c.ReplicationBound / 4
	}
	if c.ClockSkew == 0 {
		c.ClockSkew = 2 * time.Second
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
}

// Source says where a resolution came from.
type Source uint8

// Sources of a resolved document.
const (
	FromCache Source = iota
	FromMirror
	FromLeader // a non-direct get answered by the stream leader
)

var sourceNames = [...]string{"cache", "mirror", "leader"}

// String returns the source's name.
func (s Source) String() string { return sourceNames[s] }

// Resolution is a resolved routing document and where it came from.
type Resolution struct {
	Doc    *Document
	Source Source
}

// Resolver resolves routing documents through the cache tiers (paper 000
// §3.2, Listing 1). A cache hit is served unless the cached document
// carries a lock that has started, in force or lapsed (Document.Cacheable);
// then, and whenever a freshly read document
// carries one, the resolver reads through to the stream leader. A miss reads
// the region's mirror when it is within the staleness bound, else the
// leader. Safe for concurrent use.
type Resolver struct {
	store        *Store
	cfg          ResolverConfig
	mirrorStream string

	health struct {
		sync.Mutex
		checked     time.Time
		caughtUp    time.Time // last time the mirror was seen with lag 0 and recent contact
		usable      bool
		lastErr     error
		checkFlight bool
	}
	readThroughs, mirrorSkips atomic.Uint64
}

// NewResolver returns a resolver over store.
func NewResolver(store *Store, cfg ResolverConfig) (*Resolver, error) {
	cfg.EnsureDefaults()
	r := &Resolver{store: store, cfg: cfg}
	if cfg.MirrorRegion != "" {
		if cfg.JS == nil {
			return nil, invalidf("mirror region %q without a JetStream handle", cfg.MirrorRegion)
		}
		r.mirrorStream = cnats.MirrorStream(cfg.MirrorRegion)
	}
	store.noteResolver(r.ConvergenceDelay())
	return r, nil
}

// Config returns the effective configuration.
func (r *Resolver) Config() ResolverConfig { return r.cfg }

// ConvergenceDelay is max tier TTL + replication bound (paper 000 §4.1):
// after this long every tier has dropped any copy older than a pre-lock.
func (r *Resolver) ConvergenceDelay() time.Duration {
	var m time.Duration
	for _, t := range r.cfg.Tiers {
		m = max(m, t.TTL())
	}
	return m + r.cfg.ReplicationBound
}

// ReadThroughs returns how many resolutions read through to the leader
// because of an active lock, and how many times an unhealthy mirror was
// skipped.
func (r *Resolver) ReadThroughs() (readThroughs, mirrorSkips uint64) {
	return r.readThroughs.Load(), r.mirrorSkips.Load()
}

// Resolve returns the routing document of res. Errors: ErrNotFound,
// ErrMalformed, ErrSchemaVersion, ErrUnavailable, ErrInvalid.
func (r *Resolver) Resolve(ctx context.Context, res Resource) (Resolution, error) {
	if err := res.Validate(); err != nil {
		return Resolution{}, err
	}
	key := res.Key()
	now := r.cfg.Clock()
	for i, t := range r.cfg.Tiers {
		doc, fetched, ok := t.get(key, now)
		if !ok {
			continue
		}
		if !doc.Cacheable(now, r.cfg.ClockSkew) {
			// paper 000 §3.2: a cached record with an active lock is never
			// trusted; the orchestrator may have moved it since. Nor is one
			// whose lock has lapsed (Document.Cacheable).
			return r.readThrough(ctx, res, key)
		}
		for _, up := range r.cfg.Tiers[:i] {
			up.put(key, doc, fetched)
		}
		return Resolution{Doc: doc, Source: FromCache}, nil
	}
	doc, src, err := r.readMiss(ctx, res)
	if err != nil {
		return Resolution{}, err
	}
	if src == FromMirror && !doc.Cacheable(r.cfg.Clock(), r.cfg.ClockSkew) {
		// A replica's view of a locked document is never used for
		// enforcement (paper 000 §5.4, "What five minutes of staleness does").
		return r.readThrough(ctx, res, key)
	}
	r.fill(key, doc, now)
	return Resolution{Doc: doc, Source: src}, nil
}

// ResolveLeader bypasses the caches and reads the leader (tooling, tests).
func (r *Resolver) ResolveLeader(ctx context.Context, res Resource) (Resolution, error) {
	if err := res.Validate(); err != nil {
		return Resolution{}, err
	}
	return r.readThrough(ctx, res, res.Key())
}

func (r *Resolver) readThrough(ctx context.Context, res Resource, key string) (Resolution, error) {
	r.readThroughs.Add(1)
	now := r.cfg.Clock()
	doc, err := r.store.GetLeader(ctx, res)
	if err != nil {
		return Resolution{}, err
	}
	r.fill(key, doc, now)
	return Resolution{Doc: doc, Source: FromLeader}, nil
}

func (r *Resolver) fill(key string, doc *Document, fetched time.Time) {
	for _, t := range r.cfg.Tiers {
		t.put(key, doc, fetched)
	}
}

func (r *Resolver) readMiss(ctx context.Context, res Resource) (*Document, Source, error) {
	if r.mirrorStream != "" {
		if r.mirrorUsable(ctx) {
			doc, err := r.store.GetMirror(ctx, r.mirrorStream, res)
			if err == nil {
				return doc, FromMirror, nil
			}
			// A mirror that lacks the key may simply lag behind a fresh
			// Register; fall through to the leader on any mirror error.
		} else {
			r.mirrorSkips.Add(1)
		}
	}
	// Not a direct get on the origin: nats-server lets a caught-up mirror
	// join the origin's direct-get queue group (it overrides MirrorDirect),
	// so an origin direct get may be answered by the very mirror we just
	// judged stale. The leader is the only read whose staleness we know.
	doc, err := r.store.GetLeader(ctx, res)
	if err != nil {
		return nil, 0, err
	}
	return doc, FromLeader, nil
}

// MirrorUsable reports whether the region's mirror currently meets the
// staleness bound.
func (r *Resolver) MirrorUsable(ctx context.Context) bool {
	return r.mirrorStream != "" && r.mirrorUsable(ctx)
}

// mirrorUsable enforces the bounded staleness the paper gets from its store
// (paper 000 §2.4): a mirror is read only if it was seen fully caught up
// (lag 0, recent contact with the origin) within the replication bound.
func (r *Resolver) mirrorUsable(ctx context.Context) bool {
	now := r.cfg.Clock()
	r.health.Lock()
	stale := now.Sub(r.health.checked) >= r.cfg.HealthInterval
	if stale && !r.health.checkFlight {
		r.health.checkFlight = true
		r.health.Unlock()
		h, err := cnats.ReadMirrorHealth(ctx, r.cfg.JS, r.cfg.MirrorRegion)
		r.health.Lock()
		r.health.checkFlight = false
		r.health.checked = now
		r.health.lastErr = err
		if err == nil && h.Fresh(0, r.cfg.ReplicationBound) {
			r.health.caughtUp = now.Add(-h.Active)
		}
	}
	usable := !r.health.caughtUp.IsZero() && now.Sub(r.health.caughtUp) <= r.cfg.ReplicationBound
	r.health.usable = usable
	r.health.Unlock()
	return usable
}

// MirrorError returns the last error from reading the mirror's health.
func (r *Resolver) MirrorError() error {
	r.health.Lock()
	defer r.health.Unlock()
	if r.health.lastErr != nil {
		return fmt.Errorf("%w: mirror health: %w", ErrUnavailable, r.health.lastErr)
	}
	return nil
}

// Decide resolves res and applies the decision table for an operation of
// class op at region (the caller's region, or the region a request was
// dispatched to).
func (r *Resolver) Decide(ctx context.Context, res Resource, region string, op OpClass) (Decision, *Document, error) {
	rs, err := r.Resolve(ctx, res)
	if err != nil {
		return Decision{}, nil, err
	}
	return Decide(rs.Doc, region, op, r.cfg.Clock(), r.cfg.ClockSkew), rs.Doc, nil
}

package kvrouting

import (
	"context"
	"errors"
	"testing"
	"time"

	cnats "github.com/cutover/cutover/nats"
	"github.com/nats-io/nats.go/jetstream"
)

func newResolver(t *testing.T, e *env, cfg ResolverConfig) *Resolver {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = e.clock.Now
	}
	cfg.ClockSkew = time.Second
	r, err := NewResolver(e.store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReadThrough: a cached unlocked record costs zero store reads; a cached
// locked record is re-read from the leader every time (paper 000 §3.2).
func TestReadThrough(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	local := NewTier("local", time.Minute, 0)
	regional := NewTier("regional", 5*time.Minute, 0)
	r := newResolver(t, e, ResolverConfig{Tiers: []*Tier{local, regional}, ReplicationBound: 10 * time.Second})
	if got, want := r.ConvergenceDelay(), 5*time.Minute+10*time.Second; got != want {
		t.Fatalf("convergence delay %v, want %v", got, want)
	}
	res := mustRegister(t, e, "rt", "us-east")

	rs, err := r.Resolve(ctx, res)
	if err != nil || rs.Source != FromLeader {
		t.Fatalf("first resolve: %v %v", err, rs.Source)
	}
	before := e.store.Stats()
	for i := 0; i < 100; i++ {
		rs, err := r.Resolve(ctx, res)
		if err != nil || rs.Source != FromCache {
			t.Fatalf("cached resolve: %v %v", err, rs.Source)
		}
	}
	if n := e.store.Stats().Reads() - before.Reads(); n != 0 {
		t.Fatalf("100 cached unlocked resolves cost %d store reads, want 0", n)
	}

	// Lock it behind the cache's back; the stale cached copy is still served
	// until the TTL (that is what the convergence wait is for).
	g, err := e.lk.PreLock(ctx, res, "eu-west", "m1")
	if err != nil {
		t.Fatal(err)
	}
	if rs, _ := r.Resolve(ctx, res); rs.Source != FromCache || !rs.Doc.Primary.Lock.IsZero() {
		t.Fatalf("within TTL the old copy is served: %v", rs.Source)
	}
	// After the local TTL, the regional tier still has the unlocked copy.
	e.clock.Advance(time.Minute)
	if rs, _ := r.Resolve(ctx, res); rs.Source != FromCache || !rs.Doc.Primary.Lock.IsZero() {
		t.Fatalf("regional tier serves: %v", rs.Source)
	}
	// After the max TTL the document is re-fetched and carries the pre-lock.
	e.clock.Advance(5 * time.Minute)
	rs, err = r.Resolve(ctx, res)
	if err != nil || rs.Doc.Primary.Lock.Type != LockPre {
		t.Fatalf("after convergence: %v %+v", err, rs.Doc)
	}
	// pre-lock's not-before has passed (30 s): the lock is active, so every
	// resolve now reads through to the leader.
	e.clock.Advance(31 * time.Second)
	before = e.store.Stats()
	for i := 0; i < 5; i++ {
		rs, err := r.Resolve(ctx, res)
		if err != nil || rs.Source != FromLeader {
			t.Fatalf("locked resolve %d: %v %v", i, err, rs.Source)
		}
	}
	if n := e.store.Stats().LeaderReads - before.LeaderReads; n != 5 {
		t.Fatalf("5 locked resolves cost %d leader reads, want 5", n)
	}
	// Escalation is seen immediately through read-through.
	if _, err := e.lk.EscalateHardDelete(ctx, res, g.Token, nil); err != nil {
		t.Fatal(err)
	}
	dec, _, err := r.Decide(ctx, res, "us-east", OpDelete)
	if err != nil || dec.Outcome != Tombstone {
		t.Fatalf("decide delete under hard-delete: %v %v", err, dec.Outcome)
	}
}

// TestMirror: a miss reads the region's mirror when it is fresh; a mirror
// beyond its staleness bound is never used.
func TestMirror(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	if _, err := cnats.ProvisionMirror(ctx, e.js, "eu-west", 1); err != nil {
		t.Fatal(err)
	}
	res := mustRegister(t, e, "mir", "us-east")
	r := newResolver(t, e, ResolverConfig{
		Tiers: []*Tier{NewTier("local", time.Millisecond, 0)}, MirrorRegion: "eu-west", JS: e.js,
		ReplicationBound: 5 * time.Second, Clock: time.Now,
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		rs, err := r.Resolve(ctx, res)
		if err == nil && rs.Source == FromMirror {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mirror never used: %v %v", err, rs.Source)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A mirror that cannot reach its origin: never fresh, never read.
	const broken = "ap-south"
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{
		Name: cnats.MirrorStream(broken), AllowDirect: true,
		Mirror: &jetstream.StreamSource{Name: "KV_ROUTING", External: &jetstream.ExternalStream{APIPrefix: "$JS.nowhere.API"}},
	}); err != nil {
		t.Fatal(err)
	}
	rb := newResolver(t, e, ResolverConfig{
		Tiers: []*Tier{NewTier("local", time.Millisecond, 0)}, MirrorRegion: broken, JS: e.js,
		ReplicationBound: time.Second, HealthInterval: 10 * time.Millisecond, Clock: time.Now,
	})
	before := e.store.Stats()
	for i := 0; i < 20; i++ {
		rs, err := rb.Resolve(ctx, res)
		if err != nil || rs.Source != FromLeader {
			t.Fatalf("resolve with stale mirror: %v %v", err, rs.Source)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if n := e.store.Stats().MirrorReads - before.MirrorReads; n != 0 {
		t.Fatalf("stale mirror was read %d times", n)
	}
	if _, skips := rb.ReadThroughs(); skips == 0 {
		t.Fatal("mirror skips not counted")
	}
}

// TestMalformed: garbage bytes or an unknown schemaVersion give a clear
// error, never a panic and never "unlocked".
func TestMalformed(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	r := newResolver(t, e, ResolverConfig{})
	future, _ := msgpackMarshal(&Document{SchemaVersion: 99, Resource: "conv/x", Primary: Location{Region: "us-east"}})
	cases := map[string]struct {
		val  []byte
		want error
	}{
		"garbage":        {[]byte{0xc1, 0xff, 0x00, 0x13}, ErrMalformed},
		"json":           {[]byte(`{"primary":"us-east"}`), ErrMalformed},
		"schema-99":      {future, ErrSchemaVersion},
		"no-region":      {mustEncode(t, &Document{Resource: "conv/x"}), ErrMalformed},
		"lock-no-token":  {mustEncode(t, &Document{Resource: "conv/x", Primary: Location{Region: "a", Lock: Lock{Type: LockWrite, Expiry: time.Now()}}}), ErrMalformed},
		"bad-lock-type":  {mustEncode(t, &Document{Resource: "conv/x", Primary: Location{Region: "a", Lock: Lock{Type: 77, Token: "t", Expiry: time.Now()}}}), ErrMalformed},
		"secondary-on-p": {mustEncode(t, &Document{Resource: "conv/x", Primary: Location{Region: "a", Lock: Lock{Type: LockSecondary, Token: "t", Expiry: time.Now()}}}), ErrMalformed},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			res := Resource{Kind: "conv", ID: "bad-" + name}
			if _, err := e.store.KV().Put(ctx, res.Key(), c.val); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Resolve(ctx, res); !errors.Is(err, c.want) {
				t.Fatalf("resolve: %v, want %v", err, c.want)
			}
			if _, _, err := r.Decide(ctx, res, "us-east", OpUpdate); !errors.Is(err, c.want) {
				t.Fatalf("decide: %v, want %v", err, c.want)
			}
			if _, err := e.lk.PreLock(ctx, res, "eu-west", "m"); !errors.Is(err, c.want) {
				t.Fatalf("pre-lock: %v, want %v", err, c.want)
			}
			if _, err := e.store.GetLeader(ctx, res); !errors.Is(err, c.want) {
				t.Fatalf("leader get: %v", err)
			}
		})
	}
	if _, err := r.Resolve(ctx, Resource{Kind: "conv", ID: "absent"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("absent: %v", err)
	}
}

func mustEncode(t *testing.T, d *Document) []byte {
	t.Helper()
	b, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDecodeDocument: no input panics; any accepted input re-encodes to a
// document that decodes equal.
func FuzzDecodeDocument(f *testing.F) {
	good := &Document{Resource: "conv/x", Primary: Location{Region: "us-east", Lock: Lock{Type: LockPre, Token: "t", Expiry: time.Unix(1e9, 0)}}}
	b, _ := good.Encode()
	f.Add(b)
	f.Add([]byte{})
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := DecodeDocument(data, 1)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrSchemaVersion) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		b, err := d.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeDocument(b, 1); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

// TestLapsedLockIsNotCached is issue 14 #6: a document cached while the
// write lock was held names the source; once the resource has swapped and
// the lock's expiry has passed, the resolver must not serve that copy for
// the rest of the cache's lifetime (an hour here), but read through and name
// the new primary.
func TestLapsedLockIsNotCached(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	r := newResolver(t, e, ResolverConfig{Tiers: []*Tier{NewTier("local", time.Hour, 0)}})
	res := mustRegister(t, e, "lapsed", "us-east")
	g, err := e.lk.PreLock(ctx, res, "eu-west", "m1")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(e.lk.Config().ConvergenceDelay + 2*e.lk.Config().ClockSkew)
	doc, err := e.lk.EscalateHardDelete(ctx, res, g.Token, g.Doc)
	if err != nil {
		t.Fatal(err)
	}
	doc, err = e.lk.EscalateWrite(ctx, res, g.Token, doc)
	if err != nil {
		t.Fatal(err)
	}
	// Phase 3: the resolver caches the write-locked document (primary = source).
	rs, err := r.Resolve(ctx, res)
	if err != nil || rs.Doc.Primary.Region != "us-east" || rs.Doc.Primary.Lock.Type != LockWrite {
		t.Fatalf("resolve under the write lock: %v %+v", err, rs.Doc)
	}
	if _, err := e.lk.Swap(ctx, res, g.Token, doc); err != nil {
		t.Fatal(err)
	}
	// The write lock's expiry (and the skew) pass; the cached copy is
	// younger than the cache's hour.
	e.clock.Advance(e.lk.Config().WriteLease + 2*e.lk.Config().ClockSkew)
	rs, err = r.Resolve(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Doc.Primary.Region != "eu-west" {
		t.Fatalf("after the swap and the lock's expiry the resolver names %s (from %s), want eu-west", rs.Doc.Primary.Region, rs.Source)
	}
	// The swapped document carries no primary lock: it is cached again.
	if rs, err := r.Resolve(ctx, res); err != nil || rs.Source != FromCache {
		t.Fatalf("swapped document not cached: %v %v", err, rs.Source)
	}
}

// Library defaults are safe together (issue 17 #6): a Locker whose config
// leaves ConvergenceDelay at zero, next to a caching Resolver on the same
// Store, still makes the pre-lock wait out the resolver's cache, so the
// resolver's unlocked copy can never decide "allow" for a new write under
// the write lock. FenceConvergence (every enforcer also checks a store
// fence) is the explicit way to wait for nothing.
func TestZeroConvergenceDelayIsSafeWithACachingResolver(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	cfg := testLockConfig(e.clock)
	cfg.ConvergenceDelay = 0
	lk, err := NewLocker(e.store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := NewResolver(e.store, ResolverConfig{Tiers: []*Tier{NewTier("local", time.Hour, 0)}, ClockSkew: time.Second,
		ReplicationBound: time.Second, Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	res := mustRegister(t, e, "safe", "us")
	if _, err := rv.Resolve(ctx, res); err != nil { // the cache holds the unlocked copy
		t.Fatal(err)
	}
	if got := lk.Config().ConvergenceDelay; got < rv.ConvergenceDelay() {
		t.Fatalf("effective convergence delay %s, below the resolver's %s", got, rv.ConvergenceDelay())
	}
	g, err := lk.PreLock(ctx, res, "eu", "m1")
	if err != nil {
		t.Fatal(err)
	}
	// The escalation cannot follow before the cache has expired ...
	if _, err := lk.EscalateHardDelete(ctx, res, g.Token, g.Doc); !errors.Is(err, ErrNotConverged) {
		t.Fatalf("escalation right after the pre-lock: %v, want ErrNotConverged", err)
	}
	// ... and once it may, the cached copy is gone: the resolver reads
	// through and sees the lock.
	e.clock.Advance(rv.ConvergenceDelay() + 2*time.Second)
	d, err := lk.EscalateHardDelete(ctx, res, g.Token, g.Doc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lk.EscalateWrite(ctx, res, g.Token, d); err != nil {
		t.Fatal(err)
	}
	r, err := rv.Resolve(ctx, res)
	if err != nil {
		t.Fatal(err)
	}
	if dec := Decide(r.Doc, "us", OpNewWrite, e.clock.Now(), time.Second); dec.Outcome == Allow {
		t.Fatalf("a new write allowed under the write lock: %+v (served %s)", dec, r.Source)
	}

	// FenceConvergence: no wait, by declaration.
	fcfg := testLockConfig(e.clock)
	fcfg.ConvergenceDelay, fcfg.FenceConvergence = 0, true
	flk, err := NewLocker(e.store, fcfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := flk.Config().ConvergenceDelay; got != 0 {
		t.Fatalf("fence convergence: delay %s, want 0", got)
	}
}

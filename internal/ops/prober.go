package ops

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/cutover/cutover/kvrouting"
	"github.com/nats-io/nats.go/jetstream"
)

// prober runs one probe cycle.
type prober struct {
	st             *kvrouting.Store
	cfg            ProbeTimings
	lk             *kvrouting.Locker
	warm           *kvrouting.Resolver
	res            kvrouting.Resource
	region, target string
	delay          time.Duration
	results        []ProbeAssertion
	print          func(ProbeAssertion)
	lastDoc        *kvrouting.Document
}

func newProber(st *kvrouting.Store, cfg ProbeTimings, region, target string) (*prober, error) {
	p := &prober{st: st, cfg: cfg, region: region, target: target, print: func(ProbeAssertion) {}}
	var b [4]byte
	_, _ = rand.Read(b[:])
	p.res = kvrouting.Resource{Kind: "conv", ID: "probe-" + hex.EncodeToString(b[:])}
	var err error
	if p.warm, err = p.resolver(); err != nil {
		return nil, err
	}
	p.delay = p.warm.ConvergenceDelay()
	lc := cfg.Locks
	lc.ConvergenceDelay, lc.ClockSkew = p.delay, cfg.ClockSkew
	if p.lk, err = kvrouting.NewLocker(st, lc); err != nil {
		return nil, err
	}
	return p, nil
}

// resolver returns a resolver with empty cache tiers of the deployment's TTLs.
func (p *prober) resolver() (*kvrouting.Resolver, error) {
	var tiers []*kvrouting.Tier
	for i, ttl := range p.cfg.Tiers {
		tiers = append(tiers, kvrouting.NewTier(fmt.Sprintf("probe-t%d", i), ttl, 0))
	}
	return kvrouting.NewResolver(p.st, kvrouting.ResolverConfig{Region: p.region, Tiers: tiers,
		ReplicationBound: p.cfg.ReplicationBound, ClockSkew: p.cfg.ClockSkew})
}

func (p *prober) run(ctx context.Context) error {
	doc, err := p.lk.Register(ctx, p.res, p.region)
	if err != nil {
		return fmt.Errorf("register: %w", err)
	}
	p.lastDoc = doc
	// Warm a cache with the unlocked document, as a service's would be.
	if _, err := p.warm.Resolve(ctx, p.res); err != nil {
		return err
	}
	if err := p.stage(ctx, "unlocked", kvrouting.LockNone, false); err != nil {
		return err
	}
	g, err := p.lk.PreLock(ctx, p.res, p.target, "probe-"+p.res.ID)
	if err != nil {
		return fmt.Errorf("pre-lock: %w", err)
	}
	held := true
	defer func() {
		if held { // never leave a probe lock behind
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_, _ = p.lk.Release(rctx, p.res, g.Token, nil)
		}
	}()
	// paper 000 §4.1: no lock restricts anything before every cache has
	// converged; wait as the orchestrator does (not-before + skew + buffer).
	until := g.NotBefore.Add(p.cfg.ClockSkew + p.cfg.ConvergenceBuffer)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(until)):
	}
	if err := p.stage(ctx, "pre-lock", kvrouting.LockPre, true); err != nil {
		return err
	}
	d, err := p.lk.EscalateHardDelete(ctx, p.res, g.Token, g.Doc)
	if err != nil {
		return fmt.Errorf("escalate to hard-delete: %w", err)
	}
	if err := p.stage(ctx, "hard-delete", kvrouting.LockHardDelete, true); err != nil {
		return err
	}
	if d, err = p.lk.EscalateWrite(ctx, p.res, g.Token, d); err != nil {
		return fmt.Errorf("escalate to write: %w", err)
	}
	if err := p.stage(ctx, "write", kvrouting.LockWrite, true); err != nil {
		return err
	}
	if d, err = p.lk.Release(ctx, p.res, g.Token, d); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	held, p.lastDoc = false, d
	return p.stage(ctx, "released", kvrouting.LockNone, false)
}

// stage asserts the read path and Table 4 under the lock of one stage, at
// the source and, while a migration holds the resource, at the locked
// target.
func (p *prober) stage(ctx context.Context, stage string, lock kvrouting.LockType, locked bool) error {
	fresh, err := p.resolver()
	if err != nil {
		return err
	}
	for _, r := range []struct {
		name string
		r    *kvrouting.Resolver
	}{{"lock on read path", fresh}, {"lock on warm cache", p.warm}} {
		rs, err := r.r.Resolve(ctx, p.res)
		if err != nil {
			return err
		}
		got := fmt.Sprintf("%s (%s)", rs.Doc.Primary.Lock.Type, rs.Source)
		p.add(ProbeAssertion{Stage: stage, Check: r.name, Region: p.region, Want: lock.String(), Got: got, Pass: rs.Doc.Primary.Lock.Type == lock})
	}
	ops := []kvrouting.OpClass{kvrouting.OpRead, kvrouting.OpUpdate, kvrouting.OpNewWrite, kvrouting.OpDelete}
	for _, op := range ops {
		if err := p.decide(ctx, stage, fresh, p.region, op, wantAt(lock, op)); err != nil {
			return err
		}
	}
	if !locked {
		return nil
	}
	for _, op := range ops {
		want := "reject (" + kvrouting.ReasonLockedSecondary + ")"
		if op == kvrouting.OpRead {
			want = "allow"
		}
		if err := p.decide(ctx, stage, fresh, p.target, op, want); err != nil {
			return err
		}
	}
	return nil
}

// wantAt is paper 001 Table 4 at the primary.
func wantAt(lock kvrouting.LockType, op kvrouting.OpClass) string {
	switch {
	case op == kvrouting.OpRead:
		return "allow"
	case lock == kvrouting.LockHardDelete && op == kvrouting.OpDelete:
		return "tombstone (" + kvrouting.ReasonHardDelete + ")"
	case lock == kvrouting.LockWrite:
		return "reject (" + kvrouting.ReasonWriteLock + ")"
	}
	return "allow"
}

// decide takes the decision through the fresh resolver and through the
// warm one; both must give want.
func (p *prober) decide(ctx context.Context, stage string, fresh *kvrouting.Resolver, region string, op kvrouting.OpClass, want string) error {
	var got [2]string
	for i, r := range []*kvrouting.Resolver{fresh, p.warm} {
		d, _, err := r.Decide(ctx, p.res, region, op)
		if err != nil {
			return err
		}
		got[i] = d.Outcome.String()
		if d.Reason != "" {
			got[i] += " (" + d.Reason + ")"
		}
	}
	a := ProbeAssertion{Stage: stage, Check: op.String(), Region: region, Want: want, Got: got[0], Pass: got[0] == want && got[1] == want}
	if got[0] != got[1] {
		a.Got = fmt.Sprintf("%s (fresh), %s (warm cache)", got[0], got[1])
	}
	p.add(a)
	return nil
}

func (p *prober) add(a ProbeAssertion) {
	p.results = append(p.results, a)
	p.print(a)
}

// remove purges the probe's routing document, conditionally on the
// revision the probe last wrote.
func (p *prober) remove(ctx context.Context) error {
	if p.lastDoc == nil {
		return nil
	}
	return p.st.KV().Purge(ctx, p.res.Key(), jetstream.LastRevision(p.lastDoc.Revision))
}

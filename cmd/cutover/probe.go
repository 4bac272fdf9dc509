package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/kvrouting"
	"github.com/nats-io/nats.go/jetstream"
)

// The synthetic probe (paper 000 §5.4): "acquire a lock, wait out
// convergence, confirm the lock on the read path, drive simulated reads and
// writes, and assert the outcomes — so an enforcement regression surfaces as
// a probe failure rather than a data anomaly". It exercises the lock layer
// on its own, at the routing level: a probe resource with no data.

func init() {
	register("probe", "synthetic lock probe: lock a probe resource through every stage and assert Table 4 on the read path", oneLine(runProbe))
}

// probeAssertion is one checked outcome.
type probeAssertion struct {
	Stage  string `json:"stage"`
	Check  string `json:"check"`
	Region string `json:"region"`
	Want   string `json:"want"`
	Got    string `json:"got"`
	Pass   bool   `json:"pass"`
}

type probeReport struct {
	Resource         string           `json:"resource"`
	Region           string           `json:"region"`
	Target           string           `json:"target"`
	ConvergenceDelay string           `json:"convergence_delay"`
	Assertions       []probeAssertion `json:"assertions"`
	Failed           int              `json:"failed"`
}

func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("probe", "probe [--region R] [--target T] [--keep] [--json] [--nats URL]\n\nRegisters conv/probe-<random> at R, pre-locks it for a migration to T, waits out the convergence\ndelay (the dev resolver settings: max cache TTL + replication bound), escalates to the hard-delete\nand write locks and releases; at each stage it asserts, through a fresh resolver and through one\nwhose cache was warmed before the lock, that the lock is visible on the read path and that reads\nare allowed, deletes tombstoned under hard-delete and mutations refused (423) under the write lock\nand at the locked target. Exit status 1 if any assertion fails.", stdout)
	url := natsFlag(fs)
	region := fs.String("region", "us-east", "region the probe resource lives in")
	target := fs.String("target", "eu-west", "region the probe pretends to migrate it to")
	keep := fs.Bool("keep", false, "keep the probe resource's routing document afterwards")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 0, ""); err != nil {
		return err
	}
	if err := parseRegion("region", *region); err != nil {
		return err
	}
	if err := parseRegion("target", *target); err != nil {
		return err
	}
	if *region == *target {
		return fmt.Errorf("%w: --region and --target must differ", errUsage)
	}
	ctx, cancel := withTimeout(ctx, *timeout)
	defer cancel()
	o, err := dialOps(ctx, *url)
	if err != nil {
		return err
	}
	defer o.Close()
	st, err := o.routingStore(ctx)
	if err != nil {
		return err
	}
	p, err := newProber(st, *region, *target)
	if err != nil {
		return err
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "probe %s at %s (target %s), convergence delay %s\n", p.res, p.region, p.target, p.delay)
	}
	p.print = func(a probeAssertion) {
		if *asJSON {
			return
		}
		if a.Pass {
			fmt.Fprintf(stdout, "PASS  %-11s  %-22s  @%-10s  %s\n", a.Stage, a.Check, a.Region, a.Got)
		} else {
			fmt.Fprintf(stdout, "FAIL  %-11s  %-22s  @%-10s  want %s, got %s\n", a.Stage, a.Check, a.Region, a.Want, a.Got)
		}
	}
	runErr := p.run(ctx)
	if runErr == nil && !*keep {
		if err := p.remove(ctx); err != nil {
			fmt.Fprintf(stderr, "cutover probe: could not remove %s: %v\n", p.res, err)
		}
	}
	rep := probeReport{Resource: p.res.String(), Region: p.region, Target: p.target, ConvergenceDelay: p.delay.String(), Assertions: p.results}
	for _, a := range p.results {
		if !a.Pass {
			rep.Failed++
		}
	}
	if *asJSON {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else if runErr == nil {
		fmt.Fprintf(stdout, "probe: %d assertions, %d failed\n", len(rep.Assertions), rep.Failed)
	}
	switch {
	case runErr != nil:
		return fmt.Errorf("probe %s: %w", p.res, runErr)
	case rep.Failed > 0:
		return fmt.Errorf("%d of %d assertions failed", rep.Failed, len(rep.Assertions))
	}
	return nil
}

// prober runs one probe cycle.
type prober struct {
	st             *kvrouting.Store
	cfg            *system.Config
	lk             *kvrouting.Locker
	warm           *kvrouting.Resolver
	res            kvrouting.Resource
	region, target string
	delay          time.Duration
	results        []probeAssertion
	print          func(probeAssertion)
	lastDoc        *kvrouting.Document
}

func newProber(st *kvrouting.Store, region, target string) (*prober, error) {
	// The deployment's timings: every role runs with these defaults.
	cfg := &system.Config{Regions: []string{region, target}}
	if err := cfg.EnsureDefaults(); err != nil {
		return nil, err
	}
	p := &prober{st: st, cfg: cfg, region: region, target: target, print: func(probeAssertion) {}}
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

// resolver returns a resolver with empty cache tiers of the dev TTLs.
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
	until := g.NotBefore.Add(p.cfg.ClockSkew + p.cfg.Orchestrator.ConvergenceBuffer)
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
		p.add(probeAssertion{Stage: stage, Check: r.name, Region: p.region, Want: lock.String(), Got: got, Pass: rs.Doc.Primary.Lock.Type == lock})
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
	a := probeAssertion{Stage: stage, Check: op.String(), Region: region, Want: want, Got: got[0], Pass: got[0] == want && got[1] == want}
	if got[0] != got[1] {
		a.Got = fmt.Sprintf("%s (fresh), %s (warm cache)", got[0], got[1])
	}
	p.add(a)
	return nil
}

func (p *prober) add(a probeAssertion) {
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

package kvrouting

import (
	"context"
	"testing"
	"time"
)

// BenchmarkResolveDecideUnlocked: a cached, unlocked resource — the cost the
// routing-embedded design adds to every request (paper 000 §5.3): no store
// read at all.
func BenchmarkResolveDecideUnlocked(b *testing.B) {
	e := mustEnv(b)
	ctx := context.Background()
	res := mustRegister(b, e, "bench", "us-east")
	r, err := NewResolver(e.store, ResolverConfig{Tiers: []*Tier{NewTier("local", time.Hour, 0)}, Clock: e.clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := r.Decide(ctx, res, "us-east", OpUpdate); err != nil {
		b.Fatal(err)
	}
	before := e.store.Stats().Reads()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := r.Decide(ctx, res, "us-east", OpUpdate); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(e.store.Stats().Reads()-before)/float64(b.N), "reads/op")
}

// BenchmarkResolveDecideLocked: a resource under an active lock is read
// through to the leader on every request.
func BenchmarkResolveDecideLocked(b *testing.B) {
	e := mustEnv(b)
	ctx := context.Background()
	res := mustRegister(b, e, "bench", "us-east")
	if _, err := e.lk.PreLock(ctx, res, "eu-west", "m"); err != nil {
		b.Fatal(err)
	}
	e.clock.Advance(time.Minute)
	r, err := NewResolver(e.store, ResolverConfig{Tiers: []*Tier{NewTier("local", time.Hour, 0)}, Clock: e.clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	before := e.store.Stats().Reads()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := r.Decide(ctx, res, "us-east", OpUpdate); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(e.store.Stats().Reads()-before)/float64(b.N), "reads/op")
}

// BenchmarkLockCycle: pre-lock → hard-delete → write → swap with the
// holder's cached document (4 conditional writes, 0 reads).
func BenchmarkLockCycle(b *testing.B) {
	e := mustEnv(b)
	e.lk.cfg.ConvergenceDelay = 0
	ctx := context.Background()
	regions := [2]string{"us-east", "eu-west"}
	res := mustRegister(b, e, "cycle", regions[0])
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g, err := e.lk.PreLock(ctx, res, regions[(i+1)%2], "m")
		if err != nil {
			b.Fatal(err)
		}
		e.clock.Advance(2 * time.Second)
		d, err := e.lk.EscalateHardDelete(ctx, res, g.Token, g.Doc)
		if err == nil {
			d, err = e.lk.EscalateWrite(ctx, res, g.Token, d)
		}
		if err == nil {
			_, err = e.lk.Swap(ctx, res, g.Token, d)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

package kvrouting

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkConsistent is the atomic-cutover invariant (paper 000 §4.3, paper
// 001 §4.1.4) on one observed document: location and locks never disagree.
func checkConsistent(d *Document, source, target string) error {
	l := d.Primary.Lock
	if l.Type != LockNone {
		if d.Primary.Region != source || d.Target != target || d.Secondary == nil || d.Secondary.Region != target || d.Secondary.Lock.Token != l.Token {
			return fmt.Errorf("locked document with inconsistent location: %+v", d)
		}
		return nil
	}
	if d.MigrationID != "" || d.Target != "" {
		return fmt.Errorf("unlocked document with a migration in flight: %+v", d)
	}
	if d.LastMigrationID != "" { // this test only ever swaps
		if d.Primary.Region != target || d.Secondary == nil || d.Secondary.Region != source || d.Secondary.Lock.Type != LockSecondary {
			return fmt.Errorf("locks released with the location unchanged: %+v / %+v", d.Primary, d.Secondary)
		}
	} else if d.Primary.Region != source {
		return fmt.Errorf("location switched without a migration: %+v", d)
	}
	return nil
}

// TestSwapAtomicity: readers running during many swaps never see the
// location switched with locks held, nor locks released with the location
// unchanged.
func TestSwapAtomicity(t *testing.T) {
	e := mustEnv(t)
	e.lk.cfg.ConvergenceDelay = 0
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 40
	var resources []Resource
	for i := 0; i < n; i++ {
		resources = append(resources, mustRegister(t, e, "swap-"+resN(i), "us-east"))
	}
	var observed atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				res := resources[(i*7+w)%n]
				var d *Document
				var err error
				if w%2 == 0 {
					d, err = e.store.GetLeader(ctx, res)
				} else {
					d, err = e.store.GetDirect(ctx, res)
				}
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					errc <- err
					return
				}
				if err := checkConsistent(d, "us-east", "eu-west"); err != nil {
					errc <- err
					return
				}
				observed.Add(1)
			}
		}(w)
	}
	for _, res := range resources {
		g, err := e.lk.PreLock(ctx, res, "eu-west", "m-"+res.ID)
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(2 * time.Second) // past not-before + skew
		d, err := e.lk.EscalateHardDelete(ctx, res, g.Token, g.Doc)
		if err != nil {
			t.Fatal(err)
		}
		if d, err = e.lk.EscalateWrite(ctx, res, g.Token, d); err != nil {
			t.Fatal(err)
		}
		if _, err = e.lk.Swap(ctx, res, g.Token, d); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if observed.Load() < n {
		t.Fatalf("readers observed only %d documents", observed.Load())
	}
	for _, res := range resources {
		if err := checkConsistent(mustGet(t, e, res), "us-east", "eu-west"); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d documents observed during %d swaps", observed.Load(), n)
}

// retryUnavailable retries op while the store is unavailable (a leader
// election); every other outcome is returned.
func retryUnavailable[T any](ctx context.Context, op func() (T, error)) (T, error) {
	for {
		v, err := op()
		if err == nil || !errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
			return v, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

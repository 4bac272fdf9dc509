package orchestrator

import (
	"errors"
	"testing"

	"github.com/cutover/cutover/events"
)

// TestConvergenceModes: with fence-driven convergence Phase 1
// waits for no cache — the escalation follows as soon as the pre-lock's
// not-before (now + the lock's convergence delay, which the system sets to
// 0 in this mode) plus the lock's clock skew is past, the first moment the
// routing store accepts it (the default); with "ttl" it waits the
// not-before plus the buffer, at least the replication bound (paper 001
// §4.1.1), and never less than the skew. Both migrate, and neither
// escalation is refused as early; anything else is refused.
func TestConvergenceModes(t *testing.T) {
	for _, mode := range []string{"", ConvergenceFence, ConvergenceTTL} {
		t.Run("mode="+mode, func(t *testing.T) {
			e := mustEnv(t)
			e.seed("conv/c1", 5)
			cfg := e.config()
			cfg.Convergence = mode
			e.startWorker(cfg)
			id := e.migrateDone("conv/c1", "eu")
			var pl *events.PreLocked
			for _, ev := range e.history(id) {
				if b, ok := ev.Body.(events.PreLocked); ok {
					pl = &b
				}
			}
			if pl == nil {
				t.Fatal("no PreLocked event")
			}
			wait := pl.WaitUntil.Sub(pl.NotBefore)
			skew := e.locker.Config().ClockSkew
			if wait < skew {
				t.Fatalf("waits %s past the not-before, less than the skew %s: the escalation would be refused", wait, skew)
			}
			switch mode {
			case ConvergenceTTL:
				if wait < cfg.ConvergenceBuffer {
					t.Fatalf("ttl: waits until %s after the not-before, want >= the buffer %s", wait, cfg.ConvergenceBuffer)
				}
			default: // fence is the default
				if wait != skew {
					t.Fatalf("fence: waits %s past the not-before, want the skew %s", wait, skew)
				}
			}
		})
	}
	e := mustEnv(t)
	cfg := e.config()
	cfg.Convergence = "sometimes"
	if _, err := NewWorker(e.nc, e.js, cfg); !errors.Is(err, ErrInvalid) {
		t.Fatalf("convergence %q: %v, want ErrInvalid", cfg.Convergence, err)
	}
}

package chaos

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/orchestrator"
)

// worker is one orchestrator worker the nemesis may kill or pause.
type worker struct {
	id     int
	w      *orchestrator.Worker
	ctx    context.Context
	cancel context.CancelFunc
}

// pausePoints are the points a worker can be paused at: "lock-cas", between
// a lock decision and its conditional write (kvrouting.LockConfig.BeforeCAS),
// and the step boundaries of a migration's normal and rollback paths, each
// the event a step appends after its side effect (the orchestrator's
// BeforeAppend hook): after the pre-lock CAS, after the hard-delete
// escalation, mid-copy (pages imported, their checkpoint not yet
// recorded), after the write-lock escalation and its first delta pages,
// between the swap CAS (with the last delta pages, the validation and the
// regions' new authorities, one step since the merged steps) and the
// Swapped event, before Completed, after a rollback's release and cleanup,
// before the next attempt, and after the source cleanup. The fallback-only events (validated, deltas-copied,
// cleanup-scheduled: appended only when the merged swap step could not do
// its whole work) are not points of their own.
var pausePoints = []string{"lock-cas", "pre-locked", "hard-delete-locked", "copy", "write-locked", "swapped", "completed", "rolled-back", "rescheduled", "cleaned-up"}

// takePause reports whether a pause is armed at point and, if so, disarms
// it: exactly one worker stops there.
func (r *run) takePause(point string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.mu.armed[point] {
		return false
	}
	delete(r.mu.armed, point)
	r.rep.Nemesis.PausesTriggered++
	if r.rep.Nemesis.PausePoints == nil {
		r.rep.Nemesis.PausePoints = map[string]int{}
	}
	r.rep.Nemesis.PausePoints[point]++
	return true
}

// pausePoint is the pause point a step's next event belongs to.
func pausePoint(typ string) string {
	switch typ {
	case events.TypePageCopied, events.TypePagesCopied:
		return "copy"
	case events.TypeDeltaCopied, events.TypeDeltasCopied:
		return "delta"
	}
	return typ
}

// startWorker starts one more orchestrator worker, with the pause hook.
func (r *run) startWorker() error {
	cw := &worker{id: int(r.nextWorker.Add(1))}
	cw.ctx, cw.cancel = context.WithCancel(context.Background())
	cfg := *r.sys.Config
	cfg.Orchestrator.BeforeAppend = func(st *events.State, next events.Body) error {
		point := pausePoint(next.Type())
		if !r.takePause(point) {
			return nil
		}
		r.mu.Lock()
		r.mu.paused[kvrouting.Token(st.Token)] = true
		r.mu.Unlock()
		r.logf("worker %d paused before %s of %s", cw.id, point, st.Resource)
		select {
		case <-time.After(max(writeLease, ackWait) + 2*time.Second):
		case <-cw.ctx.Done():
		}
		r.logf("worker %d resumes (stale) on %s", cw.id, st.Resource)
		return nil
	}
	// The worker's own Locker: its clock, and the pause point between a
	// lock decision and its conditional write.
	lc := r.sys.Locker.Config()
	if !r.o.NoClockSkew {
		// Clock skew within the margin: this worker's lock decisions and
		// engine timers run off by offset; any two workers disagree by at
		// most the margin the protocol allows for (paper 000 §4.1).
		offset := r.clockOffset(cw.id, lc.ClockSkew)
		lc.Clock = func() time.Time { return time.Now().Add(offset) }
		cfg.Orchestrator.Clock = lc.Clock
		r.mu.Lock()
		r.rep.Nemesis.MaxClockOffsetMs = max(r.rep.Nemesis.MaxClockOffsetMs, float64(offset.Abs().Microseconds())/1000)
		r.mu.Unlock()
	}
	lc.BeforeCAS = func(ctx context.Context, res kvrouting.Resource, next *kvrouting.Document) {
		if !r.takePause("lock-cas") {
			return
		}
		r.mu.Lock()
		r.mu.paused[next.Primary.Lock.Token] = true
		if next.Secondary != nil && next.Secondary.Lock.Token != "" {
			r.mu.paused[next.Secondary.Lock.Token] = true
		}
		r.mu.Unlock()
		r.logf("worker %d paused between a lock decision on %s and its write", cw.id, res)
		select {
		case <-time.After(max(writeLease, ackWait) + 2*time.Second):
		case <-cw.ctx.Done():
		}
	}
	lk, err := kvrouting.NewLocker(r.sys.Routing, lc)
	if err != nil {
		cw.cancel()
		return err
	}
	w, err := system.NewWorker(&cfg, r.sys.NC, r.sys.JS, lk, r.sys.Directory)
	if err != nil {
		cw.cancel()
		return err
	}
	cw.w = w
	go func() { _ = w.Run(cw.ctx) }()
	r.mu.Lock()
	r.mu.workers = append(r.mu.workers, cw)
	r.rep.Nemesis.WorkersStarted++
	r.mu.Unlock()
	return nil
}

// killWorker stops cw wherever it is; a close still running after 10 s is
// left behind (and logged).
func (r *run) killWorker(cw *worker) {
	cw.cancel()
	done := make(chan struct{})
	go func() { _ = cw.w.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		r.logf("worker %d: close still running after 10 s", cw.id)
	}
}

func (r *run) stopWorkers() {
	r.mu.Lock()
	ws := r.mu.workers
	r.mu.workers = nil
	r.mu.Unlock()
	for _, cw := range ws {
		r.killWorker(cw)
	}
}

// clockOffset is worker id's clock offset, seeded: uniform in
// [-skew/2, +skew/2].
func (r *run) clockOffset(id int, skew time.Duration) time.Duration {
	if skew <= 0 {
		return 0
	}
	rng := rand.New(rand.NewPCG(r.o.Seed, 1000+uint64(id)))
	return time.Duration(rng.Int64N(int64(skew)+1)) - skew/2
}

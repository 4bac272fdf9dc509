package chaos

import (
	"context"
	"sync/atomic"
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
	// pause, when armed, makes the worker's next write-lock step block
	// (after the lock is taken, before its event is appended) for longer
	// than the write lease: a stale holder that later resumes.
	pause atomic.Bool
}

// startWorker starts one more orchestrator worker, with the pause hook.
func (r *run) startWorker() error {
	cw := &worker{id: int(r.nextWorker.Add(1))}
	cw.ctx, cw.cancel = context.WithCancel(context.Background())
	cfg := *r.sys.Config
	cfg.Orchestrator.BeforeAppend = func(st *events.State, next events.Body) error {
		if next.Type() != events.TypeWriteLocked || !cw.pause.CompareAndSwap(true, false) {
			return nil
		}
		r.mu.Lock()
		r.mu.paused[kvrouting.Token(st.Token)] = true
		r.rep.Nemesis.PausesTriggered++
		r.mu.Unlock()
		r.logf("worker %d paused holding the write lock of %s", cw.id, st.Resource)
		select {
		case <-time.After(writeLease + 2*time.Second):
		case <-cw.ctx.Done():
		}
		r.logf("worker %d resumes (stale) on %s", cw.id, st.Resource)
		return nil
	}
	w, err := system.NewWorker(&cfg, r.sys.NC, r.sys.JS, r.sys.Locker, r.sys.Directory)
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

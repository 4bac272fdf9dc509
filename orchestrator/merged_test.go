package orchestrator

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services/contract"
)

// eventTypes lists h's event types in order.
func eventTypes(h []*events.Envelope) []string {
	var out []string
	for _, ev := range h {
		out = append(out, ev.Type)
	}
	return out
}

// TestMergedStepsFallBack: the write lock's step exports every source
// service's first delta page, and the swap's step records the last delta
// pages, the validation and, once both regions have their authority, the
// cleanup schedule, in one synced append each. When the piece a step adds
// fails, the step still records what it did and the next step does the
// rest: a first delta page that the write lock's step could not export is
// exported by the delta step (installing the write fence itself), and an
// authority the swap's step could not install leaves a Swapped event
// without a cleanup schedule, whose phase installs it. Nothing is lost and
// no step is counted as a failure.
func TestMergedStepsFallBack(t *testing.T) {
	e := mustEnv(t)
	const res = "conv/merged"
	e.seed(res, 5)
	us := e.wrap("us", "messages")
	var exports, secondaries atomic.Int32
	us.onExport = func(r contract.ExportRequest) error {
		if r.Mode == contract.Delta && exports.Add(1) == 1 {
			return errors.New("export refused (test)")
		}
		return nil
	}
	us.onAuthorize = func(a contract.Authority) error {
		if a.RoleOf() == contract.RoleSecondary && secondaries.Add(1) == 1 {
			return errors.New("authority refused (test)")
		}
		return nil
	}
	e.startWorker(e.config())
	id1 := e.migrateDone(res, "eu")
	h := e.history(id1)
	want := []string{events.TypeRequested, events.TypePreLocked,
		events.TypeHardDeleteLocked, events.TypePagesCopied,
		events.TypeWriteLocked, events.TypeSwapped,
		events.TypeCleanupScheduled, events.TypeCompleted}
	if got := eventTypes(h); !slices.Equal(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	for _, ev := range h {
		switch b := ev.Body.(type) {
		case events.HardDeleteLocked:
			if b.At.IsZero() || len(b.Services) != len(testServices) {
				t.Fatalf("HardDeleteLocked %+v: want its time and every service", b)
			}
		case events.WriteLocked:
			if b.At.IsZero() || b.At.After(ev.Time) {
				t.Fatalf("WriteLocked %+v at %s: want the lock written before the event", b, ev.Time)
			}
		case events.Swapped:
			if b.Validation == nil || !b.Validation.OK || len(b.Deltas) == 0 || !b.CleanupAt.IsZero() {
				t.Fatalf("Swapped %+v: want the deltas and the validation, no cleanup schedule (an authority failed)", b)
			}
		}
	}
	if n := countType(h, events.TypeStepFailed); n != 0 {
		t.Fatalf("%d StepFailed: a deferred piece is not a failure", n)
	}
	if secondaries.Load() < 2 {
		t.Fatalf("the old source was told it is a secondary %d times, want a retry", secondaries.Load())
	}
	assertFold(t, h)
	e.assertMigrated(res)

	// The move back: the same steps, every piece in its step.
	us.mu.Lock()
	us.onExport, us.onAuthorize = nil, nil
	us.mu.Unlock()
	id2 := e.migrateDone(res, "us")
	h = e.history(id2)
	want = []string{events.TypeRequested, events.TypePreLocked, events.TypeHardDeleteLocked,
		events.TypePagesCopied, events.TypeWriteLocked, // the deltas ride in Swapped
		events.TypeSwapped, events.TypeCompleted}
	if got := eventTypes(h); !slices.Equal(got, want) {
		t.Fatalf("move back events\n got %v\nwant %v", got, want)
	}
	assertFold(t, h)
}

// TestWriteLockedStepsSkipTheBackgroundBound: steps of a migration holding
// the write lock never wait for a background slot (Config.BackgroundSteps),
// so other migrations' steps cannot queue in front of the write fence
// users feel; nor does the completion after the swap, which has no work
// the slots bound (queues). With the only slot taken from the moment the
// write lock is recorded, the delta, the swap and the completion still
// happen; the source's cleanup, once its window has passed, waits for the
// slot.
func TestWriteLockedStepsSkipTheBackgroundBound(t *testing.T) {
	e := mustEnv(t)
	const res = "conv/phase3-first"
	e.seed(res, 5)
	cfg := e.config()
	cfg.BackgroundSteps = 1
	cfg.CleanupWindow = 100 * time.Millisecond
	var w *Worker
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	cfg.AfterAppend = func(env *events.Envelope) error {
		if env.Type == events.TypeWriteLocked {
			go func() { // takes the slot as soon as this step returns it
				w.background <- struct{}{}
				close(held)
				<-release
				<-w.background
			}()
		}
		return nil
	}
	w = e.startWorker(cfg)
	id, err := e.client.Start(context.Background(), events.Start{Resource: res, Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	<-held
	st := e.waitDone(id, 20*time.Second) // the swap and the completion, with the slot taken
	if st.Status != events.StatusCompleted {
		t.Fatalf("status %s: %s", st.Status, st.Reason)
	}
	// The cleanup is due (its window has passed, twice over) and waits.
	time.Sleep(time.Until(st.CleanupAt.Add(cfg.CleanupWindow)))
	if st, _, err := Load(context.Background(), e.nc, id); err != nil || st.SourceCleaned {
		t.Fatalf("source cleaned with the only slot taken: %+v %v", st, err)
	}
	free()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if st, _, err := Load(context.Background(), e.nc, id); err == nil && st.SourceCleaned {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("source not cleaned once the slot was free")
		}
	}
}

// TestCopyRuns: a copy step copies a run of pages per service (the next
// export during the previous import) and checkpoints them in one event; an
// import that fails in the middle of a run ends it, the pages before it
// stand, the next step resumes after them, and no failure is counted.
func TestCopyRuns(t *testing.T) {
	e := mustEnv(t)
	const res = "conv/runs"
	e.seed(res, 20) // three pages of 7 per service
	f := e.wrap("eu", testServices[0])
	var failed atomic.Bool
	f.onImport = func(r *contract.ImportRequest) error {
		if r.Resource == res && r.Page != nil && r.Page.Cursor == 7 && failed.CompareAndSwap(false, true) {
			return contract.Errorf(contract.CodeUnavailable, "injected import failure")
		}
		return nil
	}
	e.startWorker(e.config())
	id := e.migrateDone(res, "eu")
	h := e.history(id)
	var rounds [][]events.PageCopied
	for _, ev := range h {
		switch b := ev.Body.(type) {
		case events.PagesCopied:
			rounds = append(rounds, b.Pages)
		case events.PageCopied:
			rounds = append(rounds, []events.PageCopied{b})
		}
	}
	count := func(pages []events.PageCopied, svc string) int {
		n := 0
		for _, p := range pages {
			if p.Service == svc {
				n++
			}
		}
		return n
	}
	// Round 1: the healthy service's whole run (3 pages), the other's first
	// page only (its second import failed). Round 2: the other's last two.
	if len(rounds) != 2 || count(rounds[0], testServices[1]) != 3 || count(rounds[0], testServices[0]) != 1 ||
		count(rounds[1], testServices[0]) != 2 || count(rounds[1], testServices[1]) != 0 {
		t.Fatalf("rounds %+v", rounds)
	}
	if n := countType(h, events.TypeStepFailed); n != 0 {
		t.Fatalf("%d StepFailed: a run cut short is progress, not a failure", n)
	}
	e.assertMigrated(res)
	assertFold(t, h)
}

// TestConfigBoundsMustBePositive: a bad bound is refused with ErrInvalid
// and no worker starts; zero means the default.
func TestConfigBoundsMustBePositive(t *testing.T) {
	e := mustEnv(t)
	for name, mod := range map[string]func(*Config){
		"background steps": func(c *Config) { c.BackgroundSteps = -1 },
		"pages per step":   func(c *Config) { c.PagesPerStep = -2 },
		"parallel":         func(c *Config) { c.Parallel = -1 },
	} {
		cfg := e.config()
		mod(&cfg)
		if _, err := NewWorker(e.nc, e.js, cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	cfg := e.config()
	cfg.EnsureDefaults()
	if cfg.BackgroundSteps != DefaultBackgroundSteps || cfg.PagesPerStep != DefaultPagesPerStep {
		t.Fatalf("defaults: %d background steps, %d pages per step", cfg.BackgroundSteps, cfg.PagesPerStep)
	}
}

// TestStuckStepGivesItsSlotBack: a step stuck on a request (a partition:
// it waits for its timeout) holds its background slot at most
// backgroundLease, so with one slot another migration still runs to the
// end meanwhile (found by chaos: 8 slots held by stuck steps stalled the
// engine).
func TestStuckStepGivesItsSlotBack(t *testing.T) {
	e := mustEnv(t)
	e.seed("conv/stuck", 3)
	e.seed("conv/free", 3)
	f := e.wrap("us", testServices[0])
	stuck, release := make(chan struct{}, 1), make(chan struct{})
	f.onExport = func(req contract.ExportRequest) error {
		if req.Resource == "conv/stuck" {
			select {
			case stuck <- struct{}{}:
			default:
			}
			<-release
		}
		return nil
	}
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	cfg := e.config()
	cfg.BackgroundSteps = 1
	e.startWorker(cfg)
	ctx := context.Background()
	idStuck, err := e.client.Start(ctx, events.Start{Resource: "conv/stuck", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	<-stuck
	idFree, err := e.client.Start(ctx, events.Start{Resource: "conv/free", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	if st := e.waitDone(idFree, 20*time.Second); st.Status != events.StatusCompleted {
		t.Fatalf("the free migration: %s %s", st.Status, st.Reason)
	}
	close(release)
	if st := e.waitDone(idStuck, 20*time.Second); st.Status != events.StatusCompleted {
		t.Fatalf("the stuck migration once unstuck: %s %s", st.Status, st.Reason)
	}
}

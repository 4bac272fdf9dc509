package orchestrator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services/contract"
)

// importLog records the imports made at the target, in the order they
// started and ended, and can hold one import until another starts.
type importLog struct {
	Directory
	target string
	mu     sync.Mutex
	events []string // "start i", "end i" (i: the import's number)
	starts []PageInfo
	active int
	most   int
	// hold, when set, is the number of the import that waits (up to 10 s)
	// for another import to start before it goes on; overlapped records
	// whether one did.
	hold       int
	started    chan struct{}
	overlapped bool
}

func (d *importLog) Endpoints(ctx context.Context, region, kind string) ([]Endpoint, error) {
	eps, err := d.Directory.Endpoints(ctx, region, kind)
	if region != d.target {
		return eps, err
	}
	for i, ep := range eps {
		eps[i] = loggingEndpoint{Endpoint: ep, d: d}
	}
	return eps, err
}

type loggingEndpoint struct {
	Endpoint
	d *importLog
}

func (e loggingEndpoint) Import(ctx context.Context, id string, p PageInfo) (contract.ImportResult, error) {
	d := e.d
	if e.Service() != "messages" {
		return e.Endpoint.Import(ctx, id, p)
	}
	d.mu.Lock()
	n := len(d.starts)
	d.starts = append(d.starts, p)
	d.events = append(d.events, fmt.Sprint("start ", n))
	d.active++
	d.most = max(d.most, d.active)
	if n > d.hold && d.hold > 0 && d.started != nil {
		close(d.started)
		d.started = nil
	}
	wait := d.started
	d.mu.Unlock()
	if n == d.hold && wait != nil {
		select {
		case <-wait:
			d.mu.Lock()
			d.overlapped = true
			d.mu.Unlock()
		case <-time.After(10 * time.Second):
		}
	}
	r, err := e.Endpoint.Import(ctx, id, p)
	d.mu.Lock()
	d.active--
	d.events = append(d.events, fmt.Sprint("end ", n))
	d.mu.Unlock()
	return r, err
}

// position is the index of ev in the log, -1 if absent.
func (d *importLog) position(ev string) int {
	for i, e := range d.events {
		if e == ev {
			return i
		}
	}
	return -1
}

// A copy run keeps two imports in flight (a page's transfer overlaps the
// previous page's write), except around the pages that must see every
// import before them: the attempt's first (it resets the target) ends
// before any other starts, and the historical and delta runs' last (they
// read the digests validation compares) start after every other has ended.
func TestCopyRunPipelinesImports(t *testing.T) {
	e := mustEnv(t)
	const res = "conv/pipelined"
	e.seed(res, 40) // 6 pages of 7 per service
	d := &importLog{Directory: e.dir, target: "eu", hold: 1, started: make(chan struct{})}
	cfg := e.config()
	cfg.Directory = d
	var late atomic.Bool
	cfg.AfterAppend = func(env *events.Envelope) error {
		if env.Type == events.TypePagesCopied && late.CompareAndSwap(false, true) {
			// A write after the historical copy began: a delta to import.
			e.writeAtSource(res, "messages", "late-1")
		}
		return nil
	}
	e.migrateWith(cfg, res)

	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.overlapped {
		t.Errorf("the second import never saw a third start while it was held: imports ran one at a time; log %v", d.events)
	}
	if d.most > importDepth {
		t.Errorf("%d imports in flight at once, want at most %d; log %v", d.most, importDepth, d.events)
	}
	resets, digests := 0, 0
	for i, p := range d.starts {
		if p.Reset {
			resets++
			end := d.position(fmt.Sprint("end ", i))
			for j := range d.starts {
				if j != i && d.position(fmt.Sprint("start ", j)) < end && d.position(fmt.Sprint("start ", j)) > d.position(fmt.Sprint("start ", i)) {
					t.Errorf("import %d started before the reset import %d ended; log %v", j, i, d.events)
				}
			}
		}
		if p.Digests {
			digests++
			start := d.position(fmt.Sprint("start ", i))
			for j := range i {
				if d.position(fmt.Sprint("end ", j)) > start {
					t.Errorf("the digests import %d started before import %d ended; log %v", i, j, d.events)
				}
			}
		}
	}
	// The last historical page's import and the last delta page's.
	if resets != 1 || digests != 2 {
		t.Errorf("%d reset and %d digests imports, want 1 and 2; log %v", resets, digests, d.events)
	}
}

// An import that fails ends its run: the pages before it are checkpointed,
// none after it (they are imported again, idempotently), and the migration
// completes with every record at the target.
func TestCopyRunImportFailureKeepsOrder(t *testing.T) {
	e := mustEnv(t)
	const res = "conv/importfails"
	e.seed(res, 40)
	f := e.wrap("eu", "messages")
	var once sync.Once
	f.onImport = func(req *contract.ImportRequest) error {
		if req.Page == nil || req.Page.Cursor == 0 {
			return nil
		}
		var err error
		once.Do(func() {
			err = contract.Errorf(contract.CodeUnavailable, "injected: page at cursor %d", req.Page.Cursor)
		})
		return err
	}
	_, h := e.migrateWith(e.config(), res)
	var pages []events.PageCopied
	for _, ev := range h {
		if p, ok := events.BodyAs[events.PageCopied](ev); ok {
			pages = append(pages, p)
		}
		if ps, ok := events.BodyAs[events.PagesCopied](ev); ok {
			pages = append(pages, ps.Pages...)
		}
	}
	next, n := uint64(0), 0
	for _, p := range pages {
		if p.Service != "messages" {
			continue
		}
		if p.Cursor != next {
			t.Fatalf("messages page %d checkpointed at cursor %d, want %d (the previous page's next): %+v", n, p.Cursor, next, pages)
		}
		next, n = p.Next, n+1
	}
	if n < 2 || pages[len(pages)-1].More {
		t.Fatalf("%d messages pages checkpointed, the last with more to come: %+v", n, pages)
	}
}

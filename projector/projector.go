package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cutover/cutover/eventlog"
	"github.com/cutover/cutover/events"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("projector: closed")

// Change tells a subscriber that a migration's read model changed.
type Change struct {
	// Seq is the stream sequence of the event; gaps mean the subscriber was
	// too slow and missed changes (read the models for the current state).
	Seq         uint64
	MigrationID string
	Type        string
	Phase       events.Phase
	Status      events.Status
}

// Projector keeps the read models of MIGRATION_EVENTS up to date. Run
// consumes; every other method is safe for concurrent use by any goroutine.
type Projector struct {
	events *eventlog.Log
	log    *slog.Logger

	mu struct {
		sync.Mutex
		m    *models
		subs map[int]chan Change
		next int
	}
	ctx    context.Context
	cancel context.CancelFunc
}

// New returns a projector over js; logger may be nil.
func New(js jetstream.JetStream, logger *slog.Logger) *Projector {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Projector{events: eventlog.New(nil, js), log: logger}
	p.mu.m = newModels()
	p.mu.subs = map[int]chan Change{}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

// Close stops Run and closes every subscription channel.
func (p *Projector) Close() error {
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, ch := range p.mu.subs {
		close(ch)
		delete(p.mu.subs, id)
	}
	return nil
}

// Run follows the events stream from sequence 1 (eventlog.Log.Follow)
// into the live models until ctx ends or Close. A follow that fails (the
// stream not there yet, a cluster still forming) is resumed after the last
// folded sequence, after a backoff. It returns nil on a clean stop,
// ErrClosed after Close.
func (p *Projector) Run(ctx context.Context) error {
	if p.ctx.Err() != nil {
		return ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()
	for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		err := p.events.Follow(ctx, "", p.LastSeq()+1, func(e eventlog.Entry) error {
			p.ingest(e)
			return nil
		})
		if ctx.Err() != nil {
			return nil
		}
		p.log.Debug("projector: following the events stream", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
	}
}

// ingest folds one stream message into the live models and notifies
// subscribers.
func (p *Projector) ingest(en eventlog.Entry) {
	seq, e := en.Seq, en.Event
	p.mu.Lock()
	defer p.mu.Unlock()
	if en.Err != nil {
		p.log.Warn("skipping undecodable event", "seq", seq, "err", en.Err)
		p.mu.m.lastSeq = max(p.mu.m.lastSeq, seq)
		return
	}
	before := p.mu.m.lastSeq
	p.mu.m.apply(seq, e)
	if p.mu.m.lastSeq == before || e.State == nil {
		return
	}
	ch := Change{Seq: seq, MigrationID: e.MigrationID, Type: e.Type, Phase: e.State.Phase, Status: e.State.Status}
	for _, sub := range p.mu.subs {
		select {
		case sub <- ch:
		default: // a slow subscriber misses it; Seq shows the gap
		}
	}
}

// Subscribe returns a channel of changes (buffer buf) and a function that
// cancels the subscription. Changes a slow subscriber cannot take are
// dropped.
func (p *Projector) Subscribe(buf int) (<-chan Change, func()) {
	ch := make(chan Change, max(buf, 1))
	p.mu.Lock()
	defer p.mu.Unlock()
	id := p.mu.next
	p.mu.next++
	p.mu.subs[id] = ch
	return ch, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if _, ok := p.mu.subs[id]; ok {
			close(ch)
			delete(p.mu.subs, id)
		}
	}
}

// Snapshot returns a copy of the live models.
func (p *Projector) Snapshot() Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.m.snapshot()
}

// Migration returns one migration's read model.
func (p *Projector) Migration(id string) (MigrationView, bool) {
	s := p.Snapshot()
	v, ok := s.Migrations[id]
	return v, ok
}

// Tenant returns one tenant fan-out's progress.
func (p *Projector) Tenant(id string) (TenantView, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.mu.m.tenants[id]
	if !ok {
		return TenantView{}, false
	}
	return *t, true
}

// LastSeq returns the last stream sequence folded into the live models.
func (p *Projector) LastSeq() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.m.lastSeq
}

// WaitSeq waits until the live models include stream sequence seq.
// Errors: ctx's.
func (p *Projector) WaitSeq(ctx context.Context, seq uint64) error {
	for p.LastSeq() < seq {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// Rebuild replays the events stream from sequence 1 up to its last
// sequence at the time of the call into fresh models and returns them; it
// equals Snapshot once the live models have reached the same sequence.
// Errors: the JetStream API's, ctx's.
func (p *Projector) Rebuild(ctx context.Context) (Snapshot, error) {
	last, err := p.events.LastSeq(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	m := newModels()
	if last == 0 {
		return m.snapshot(), nil
	}
	err = p.events.Follow(ctx, "", 1, func(e eventlog.Entry) error {
		if e.Err != nil {
			m.lastSeq = max(m.lastSeq, e.Seq)
		} else {
			m.apply(e.Seq, e.Event)
		}
		if m.lastSeq >= last {
			return eventlog.ErrStop
		}
		return nil
	})
	if err == nil && m.lastSeq < last {
		err = ctx.Err()
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("projector: rebuild at seq %d of %d: %w", m.lastSeq, last, err)
	}
	return m.snapshot(), nil
}

// Follow calls fn with every change from stream sequence from on (0: the
// start of the stream), in order, then with each new one as it is appended,
// until ctx ends or fn returns an error (which Follow returns). Unlike
// Subscribe it never drops: it reads MIGRATION_EVENTS itself at fn's pace
// (a slow fn slows the reading), so a subscriber that restarts resumes with
// Follow(ctx, lastSeq+1, fn) and misses nothing the stream still holds.
// ctx's end returns nil.
func (p *Projector) Follow(ctx context.Context, from uint64, fn func(Change) error) error {
	err := p.events.Follow(ctx, "", from, func(en eventlog.Entry) error {
		e := en.Event
		if en.Err != nil || e.State == nil {
			return nil // undecodable, or a command-only envelope
		}
		return fn(Change{Seq: en.Seq, MigrationID: e.MigrationID, Type: e.Type, Phase: e.State.Phase, Status: e.State.Status})
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

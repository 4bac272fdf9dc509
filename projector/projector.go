package projector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/nats/natsclient"
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
	js  jetstream.JetStream
	log *slog.Logger

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
	p := &Projector{js: js, log: logger}
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

// Run consumes the events stream from sequence 1 (an ordered, ephemeral
// consumer) into the live models until ctx ends or Close. It returns nil on
// a clean stop, ErrClosed after Close, or the consumer's error.
func (p *Projector) Run(ctx context.Context) error {
	if p.ctx.Err() != nil {
		return ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()
	// Retried while the answer is "not yet" (a cluster still forming).
	var c jetstream.Consumer
	err := natsclient.RetryIdempotent(ctx, func(ctx context.Context) (err error) {
		c, err = p.js.OrderedConsumer(ctx, events.EventStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("projector: consumer: %w", err)
	}
	cc, err := c.Consume(func(m jetstream.Msg) {
		meta, err := m.Metadata()
		if err != nil {
			return
		}
		p.ingest(meta.Sequence.Stream, m.Data())
	})
	if err != nil {
		return fmt.Errorf("projector: consume: %w", err)
	}
	<-ctx.Done()
	cc.Stop()
	return nil
}

// ingest folds one stream message into the live models and notifies
// subscribers.
func (p *Projector) ingest(seq uint64, data []byte) {
	e, err := events.Decode(data)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.log.Warn("skipping undecodable event", "seq", seq, "err", err)
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
	s, err := p.js.Stream(ctx, events.EventStream)
	if err != nil {
		return Snapshot{}, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	m := newModels()
	last := info.State.LastSeq
	if info.State.Msgs == 0 {
		return m.snapshot(), nil
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return Snapshot{}, err
	}
	it, err := c.Messages()
	if err != nil {
		return Snapshot{}, err
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	for m.lastSeq < last {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return Snapshot{}, ctx.Err()
			}
			return Snapshot{}, fmt.Errorf("projector: rebuild at seq %d of %d: %w", m.lastSeq, last, err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			return Snapshot{}, err
		}
		e, err := events.Decode(msg.Data())
		if err != nil {
			m.lastSeq = max(m.lastSeq, meta.Sequence.Stream)
			continue
		}
		m.apply(meta.Sequence.Stream, e)
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
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if from > 0 {
		cfg = jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from}
	}
	c, err := p.js.OrderedConsumer(ctx, events.EventStream, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("projector: follow: %w", err)
	}
	msgs, err := c.Messages(jetstream.PullMaxMessages(16))
	if err != nil {
		return fmt.Errorf("projector: follow: %w", err)
	}
	defer msgs.Stop()
	stop := context.AfterFunc(ctx, msgs.Stop)
	defer stop()
	for {
		m, err := msgs.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("projector: follow: %w", err)
		}
		meta, err := m.Metadata()
		if err != nil {
			continue
		}
		e, err := events.Decode(m.Data())
		if err != nil || e.State == nil {
			continue // undecodable, or a command-only envelope
		}
		if err := fn(Change{Seq: meta.Sequence.Stream, MigrationID: e.MigrationID, Type: e.Type, Phase: e.State.Phase, Status: e.State.Status}); err != nil {
			return err
		}
	}
}

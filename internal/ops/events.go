package ops

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/nats-io/nats.go/jetstream"
)

// Reading MIGRATION_EVENTS: following a subject, and the last event of
// every migration.

// followSubject calls fn with every event on subject (from the first with
// DeliverAllPolicy, from now with DeliverNewPolicy) until fn returns true
// or ctx ends. It tells stderr once when nothing arrives for a while (no
// orchestrator running?).
func followSubject(ctx context.Context, js jetstream.JetStream, subject string, policy jetstream.DeliverPolicy, stderr io.Writer, fn func(seq uint64, e *events.Envelope) bool) error {
	it, err := eventIterator(ctx, js, subject, policy)
	if err != nil {
		return err
	}
	defer it.Stop()
	return it.each(ctx, stderr, fn)
}

type eventIter struct{ it jetstream.MessagesContext }

func eventIterator(ctx context.Context, js jetstream.JetStream, subject string, policy jetstream.DeliverPolicy) (*eventIter, error) {
	c, err := js.OrderedConsumer(ctx, events.EventStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}, DeliverPolicy: policy})
	if err != nil {
		return nil, noStream(err)
	}
	it, err := c.Messages()
	if err != nil {
		return nil, err
	}
	return &eventIter{it: it}, nil
}

func (e *eventIter) Stop() { e.it.Stop() }

func (e *eventIter) each(ctx context.Context, stderr io.Writer, fn func(seq uint64, e *events.Envelope) bool) error {
	stop := context.AfterFunc(ctx, e.it.Stop)
	defer stop()
	quiet := time.AfterFunc(10*time.Second, func() {
		fmt.Fprintln(stderr, "cutover: no events for 10s; is an orchestrator running?")
	})
	defer quiet.Stop()
	for {
		msg, err := e.it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		quiet.Stop()
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		env, err := events.Decode(msg.Data())
		if err != nil {
			continue // another schema version; nothing we can show
		}
		if fn(meta.Sequence.Stream, env) {
			return nil
		}
	}
}

// lastEvent is the last event of one subject of the events stream.
type lastEvent struct {
	seq uint64
	env *events.Envelope
}

// lastEvents reads the last event of every migration (one per subject of
// MIGRATION_EVENTS; each carries its migration's full state).
func lastEvents(ctx context.Context, js jetstream.JetStream) ([]lastEvent, error) {
	ctx, cancel := withTimeout(ctx, time.Minute)
	defer cancel()
	s, err := js.Stream(ctx, events.EventStream)
	if err != nil {
		return nil, noStream(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	n := int(info.State.NumSubjects)
	if n == 0 {
		return nil, nil
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.EventPrefix + ">"},
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy})
	if err != nil {
		return nil, err
	}
	out := make([]lastEvent, 0, n)
	seen := map[string]bool{}
	for len(seen) < n {
		batch, err := c.Fetch(min(n-len(seen), 1000), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			meta, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			if seen[m.Subject()] {
				continue // a new event of a subject already read
			}
			seen[m.Subject()] = true
			e, err := events.Decode(m.Data())
			if err != nil {
				continue
			}
			out = append(out, lastEvent{seq: meta.Sequence.Stream, env: e})
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if got == 0 {
			break // fewer subjects than counted (none are ever removed, but be safe)
		}
	}
	return out, nil
}

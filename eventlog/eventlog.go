// Package eventlog is the migration event log: the MIGRATION_EVENTS
// stream, one subject per migration, each event carrying the migration's
// state after it (docs/wire-format.md). It is the one reader and writer of
// that stream: the orchestrator loads a migration's last event and appends
// the next one conditionally, the projector and the metrics follow the
// whole stream from a sequence, the operator commands follow one
// migration and read every migration's last event, the checker reads
// histories.
//
// It is client-side: it imports nats.go and never the server.
package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/nats/natsclient"
)

var (
	// ErrNotFound is returned for a migration with no events.
	ErrNotFound = errors.New("eventlog: migration not found")
	// ErrConflict is returned by Append when the migration's last sequence
	// was not the one expected: another writer advanced it first.
	ErrConflict = errors.New("eventlog: migration advanced concurrently")
	// ErrStop, returned by a Follow callback, ends Follow with nil.
	ErrStop = errors.New("eventlog: stop")
)

// Log is the event log reached through one NATS connection. Safe for
// concurrent use.
type Log struct {
	nc *nats.Conn
	js jetstream.JetStream
}

// New returns the log on nc (js: its JetStream context).
func New(nc *nats.Conn, js jetstream.JetStream) *Log { return &Log{nc: nc, js: js} }

// Entry is one message of the stream: its sequence and its event, or the
// error decoding it (an event of another schema version).
type Entry struct {
	Seq   uint64
	Event *events.Envelope
	Err   error
	// SameAppend is true for a message stored by the same append as the
	// one before it: a later message of an atomic batch (AppendBatch),
	// written with it in one synced write.
	SameAppend bool
}

// Last reads a migration's last event with ONE non-direct get of the last
// message on its subject (only the stream leader answers it: never a stale
// replica), and returns it with its stream sequence: the expected last
// sequence of the next Append. Errors: ErrNotFound, events decode errors
// (an event that carries no state is events.ErrMalformed),
// natsclient.ErrUnavailable.
func (l *Log) Last(ctx context.Context, migrationID string) (*events.Envelope, uint64, error) {
	data, seq, err := natsclient.LeaderGetLast(ctx, l.nc, events.EventStream, events.EventSubject(migrationID))
	if errors.Is(err, natsclient.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotFound, migrationID)
	}
	if err != nil {
		return nil, 0, err
	}
	env, err := events.Decode(data)
	if err != nil {
		return nil, 0, fmt.Errorf("eventlog: last event of %s (seq %d): %w", migrationID, seq, err)
	}
	if env.State == nil {
		return nil, 0, fmt.Errorf("eventlog: last event of %s (seq %d) carries no state: %w", migrationID, seq, events.ErrMalformed)
	}
	return env, seq, nil
}

// History returns every event of a migration, oldest first (none: an empty
// slice and no error). Errors: the JetStream API's, events decode errors.
func (l *Log) History(ctx context.Context, migrationID string) ([]*events.Envelope, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	subj := events.EventSubject(migrationID)
	s, err := l.js.Stream(ctx, events.EventStream)
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subj))
	if err != nil {
		return nil, err
	}
	n := int(info.State.Subjects[subj])
	if n == 0 {
		return nil, nil
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}})
	if err != nil {
		return nil, err
	}
	out := make([]*events.Envelope, 0, n)
	for len(out) < n {
		batch, err := c.Fetch(n-len(out), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			e, err := events.Decode(m.Data())
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if got == 0 {
			return nil, fmt.Errorf("eventlog: history of %s: %d of %d events: %w", migrationID, len(out), n, context.DeadlineExceeded)
		}
	}
	return out, nil
}

// Append publishes env on its migration's subject, conditioned on after
// being that subject's last sequence (0: the migration has no event yet),
// with env.ID as Nats-Msg-Id: a publish retried after an unknown outcome
// is deduplicated. It returns the event's stream sequence. Errors:
// ErrConflict when another writer advanced the migration first, encoding
// errors, the JetStream API's.
func (l *Log) Append(ctx context.Context, env *events.Envelope, after uint64) (uint64, error) {
	data, err := events.Encode(env)
	if err != nil {
		return 0, err
	}
	msg := nats.NewMsg(events.EventSubject(env.MigrationID))
	msg.Data = data
	ack, err := PublishRetry(ctx, l.js, msg, jetstream.WithMsgID(env.ID), jetstream.WithExpectLastSequencePerSubject(after))
	if err != nil {
		if WrongLastSequence(err) {
			return 0, fmt.Errorf("%w: %s at seq %d: %w", ErrConflict, env.MigrationID, after, err)
		}
		return 0, err
	}
	return ack.Sequence, nil
}

// AppendBatch appends envs, all of one migration and in order, as ONE
// atomic batch (JetStream atomic batch publish; the stream must allow it,
// AllowAtomicPublish): all of them or none, the first conditioned on after
// being the migration's last sequence (only a batch's first message may
// carry that condition; the others follow it in the batch). Each keeps its
// ID as its Nats-Msg-Id. It returns the last one's stream sequence. One
// envelope is an Append. Errors: as Append; a batch whose outcome was
// unknown and that is retried after it landed is refused (its ids are
// duplicates) as ErrConflict, and the writer re-reads.
func (l *Log) AppendBatch(ctx context.Context, envs []*events.Envelope, after uint64) (uint64, error) {
	switch {
	case len(envs) == 0:
		return after, nil
	case len(envs) == 1:
		return l.Append(ctx, envs[0], after)
	}
	msgs := make([]*nats.Msg, len(envs))
	for i, env := range envs {
		if env.MigrationID != envs[0].MigrationID {
			return 0, fmt.Errorf("eventlog: a batch of migrations %s and %s", envs[0].MigrationID, env.MigrationID)
		}
		data, err := events.Encode(env)
		if err != nil {
			return 0, err
		}
		m := nats.NewMsg(events.EventSubject(env.MigrationID))
		m.Data = data
		m.Header.Set(jetstream.MsgIDHeader, env.ID)
		m.Header.Set(batchSeqHeader, strconv.Itoa(i+1))
		if i == 0 {
			m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(after, 10))
		}
		if i == len(envs)-1 {
			m.Header.Set(batchCommitHeader, "1")
		}
		msgs[i] = m
	}
	attempt := 0
	ack, err := retryUnknown(ctx, func(ctx context.Context) (*jetstream.PubAck, error) {
		for _, m := range msgs { // a fresh batch per attempt: a half-sent one is abandoned
			m.Header.Set(batchIDHeader, fmt.Sprintf("%s-%d", envs[0].ID, attempt))
		}
		attempt++
		return l.publishBatch(ctx, msgs)
	})
	if err == nil {
		return ack.Sequence, nil
	}
	if WrongLastSequence(err) || duplicateInBatch(err) {
		return 0, fmt.Errorf("%w: %s at seq %d: %w", ErrConflict, envs[0].MigrationID, after, err)
	}
	return 0, err
}

// The atomic batch headers (ADR-50).
const (
	batchIDHeader     = "Nats-Batch-Id"
	batchSeqHeader    = "Nats-Batch-Sequence"
	batchCommitHeader = "Nats-Batch-Commit"
)

// publishBatch sends a batch's messages, the last one (the commit) as a
// request answered with the batch's acknowledgement.
// laterInBatch reports whether a stored message's headers make it a later
// message of an atomic batch (its batch sequence is 2 or more).
func laterInBatch(h nats.Header) bool {
	n := h.Get(batchSeqHeader)
	return n != "" && n != "1"
}

func (l *Log) publishBatch(ctx context.Context, msgs []*nats.Msg) (*jetstream.PubAck, error) {
	nc := l.js.Conn()
	for _, m := range msgs[:len(msgs)-1] {
		if err := nc.PublishMsg(m); err != nil {
			return nil, err
		}
	}
	actx, cancel := context.WithTimeout(ctx, PublishAttemptTimeout)
	defer cancel()
	return l.js.PublishMsg(actx, msgs[len(msgs)-1])
}

// duplicateInBatch reports whether a batch was refused for a message id
// already stored (a retried batch that had landed).
func duplicateInBatch(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrAtomicPublishContainsDuplicate
}

// jsErrAtomicPublishContainsDuplicate is nats-server's error code for an
// atomic batch holding a message id already stored.
const jsErrAtomicPublishContainsDuplicate = 10201

// Follow calls fn with every message of the stream (of one migration when
// migrationID is not empty), from stream sequence from on (0 or 1: the
// first), in order, then with each new one as it is appended, until ctx
// ends (nil), fn returns ErrStop (nil) or another error (returned), or the
// consumer fails. It reads at fn's pace and never drops: a reader that
// restarts resumes with from = its last Seq + 1. A stream that does not
// exist yet is an error (errors.Is jetstream.ErrStreamNotFound).
func (l *Log) Follow(ctx context.Context, migrationID string, from uint64, fn func(Entry) error) error {
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if from > 1 {
		cfg = jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from}
	}
	if migrationID != "" {
		cfg.FilterSubjects = []string{events.EventSubject(migrationID)}
	}
	c, err := l.js.OrderedConsumer(ctx, events.EventStream, cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("eventlog: follow: %w", err)
	}
	msgs, err := c.Messages(jetstream.PullMaxMessages(256))
	if err != nil {
		return fmt.Errorf("eventlog: follow: %w", err)
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
			return fmt.Errorf("eventlog: follow: %w", err)
		}
		meta, err := m.Metadata()
		if err != nil {
			continue
		}
		e := Entry{Seq: meta.Sequence.Stream, SameAppend: laterInBatch(m.Headers())}
		e.Event, e.Err = events.Decode(m.Data())
		if err := fn(e); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
}

// LastSeq is the stream's last sequence (0: empty): a replay that has
// reached it has seen every event appended before the call.
func (l *Log) LastSeq(ctx context.Context) (uint64, error) {
	s, err := l.js.Stream(ctx, events.EventStream)
	if err != nil {
		return 0, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	if info.State.Msgs == 0 {
		return 0, nil
	}
	return info.State.LastSeq, nil
}

// Heads reads the last event of every migration (one per subject; each
// carries its migration's whole state). Undecodable ones are left out.
func (l *Log) Heads(ctx context.Context) ([]Entry, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	s, err := l.js.Stream(ctx, events.EventStream)
	if err != nil {
		return nil, err
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
	out := make([]Entry, 0, n)
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
			out = append(out, Entry{Seq: meta.Sequence.Stream, Event: e})
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

// WrongLastSequence reports whether a publish was refused because its
// subject's last sequence was not the one expected.
func WrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// PublishAttemptTimeout bounds one publish attempt. Without it an attempt
// under a caller's long deadline waits for that deadline: a publish
// forwarded to a stream leader that crashed gets no reply at all.
var PublishAttemptTimeout = 3 * time.Second

// PublishRetry publishes msg, retrying an unknown outcome (timeout, no
// responders during a leader change) with the same options: a Msg-Id
// makes the retry idempotent (DESIGN.md "Durability and hazards"). Each
// attempt waits at most PublishAttemptTimeout; at most 4 attempts, within
// ctx (a minute when ctx has no deadline).
func PublishRetry(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	return retryUnknown(ctx, func(ctx context.Context) (*jetstream.PubAck, error) {
		actx, cancel := context.WithTimeout(ctx, PublishAttemptTimeout)
		defer cancel()
		return js.PublishMsg(actx, msg, opts...)
	})
}

// retryUnknown runs publish up to 4 times while its outcome is unknown
// (timeout, no responders during a leader change), backing off, within
// ctx (a minute when ctx has no deadline); any other error ends it.
func retryUnknown(ctx context.Context, publish func(context.Context) (*jetstream.PubAck, error)) (*jetstream.PubAck, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		var ack *jetstream.PubAck
		if ack, err = publish(ctx); err == nil {
			return ack, nil
		}
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) &&
			!errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, nats.ErrNoResponders) {
			return nil, err
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
		}
	}
	return nil, err
}

// withDefaultTimeout bounds ctx to a minute unless it has a deadline.
func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, time.Minute)
}

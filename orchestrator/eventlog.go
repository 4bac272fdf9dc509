package orchestrator

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/nats/natsclient"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Load reads a migration's current state with ONE non-direct get of the
// last message on its event subject (only the stream leader answers it), and
// returns the state with that message's stream sequence: the expected last
// subject sequence of the next append. Errors: ErrNotFound, events decode
// errors, natsclient.ErrUnavailable. Safe for concurrent use.
func Load(ctx context.Context, nc *nats.Conn, migrationID string) (*events.State, uint64, error) {
	if !events.ValidID(migrationID) {
		return nil, 0, fmt.Errorf("%w: migration id %q", ErrInvalid, migrationID)
	}
	data, seq, err := natsclient.LeaderGetLast(ctx, nc, events.EventStream, events.EventSubject(migrationID))
	if errors.Is(err, natsclient.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotFound, migrationID)
	}
	if err != nil {
		return nil, 0, err
	}
	env, err := events.Decode(data)
	if err != nil {
		return nil, 0, fmt.Errorf("orchestrator: last event of %s (seq %d): %w", migrationID, seq, err)
	}
	if env.State == nil {
		return nil, 0, fmt.Errorf("orchestrator: last event of %s (seq %d) carries no state: %w", migrationID, seq, events.ErrMalformed)
	}
	return env.State, seq, nil
}

// History returns every event of a migration, oldest first. Errors: the
// JetStream API's, events decode errors.
func History(ctx context.Context, js jetstream.JetStream, migrationID string) ([]*events.Envelope, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	subj := events.EventSubject(migrationID)
	s, err := js.Stream(ctx, events.EventStream)
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
			return nil, fmt.Errorf("orchestrator: history of %s: %d of %d events: %w", migrationID, len(out), n, context.DeadlineExceeded)
		}
	}
	return out, nil
}

// appendEvent appends body to the migration's subject, conditioned on seq
// being the subject's last sequence, with the envelope id as Nats-Msg-Id
// (a retried publish after a timeout is deduplicated). The envelope carries
// the state after the event. Errors: ErrConflict when another writer
// advanced the migration first.
func appendEvent(ctx context.Context, js jetstream.JetStream, st *events.State, seq uint64, body events.Body, cause string, now time.Time) (*events.Envelope, uint64, error) {
	id := ""
	if st != nil {
		id = st.ID
	}
	return appendTo(ctx, js, id, st, seq, body, cause, now, newID())
}

func appendTo(ctx context.Context, js jetstream.JetStream, migrationID string, st *events.State, seq uint64, body events.Body, cause string, now time.Time, msgID string) (*events.Envelope, uint64, error) {
	env := &events.Envelope{ID: msgID, MigrationID: migrationID, Time: now.UTC(), CausationID: cause, Body: body}
	if st != nil {
		env.Resource = st.Resource
	}
	next, err := Apply(st, env)
	if err != nil {
		return nil, 0, err
	}
	if next.Resource != "" {
		env.Resource = next.Resource
	}
	env.State = next
	data, err := events.Encode(env)
	if err != nil {
		return nil, 0, err
	}
	msg := nats.NewMsg(events.EventSubject(migrationID))
	msg.Data = data
	ack, err := publishRetry(ctx, js, msg, jetstream.WithMsgID(env.ID), jetstream.WithExpectLastSequencePerSubject(seq))
	if err != nil {
		if wrongLastSequence(err) {
			return nil, 0, fmt.Errorf("%w: %s at seq %d: %w", ErrConflict, migrationID, seq, err)
		}
		return nil, 0, err
	}
	return env, ack.Sequence, nil
}

// wrongLastSequence reports whether a publish was refused because its
// subject's last sequence was not the one expected.
func wrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// publishAttemptTimeout bounds one publish attempt. Without it an attempt
// under a caller's long deadline waited for that deadline: a publish
// forwarded to a stream leader that crashed gets no reply at all (found by
// `cutover chaos` once its leader kills became crashes: 14 starts hung for
// minutes, the driver stalled).
var publishAttemptTimeout = 3 * time.Second

// publishRetry publishes msg, retrying an unknown outcome (timeout, no
// responders during a leader change) with the same options: the Msg-Id
// makes the retry idempotent (DESIGN.md "Durability and hazards"). Each
// attempt waits at most publishAttemptTimeout; at most 4 attempts, within
// ctx.
func publishRetry(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		var ack *jetstream.PubAck
		actx, acancel := context.WithTimeout(ctx, publishAttemptTimeout)
		ack, err = js.PublishMsg(actx, msg, opts...)
		acancel()
		if err == nil {
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

// newID returns 128 random bits in hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// DeriveID returns a deterministic migration id for parts (a command id, or
// parent + resource + target), so that replays map onto the same aggregate.
func DeriveID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "m" + hex.EncodeToString(h.Sum(nil))[:31]
}

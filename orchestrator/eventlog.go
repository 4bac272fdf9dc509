package orchestrator

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/cutover/cutover/eventlog"
	"github.com/cutover/cutover/events"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Load reads a migration's current state: its last event, with the
// stream sequence that the next append is conditioned on
// (eventlog.Log.Last: one read the stream leader answers). Errors:
// ErrInvalid, ErrNotFound, events decode errors,
// natsclient.ErrUnavailable. Safe for concurrent use.
func Load(ctx context.Context, nc *nats.Conn, migrationID string) (*events.State, uint64, error) {
	if !events.ValidID(migrationID) {
		return nil, 0, fmt.Errorf("%w: migration id %q", ErrInvalid, migrationID)
	}
	env, seq, err := eventlog.New(nc, nil).Last(ctx, migrationID)
	if errors.Is(err, eventlog.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: %s", ErrNotFound, migrationID)
	}
	if err != nil {
		return nil, 0, err
	}
	return env.State, seq, nil
}

// appendEvent appends body to the migration's log after seq (appendTo).
func appendEvent(ctx context.Context, js jetstream.JetStream, st *events.State, seq uint64, body events.Body, cause string, now time.Time) (*events.Envelope, uint64, error) {
	id := ""
	if st != nil {
		id = st.ID
	}
	return appendTo(ctx, js, id, st, seq, body, cause, now, newID())
}

// appendTo builds the envelope of body (newEvent) and appends it to the
// migration's log, conditioned on seq being its last sequence, with msgID
// as the message id (eventlog.Log.Append). Errors: ErrIllegalTransition,
// ErrConflict when another writer advanced the migration first.
func appendTo(ctx context.Context, js jetstream.JetStream, migrationID string, st *events.State, seq uint64, body events.Body, cause string, now time.Time, msgID string) (*events.Envelope, uint64, error) {
	env, err := newEvent(migrationID, st, body, cause, now, msgID)
	if err != nil {
		return nil, 0, err
	}
	aseq, err := eventlog.New(nil, js).Append(ctx, env, seq)
	if err != nil {
		return nil, 0, err
	}
	return env, aseq, nil
}

// newEvent is body's envelope after st: it carries the state after it
// (Apply, which refuses what the transition table does not allow).
func newEvent(migrationID string, st *events.State, body events.Body, cause string, now time.Time, msgID string) (*events.Envelope, error) {
	env := &events.Envelope{ID: msgID, MigrationID: migrationID, Time: now.UTC(), CausationID: cause, Body: body}
	if st != nil {
		env.Resource = st.Resource
	}
	next, err := Apply(st, env)
	if err != nil {
		return nil, err
	}
	if next.Resource != "" {
		env.Resource = next.Resource
	}
	env.State = next
	return env, nil
}

// appendEvents appends a step's events after st at seq as one atomic
// batch (eventlog.Log.AppendBatch): each carries the state after it, and
// either all of them are in the log or none. It returns them with the
// last one's sequence. Errors: as appendTo.
func appendEvents(ctx context.Context, js jetstream.JetStream, st *events.State, seq uint64, bodies []events.Body, now time.Time) ([]*events.Envelope, uint64, error) {
	envs := make([]*events.Envelope, 0, len(bodies))
	cur := st
	for _, b := range bodies {
		env, err := newEvent(st.ID, cur, b, "", now, newID())
		if err != nil {
			return nil, 0, err
		}
		envs, cur = append(envs, env), env.State
	}
	last, err := eventlog.New(nil, js).AppendBatch(ctx, envs, seq)
	if err != nil {
		return nil, 0, err
	}
	return envs, last, nil
}

// publishRetry publishes msg, retrying an unknown outcome with the same
// options (eventlog.PublishRetry).
func publishRetry(ctx context.Context, js jetstream.JetStream, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	return eventlog.PublishRetry(ctx, js, msg, opts...)
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

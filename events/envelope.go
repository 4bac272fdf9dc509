package events

import (
	"bytes"
	"fmt"
	"reflect"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// SchemaVersion is the envelope schema this package writes and the only one
// it reads.
const SchemaVersion = 1

// MaxEncodedSize caps what Decode accepts, so garbage announcing a huge
// length cannot make it allocate without bound.
const MaxEncodedSize = 4 << 20

// Body is the typed payload of a command or an event.
type Body interface {
	// Type is the registered type name ("start", "pre-locked", ...).
	Type() string
}

// Envelope wraps every command and event on the wire.
type Envelope struct {
	// ID is unique per message; it is also the Nats-Msg-Id of the publish,
	// so a retried publish is deduplicated.
	ID string
	// Type names the body's type.
	Type string
	// MigrationID is the aggregate the message belongs to ("" for commands
	// that create one).
	MigrationID string
	// Resource is the resource concerned, "kind/id" (may be empty).
	Resource string
	// Time is when the writer created the message.
	Time time.Time
	// CausationID is the id of the message that caused this one.
	CausationID string
	// SchemaVersion is the envelope schema version (SchemaVersion).
	SchemaVersion int
	// State is the migration's full state after applying this event (nil
	// on commands). It carries the lock token whole: never log it.
	State *State
	// Body is the decoded payload.
	Body Body
}

type wireEnvelope struct {
	V           int                `msgpack:"v"`
	ID          string             `msgpack:"id"`
	Type        string             `msgpack:"t"`
	MigrationID string             `msgpack:"mid,omitempty"`
	Resource    string             `msgpack:"res,omitempty"`
	Time        int64              `msgpack:"at"`
	CausationID string             `msgpack:"cause,omitempty"`
	Payload     msgpack.RawMessage `msgpack:"p"`
	State       msgpack.RawMessage `msgpack:"s,omitempty"`
}

// Encode serialises e with the current schema version; Type is taken from
// the body. Errors: ErrInvalid (no body, empty id, unregistered type).
func Encode(e *Envelope) ([]byte, error) {
	if e == nil || e.Body == nil {
		return nil, fmt.Errorf("%w: no body", ErrInvalid)
	}
	if e.ID == "" {
		return nil, fmt.Errorf("%w: empty id", ErrInvalid)
	}
	typ := e.Body.Type()
	if _, ok := registry[typ]; !ok {
		return nil, fmt.Errorf("%w: unregistered type %q", ErrInvalid, typ)
	}
	p, err := msgpack.Marshal(e.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: %s payload: %w", ErrInvalid, typ, err)
	}
	w := wireEnvelope{V: SchemaVersion, ID: e.ID, Type: typ, MigrationID: e.MigrationID, Resource: e.Resource,
		Time: e.Time.UnixNano(), CausationID: e.CausationID, Payload: p}
	if e.State != nil {
		if w.State, err = msgpack.Marshal(e.State); err != nil {
			return nil, fmt.Errorf("%w: state: %w", ErrInvalid, err)
		}
	}
	e.Type, e.SchemaVersion = typ, SchemaVersion
	return msgpack.Marshal(&w)
}

// Decode parses an encoded envelope and its body. It never panics. Errors:
// ErrMalformed (garbled bytes, a payload that does not fit its type),
// ErrSchemaVersion, ErrUnknownType.
func Decode(b []byte) (e *Envelope, err error) {
	defer func() {
		if r := recover(); r != nil { // a decoder bug must not take a worker down
			e, err = nil, fmt.Errorf("%w: decoder panic: %v", ErrMalformed, r)
		}
	}()
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrMalformed)
	}
	if len(b) > MaxEncodedSize {
		return nil, fmt.Errorf("%w: %d bytes above %d", ErrMalformed, len(b), MaxEncodedSize)
	}
	var w wireEnvelope
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("%w: envelope: %w", ErrMalformed, err)
	}
	if w.V != SchemaVersion {
		return nil, fmt.Errorf("%w: %d (this build reads %d)", ErrSchemaVersion, w.V, SchemaVersion)
	}
	if w.ID == "" {
		return nil, fmt.Errorf("%w: empty id", ErrMalformed)
	}
	newBody, ok := registry[w.Type]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownType, w.Type)
	}
	body := newBody()
	if err := msgpack.Unmarshal(w.Payload, body); err != nil {
		return nil, fmt.Errorf("%w: %s payload: %w", ErrMalformed, w.Type, err)
	}
	utcTimes(reflect.ValueOf(body))
	e = &Envelope{ID: w.ID, Type: w.Type, MigrationID: w.MigrationID, Resource: w.Resource,
		Time: time.Unix(0, w.Time).UTC(), CausationID: w.CausationID, SchemaVersion: w.V, Body: deref(body)}
	if len(w.State) > 0 {
		var s State
		if err := msgpack.Unmarshal(w.State, &s); err != nil {
			return nil, fmt.Errorf("%w: state: %w", ErrMalformed, err)
		}
		utcTimes(reflect.ValueOf(&s))
		e.State = &s
	}
	return e, nil
}

// BodyAs returns e's body as a T, whether it holds a T or a *T (decoded
// bodies are values; bodies built in process may be pointers).
func BodyAs[T Body](e *Envelope) (T, bool) {
	if b, ok := e.Body.(T); ok {
		return b, true
	}
	if b, ok := any(e.Body).(*T); ok && b != nil {
		return *b, true
	}
	var zero T
	return zero, false
}

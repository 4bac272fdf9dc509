// Package wire turns cutover's binary wire values — routing documents,
// migration envelopes, export pages, all msgpack — into JSON for people and
// for tools in other languages (`cutover decode`, docs/wire-format.md), and
// derives the JSON Schemas of docs/schema from the Go types that write them.
//
// Lock tokens are never shown whole: every token is replaced by its
// redacted form (the first 6 hex digits and "…", as in the logs).
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
)

// Kinds of value Decode reads.
const (
	KindRouting = "routing"
	KindEvent   = "event"
	KindPage    = "page"
)

// Kinds lists the kinds Decode reads.
var Kinds = []string{KindRouting, KindEvent, KindPage}

// ErrKind is returned for a kind Decode does not know.
var ErrKind = errors.New("wire: unknown kind")

// ErrMalformed is returned for a value that is not a valid encoding of its
// kind.
var ErrMalformed = errors.New("wire: malformed value")

// Decode returns the JSON form of one msgpack value of kind (one line, no
// trailing newline). Errors: ErrKind, ErrMalformed (with the cause).
func Decode(kind string, b []byte) ([]byte, error) {
	var v any
	var err error
	switch kind {
	case KindRouting:
		v, err = routingJSON(b)
	case KindEvent:
		v, err = eventJSON(b)
	case KindPage:
		var pg contract.Page
		if pg, err = contractnats.DecodePage(b); err == nil {
			v, err = longJSON(reflect.ValueOf(pg))
		}
	default:
		return nil, fmt.Errorf("%w %q (want routing, event or page)", ErrKind, kind)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, kind, err)
	}
	return json.Marshal(v)
}

// Lock is a routing lock as JSON.
type Lock struct {
	Type      string `json:"type"`
	TypeCode  uint8  `json:"type_code"`
	Token     string `json:"token,omitempty"`
	NotBefore string `json:"not_before,omitempty"`
	Expiry    string `json:"expiry,omitempty"`
}

// Location is a routing location as JSON.
type Location struct {
	Region string `json:"region"`
	Lock   Lock   `json:"lock"`
}

// Routing is a routing document as JSON (docs/wire-format.md).
type Routing struct {
	SchemaVersion   int       `json:"schema_version"`
	Resource        string    `json:"resource"`
	Key             string    `json:"key"`
	Primary         Location  `json:"primary"`
	Secondary       *Location `json:"secondary,omitempty"`
	MigrationID     string    `json:"migration_id,omitempty"`
	Target          string    `json:"target,omitempty"`
	PreLockExpiry   string    `json:"pre_lock_expiry,omitempty"`
	MaxExpiry       string    `json:"max_expiry,omitempty"`
	LastMigrationID string    `json:"last_migration_id,omitempty"`
	LastSwap        *Swap     `json:"last_swap,omitempty"`
	ForceReleasedAt string    `json:"force_released_at,omitempty"`
	UpdatedAt       string    `json:"updated_at"`
}

// Swap is a routing document's last swap as JSON.
type Swap struct {
	MigrationID string `json:"migration_id"`
	Token       string `json:"token"`
}

// RoutingOf returns d's JSON form.
func RoutingOf(d *kvrouting.Document) Routing {
	loc := func(l kvrouting.Location) Location {
		return Location{Region: l.Region, Lock: Lock{Type: l.Lock.Type.String(), TypeCode: uint8(l.Lock.Type),
			Token: redact(string(l.Lock.Token)), NotBefore: ts(l.Lock.NotBefore), Expiry: ts(l.Lock.Expiry)}}
	}
	r := Routing{SchemaVersion: d.SchemaVersion, Resource: d.Resource, Primary: loc(d.Primary),
		MigrationID: d.MigrationID, Target: d.Target, PreLockExpiry: ts(d.PreLockExpiry), MaxExpiry: ts(d.MaxExpiry),
		LastMigrationID: d.LastMigrationID, ForceReleasedAt: ts(d.ForceReleasedAt), UpdatedAt: ts(d.UpdatedAt)}
	if res, err := kvrouting.ParseResource(d.Resource); err == nil {
		r.Key = res.Key()
	}
	if d.Secondary != nil {
		s := loc(*d.Secondary)
		r.Secondary = &s
	}
	if d.LastSwap != nil {
		r.LastSwap = &Swap{MigrationID: d.LastSwap.MigrationID, Token: redact(string(d.LastSwap.Token))}
	}
	return r
}

func routingJSON(b []byte) (any, error) {
	d, err := kvrouting.DecodeDocument(b, 0)
	if err != nil {
		return nil, err
	}
	return RoutingOf(d), nil
}

// Event is a migration envelope as JSON: the envelope's fields, the body
// and the state after the event in the vocabulary of long.go, tokens
// redacted.
type Event struct {
	SchemaVersion int    `json:"schema_version"`
	ID            string `json:"id"`
	Type          string `json:"type"`
	MigrationID   string `json:"migration_id,omitempty"`
	Resource      string `json:"resource,omitempty"`
	At            string `json:"at"`
	AtUnixNano    int64  `json:"at_unix_nano"`
	CausationID   string `json:"causation_id,omitempty"`
	Body          any    `json:"body"`
	State         any    `json:"state,omitempty"`
}

func eventJSON(b []byte) (any, error) {
	env, err := events.Decode(b) // schema version, registered type, size
	if err != nil {
		return nil, err
	}
	e := Event{SchemaVersion: env.SchemaVersion, ID: env.ID, Type: env.Type, MigrationID: env.MigrationID, Resource: env.Resource,
		At: ts(env.Time), AtUnixNano: env.Time.UnixNano(), CausationID: env.CausationID}
	if e.Body, err = longJSON(reflect.ValueOf(env.Body)); err != nil {
		return nil, err
	}
	if env.State != nil {
		if e.State, err = longJSON(reflect.ValueOf(env.State)); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// tokenKeys are the wire keys whose string values are lock tokens.
var tokenKeys = map[string]bool{"tok": true, "k": true, "Token": true, "token": true}

// genericJSON decodes any msgpack value into JSON-ready Go values: maps
// with string keys, msgpack timestamps as RFC 3339 strings, binary as
// base64 (encoding/json's []byte), string tokens redacted.
func genericJSON(b []byte) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("decoder panic: %v", r)
		}
	}()
	r := bytes.NewReader(b)
	dec := msgpack.NewDecoder(r)
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if r.Len() != 0 {
		return nil, errors.New("trailing bytes")
	}
	return render(v, ""), nil
}

func render(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = render(e, k)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			ks := fmt.Sprint(k)
			out[ks] = render(e, ks)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = render(e, key)
		}
		return out
	case time.Time:
		return ts(x)
	case string:
		if tokenKeys[key] {
			return redact(x)
		}
		return x
	}
	return v
}

func redact(tok string) string {
	if tok == "" {
		return ""
	}
	return kvrouting.Token(tok).Redacted()
}

// ts formats t as RFC 3339 with nanoseconds in UTC ("" for the zero time).
func ts(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

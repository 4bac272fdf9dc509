package wire

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// decodedSchema compiles the committed docs/schema/<kind>.decoded.schema.json.
func decodedSchema(t testing.TB, kind string) *jsonschema.Schema {
	t.Helper()
	path := filepath.Join(schemaDir, kind+".decoded.schema.json")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(path, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// validate checks one `cutover decode` output against its kind's schema.
func validate(t testing.TB, s *jsonschema.Schema, out []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

// TestDecodedOutputMatchesTheSchemas: what Decode prints for routing
// documents in every lock state, for every event type (every field set,
// with the state after it), and for pages of live records and tombstones
// is valid against the committed schemas of that JSON — and the same
// values in their wire keys are not (the schemas tell the two apart).
func TestDecodedOutputMatchesTheSchemas(t *testing.T) {
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	lock := func(typ kvrouting.LockType) kvrouting.Lock {
		if typ == kvrouting.LockNone {
			return kvrouting.Lock{}
		}
		return kvrouting.Lock{Type: typ, Token: wholeToken, NotBefore: at, Expiry: at.Add(time.Minute)}
	}
	var docs []*kvrouting.Document
	for _, typ := range []kvrouting.LockType{kvrouting.LockNone, kvrouting.LockPre, kvrouting.LockHardDelete, kvrouting.LockWrite} {
		d := &kvrouting.Document{SchemaVersion: kvrouting.SchemaVersion, Resource: "conv/lunch", Primary: kvrouting.Location{Region: "us-east", Lock: lock(typ)}, UpdatedAt: at}
		if typ != kvrouting.LockNone {
			d.MigrationID, d.Target, d.PreLockExpiry, d.MaxExpiry = "m1", "eu-west", at.Add(time.Hour), at.Add(3*time.Hour)
			d.Secondary = &kvrouting.Location{Region: "eu-west", Lock: lock(kvrouting.LockSecondary)}
		}
		docs = append(docs, d)
	}
	docs = append(docs, &kvrouting.Document{SchemaVersion: kvrouting.SchemaVersion, Resource: "conv/lunch", UpdatedAt: at, ForceReleasedAt: at,
		Primary: kvrouting.Location{Region: "eu-west"}, LastMigrationID: "m1", LastSwap: &kvrouting.SwapRecord{MigrationID: "m1", Token: wholeToken}})
	routing := decodedSchema(t, KindRouting)
	for _, d := range docs {
		b, err := d.Encode()
		if err != nil {
			t.Fatal(err)
		}
		out, err := Decode(KindRouting, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(t, routing, out); err != nil {
			t.Fatalf("routing %s: %v\n%s", d.Primary.Lock.Type, err, out)
		}
	}

	event := decodedSchema(t, KindEvent)
	bodies := events.BodyTypes()
	names := make([]string, 0, len(bodies))
	for n := range bodies {
		names = append(names, n)
	}
	sort.Strings(names)
	st := reflect.New(reflect.TypeOf(events.State{}))
	fill(st.Elem(), 0)
	for _, n := range names {
		body := reflect.New(bodies[n])
		fill(body.Elem(), 0)
		for _, state := range []*events.State{nil, st.Interface().(*events.State)} {
			b, err := events.Encode(&events.Envelope{ID: "e1", MigrationID: "m1", Resource: "conv/lunch", Time: at, Body: body.Interface().(events.Body), State: state})
			if err != nil {
				t.Fatalf("%s: %v", n, err)
			}
			out, err := Decode(KindEvent, b)
			if err != nil {
				t.Fatalf("%s: %v", n, err)
			}
			if err := validate(t, event, out); err != nil {
				t.Fatalf("event %s: %v\n%s", n, err, out)
			}
			if strings.Contains(string(out), wholeToken) {
				t.Fatalf("event %s: a whole token in %s", n, out)
			}
		}
	}

	page := decodedSchema(t, KindPage)
	for _, pg := range []contract.Page{
		{Service: "messages", Resource: "conv/lunch", Mode: contract.Historical, SyncToken: 9, Next: 3, More: true,
			Records: []contract.Record{{ID: "m1", Kind: "message", Version: 2, Seq: 4, CreatedAt: 1, UpdatedAt: 2, Data: []byte("hi"), Refs: []string{"media/x"}},
				{ID: "m2", Kind: "message", Version: 3, Seq: 5, CreatedAt: 1, Deleted: true, DeletedAt: 3}},
			Dependents: []string{"media/x"}, Attempt: 2},
		{Service: "reactions", Resource: "conv/lunch", Mode: contract.Delta},
	} {
		b, err := msgpack.Marshal(&pg)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Decode(KindPage, b)
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(t, page, out); err != nil {
			t.Fatalf("page: %v\n%s", err, out)
		}
	}

	// The checker fails on the old vocabulary: a body and a page with
	// their wire keys.
	for kind, bad := range map[string]string{
		KindEvent: `{"schema_version":1,"id":"e1","type":"requested","at":"2026-12-05T12:00:00Z","at_unix_nano":1,"body":{"tgt":"eu-west","res":"conv/lunch","attempt":1,"max":3}}`,
		KindPage:  `{"svc":"messages","res":"conv/lunch","mode":1,"tok":7,"cur":0,"next":0,"more":false,"recs":null}`,
	} {
		if err := validate(t, decodedSchema(t, kind), []byte(bad)); err == nil {
			t.Fatalf("%s in wire keys passed the schema of the decoded JSON", kind)
		}
	}
}

// TestSnakeNames: the long name of a Go field.
func TestSnakeNames(t *testing.T) {
	for in, want := range map[string]string{"ID": "id", "MigrationID": "migration_id", "SwapRev": "swap_rev", "MaxAttempts": "max_attempts",
		"CreatedAt": "created_at", "PreLockedAt": "pre_locked_at", "HTTPServer": "http_server", "T0": "t0", "Services": "services"} {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
}

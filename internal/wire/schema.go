package wire

import (
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// The JSON Schemas of docs/schema describe the msgpack values on the wire
// (the same data model: maps, arrays, strings, numbers, booleans, nil) and
// are derived from the Go types that write them, the way the msgpack
// library encodes them: a field's key is its msgpack tag or, without one,
// its Go name; "omitempty" fields are not required; time.Time is the msgpack
// timestamp extension (type -1); []byte is bin; msgpack.RawMessage is an
// embedded msgpack value (bin). TestSchemas regenerates them and fails on
// any difference, so every field the Go types write is in the schema and
// every field in the schema is written.

// Schemas returns every document kind's schema by file name.
func Schemas() map[string]map[string]any {
	g := newGen()
	routing := g.root("cutover routing document (a value of the ROUTING KV bucket)", reflect.TypeOf(kvrouting.Document{}))
	routing["x-schema-version"] = kvrouting.SchemaVersion

	ev := newGen()
	env := ev.root("cutover migration envelope (a message of MIGRATION_CMDS, MIGRATION_EVENTS or MIGRATION_WORK)", events.WireEnvelopeType())
	env["x-schema-version"] = events.SchemaVersion
	bodies := events.BodyTypes()
	names := make([]string, 0, len(bodies))
	for n := range bodies {
		names = append(names, n)
	}
	sort.Strings(names)
	byType := map[string]any{}
	for _, n := range names {
		byType[n] = ev.ref(bodies[n])
	}
	env["x-payload-by-type"] = byType
	env["x-state"] = ev.ref(reflect.TypeOf(events.State{}))

	pg := newGen()
	page := pg.root("cutover export page (a message of the PAGES stream)", reflect.TypeOf(contract.Page{}))
	out := map[string]map[string]any{"routing.schema.json": routing, "event.schema.json": env, "page.schema.json": page}
	for name, s := range decodedSchemas() {
		out[name] = s
	}
	return out
}

// decodedSchemas are the schemas of what `cutover decode` prints (long.go).
func decodedSchemas() map[string]map[string]any {
	routing := newJSONGen().root("cutover routing document as `cutover decode routing` prints it", reflect.TypeOf(Routing{}))

	g := newJSONGen()
	env := g.root("cutover migration envelope as `cutover decode event` prints it", reflect.TypeOf(Event{}))
	props := env["properties"].(map[string]any)
	props["state"] = map[string]any{"anyOf": []any{g.ref(reflect.TypeOf(events.State{})), map[string]any{"type": "null"}}}
	bodies := events.BodyTypes()
	names := make([]string, 0, len(bodies))
	for n := range bodies {
		names = append(names, n)
	}
	sort.Strings(names)
	byType := make([]any, 0, len(names))
	types := make([]any, 0, len(names))
	for _, n := range names {
		types = append(types, n)
		byType = append(byType, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"type": map[string]any{"const": n}}},
			"then": map[string]any{"properties": map[string]any{"body": g.ref(bodies[n])}},
		})
	}
	props["type"] = map[string]any{"type": "string", "enum": types}
	env["allOf"] = byType
	env["$defs"] = g.defs

	page := newJSONGen().root("cutover export page as `cutover decode page` prints it", reflect.TypeOf(contract.Page{}))
	return map[string]map[string]any{"routing.decoded.schema.json": routing, "event.decoded.schema.json": env, "page.decoded.schema.json": page}
}

// enums names the values of the integer enums on the wire.
var enums = map[reflect.Type][]string{
	reflect.TypeOf(kvrouting.LockType(0)):  {"none", "pre", "hard-delete", "write", "secondary"},
	reflect.TypeOf(contract.ExportMode(0)): {"", "historical", "delta"},
}

type gen struct {
	defs map[string]any
	// json: the schema of the JSON vocabulary `cutover decode` prints
	// (long.go), not of the msgpack map.
	json bool
}

func newGen() *gen { return &gen{defs: map[string]any{}} }

func newJSONGen() *gen { return &gen{defs: map[string]any{}, json: true} }

// root returns the schema of t with its $defs.
func (g *gen) root(title string, t reflect.Type) map[string]any {
	s := g.object(t)
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["title"] = title
	s["$defs"] = g.defs
	return s
}

// ref returns a $ref to t's definition, adding it on first use.
func (g *gen) ref(t reflect.Type) map[string]any {
	name := t.Name()
	if _, ok := g.defs[name]; !ok {
		g.defs[name] = nil // recursion guard
		g.defs[name] = g.object(t)
	}
	return map[string]any{"$ref": "#/$defs/" + name}
}

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(msgpack.RawMessage{})
)

func (g *gen) schema(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time", "x-msgpack": "timestamp extension (type -1)"}
	case t == rawType && g.json:
		return map[string]any{"description": "an embedded value, decoded"}
	case t == rawType:
		return map[string]any{"x-msgpack": "an embedded msgpack value"}
	}
	if names, ok := enums[t]; ok && g.json {
		vals := []any{}
		for _, n := range names {
			vals = append(vals, n)
		}
		return map[string]any{"type": "string", "enum": vals}
	}
	if names, ok := enums[t]; ok {
		vals := make([]any, 0, len(names))
		named := map[string]any{}
		for i, n := range names {
			if n != "" {
				vals = append(vals, i)
				named[n] = i
			}
		}
		return map[string]any{"type": "integer", "enum": vals, "x-enum-names": named}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return map[string]any{"anyOf": []any{g.schema(t.Elem()), map[string]any{"type": "null"}}}
	case reflect.Struct:
		return g.ref(t)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && g.json {
			return map[string]any{"type": []any{"string", "null"}, "contentEncoding": "base64"}
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64", "x-msgpack": "bin"}
		}
		return map[string]any{"type": []any{"array", "null"}, "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": []any{"object", "null"}, "additionalProperties": g.schema(t.Elem())}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Interface:
		return map[string]any{}
	}
	return map[string]any{"x-go-type": t.String()}
}

// object is the schema of struct t: its msgpack keys.
func (g *gen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	for f := range fields(t) {
		s := g.schema(f.typ)
		if f.doc != "" {
			s = withDoc(s, f.doc)
		}
		key, omit := f.key, f.omitEmpty
		if g.json {
			key, omit = f.long, f.omitEmpty || f.jsonOmit
		}
		props[key] = s
		if !omit {
			required = append(required, key)
		}
	}
	sort.Strings(required)
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

func withDoc(s map[string]any, doc string) map[string]any {
	c := make(map[string]any, len(s)+1)
	for k, v := range s {
		c[k] = v
	}
	c["x-go-field"] = doc
	return c
}

type field struct {
	// key is the msgpack key; long the JSON name (longName).
	key, long, doc string
	typ            reflect.Type
	omitEmpty      bool
	// jsonOmit: the json tag says omitempty (the JSON vocabulary's own
	// types, such as Routing).
	jsonOmit bool
	// index is the field's index sequence from the outer struct (through
	// inlined embedded structs); sf its declaration.
	index []int
	sf    reflect.StructField
}

// fields yields t's encoded fields as msgpack v5 encodes them (exported
// fields; embedded structs without a tag are inlined).
func fields(t reflect.Type) func(func(field) bool) {
	return func(yield func(field) bool) {
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			tag := sf.Tag.Get("msgpack")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
				for f := range fields(sf.Type) {
					f.index = append([]int{i}, f.index...)
					if !yield(f) {
						return
					}
				}
				continue
			}
			if name == "" {
				name = sf.Name
			}
			_, jopts, _ := strings.Cut(sf.Tag.Get("json"), ",")
			f := field{key: name, long: longName(sf), typ: sf.Type, omitEmpty: strings.Contains(opts, "omitempty"), doc: sf.Name,
				jsonOmit: strings.Contains(jopts, "omitempty"), index: []int{i}, sf: sf}
			if !yield(f) {
				return
			}
		}
	}
}

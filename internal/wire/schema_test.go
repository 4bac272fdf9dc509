package wire

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

var update = flag.Bool("update", false, "rewrite docs/schema from the Go types")

const schemaDir = "../../docs/schema"

// TestSchemas: the committed schemas are what the Go types generate
// (`go test ./internal/wire -run TestSchemas -update` rewrites them).
func TestSchemas(t *testing.T) {
	for name, s := range Schemas() {
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, '\n')
		path := filepath.Join(schemaDir, name)
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to write it)", err)
		}
		if !bytes.Equal(got, b) {
			t.Errorf("%s differs from the Go types (run `go test ./internal/wire -run TestSchemas -update` and review the diff)", path)
		}
	}
}

// TestSchemaKeysMatchTheEncoder: a value with every field set, encoded by
// the msgpack library, has exactly the keys its schema lists, at every
// level: the generator's reading of the encoding rules is checked against
// the encoder itself.
func TestSchemaKeysMatchTheEncoder(t *testing.T) {
	types := map[string]reflect.Type{"Document": reflect.TypeOf(kvrouting.Document{}), "Page": reflect.TypeOf(contract.Page{}),
		"State": reflect.TypeOf(events.State{})}
	for n, bt := range events.BodyTypes() {
		types["body "+n] = bt
	}
	for name, typ := range types {
		v := reflect.New(typ).Elem()
		fill(v, 0)
		b, err := msgpack.Marshal(v.Addr().Interface())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got any
		if err := msgpack.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		g := newGen()
		root := g.object(typ)
		compareKeys(t, name, got, root, g.defs)
	}
}

func compareKeys(t *testing.T, at string, v any, s map[string]any, defs map[string]any) {
	t.Helper()
	if r, ok := s["$ref"].(string); ok {
		s = defs[filepath.Base(r)].(map[string]any)
	}
	if alt, ok := s["anyOf"].([]any); ok {
		s = alt[0].(map[string]any)
		if r, ok := s["$ref"].(string); ok {
			s = defs[filepath.Base(r)].(map[string]any)
		}
	}
	props, ok := s["properties"].(map[string]any)
	if !ok {
		if items, ok := s["items"].(map[string]any); ok {
			if arr, ok := v.([]any); ok && len(arr) > 0 {
				compareKeys(t, at+"[]", arr[0], items, defs)
			}
		}
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Errorf("%s: encoded as %T, the schema says an object", at, v)
		return
	}
	var enc, sch []string
	for k := range m {
		enc = append(enc, k)
	}
	for k := range props {
		sch = append(sch, k)
	}
	sort.Strings(enc)
	sort.Strings(sch)
	if !reflect.DeepEqual(enc, sch) {
		t.Errorf("%s: the encoder writes %v, the schema lists %v", at, enc, sch)
		return
	}
	for k, e := range m {
		compareKeys(t, at+"."+k, e, props[k].(map[string]any), defs)
	}
}

// fill sets every field of v to a non-zero value (one element in slices
// and maps), so that omitempty fields are written too.
func fill(v reflect.Value, depth int) {
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Unix(1, 0)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	}
}

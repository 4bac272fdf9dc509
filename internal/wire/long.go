package wire

import (
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/cutover/cutover/kvrouting"
)

// One JSON vocabulary for outside tools. `cutover decode` prints every kind
// of value with the same names: a field's JSON name is its json tag or, for
// the types that only have msgpack tags (event bodies, the migration state,
// pages), the snake_case of its Go field name — "tgt" prints as "target",
// "lockex" as "lock_expiry", a record's "CreatedAt" as "created_at" — the
// names docs/wire-format.md and the routing JSON already use. Times are
// RFC 3339 strings in UTC; the integer enums print by name (a lock type
// "write", an export mode "delta"); bytes are base64; lock tokens are
// redacted. The schemas of this JSON (docs/schema/*.decoded.schema.json)
// are derived from the same Go types by the same rules (schema.go).

// longName is the JSON name of a Go field: its json tag's name, else the
// snake_case of name ("MigrationID" → "migration_id", "SwapRev" →
// "swap_rev", "ID" → "id").
func longName(sf reflect.StructField) string {
	if n, _, _ := strings.Cut(sf.Tag.Get("json"), ","); n != "" && n != "-" {
		return n
	}
	return snake(sf.Name)
}

// snake turns a Go identifier into snake_case, keeping initialisms whole.
func snake(name string) string {
	rs := []rune(name)
	var b strings.Builder
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 {
			prevLower := unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1])
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if prevLower || (unicode.IsUpper(rs[i-1]) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

var tokenType = reflect.TypeOf(kvrouting.Token(""))

// isToken reports whether a string field holds a lock token: a
// kvrouting.Token, or a string field named Token.
func isToken(sf reflect.StructField) bool {
	return sf.Type == tokenType || (sf.Name == "Token" && sf.Type.Kind() == reflect.String)
}

// longJSON renders v, a value of a type written on the wire, in the JSON
// vocabulary above, ready for encoding/json.
func longJSON(v reflect.Value) (any, error) {
	if !v.IsValid() {
		return nil, nil
	}
	t := v.Type()
	switch {
	case t == timeType:
		return ts(v.Interface().(time.Time)), nil
	case t == rawType:
		if v.Len() == 0 {
			return nil, nil
		}
		return genericJSON(v.Bytes())
	}
	if names, ok := enums[t]; ok {
		var i int
		if v.CanUint() {
			i = int(v.Uint())
		} else {
			i = int(v.Int())
		}
		if i >= 0 && i < len(names) {
			return names[i], nil // "" for an unset mode
		}
		return i, nil
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
		return longJSON(v.Elem())
	case reflect.Struct:
		out := map[string]any{}
		err := longFields(v, out)
		return out, err
	case reflect.Slice:
		if v.IsNil() {
			return nil, nil
		}
		if t.Elem().Kind() == reflect.Uint8 {
			return v.Bytes(), nil // base64, as encoding/json writes []byte
		}
		fallthrough
	case reflect.Array:
		out := make([]any, v.Len())
		for i := range out {
			e, err := longJSON(v.Index(i))
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case reflect.Map:
		if v.IsNil() {
			return nil, nil
		}
		out := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			e, err := longJSON(it.Value())
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(it.Key().Interface())] = e
		}
		return out, nil
	case reflect.String:
		return v.String(), nil
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint(), nil
	case reflect.Float32, reflect.Float64:
		return v.Float(), nil
	}
	return nil, fmt.Errorf("wire: no JSON form for %s", t)
}

// longFields adds struct v's encoded fields to out, by the rules of
// fields (schema.go): what msgpack writes, omitempty fields left out when
// empty, embedded structs inlined.
func longFields(v reflect.Value, out map[string]any) error {
	for f := range fields(v.Type()) {
		fv := v.FieldByIndex(f.index)
		if f.omitEmpty && fv.IsZero() {
			continue
		}
		if isToken(f.sf) {
			out[f.long] = redact(fv.String())
			continue
		}
		e, err := longJSON(fv)
		if err != nil {
			return err
		}
		out[f.long] = e
	}
	return nil
}

package contractnats

import (
	"reflect"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"

	"github.com/cutover/cutover/services/contract"
)

// A contract.Record is encoded and decoded by hand: every page carries
// hundreds of them, each encoded twice and decoded twice on its way from
// the source's export to the target's import, and msgpack's reflection
// over their ten fields was most of the encoding's CPU (`cutover bench
// --cpuprofile F throughput`: contractnats' encode and decode 13 % of the
// process). The bytes are the ones the reflective encoding writes (a map
// of the Go field names, in field order, integers at full width, a nil
// Data or Refs as nil: testdata/wire.golden pins them), and whatever the
// reflective decoding accepts this one accepts alike: a map in any key
// order, unknown keys skipped, integers of any width; any other form (an
// array, a nil) goes to the reflective decoding itself (recordReflect).
// FuzzRecordCodec compares the two on arbitrary bytes.

func init() {
	msgpack.Register(contract.Record{}, encodeRecord, decodeRecord)
}

// recordReflect is contract.Record without the registered codec: msgpack
// encodes and decodes it by reflection.
type recordReflect contract.Record

// recordFields is the number of contract.Record's fields.
const recordFields = 10

func encodeRecord(e *msgpack.Encoder, v reflect.Value) error {
	var r *contract.Record
	if v.CanAddr() {
		r = v.Addr().Interface().(*contract.Record)
	} else { // a Record passed by value
		c := v.Interface().(contract.Record)
		r = &c
	}
	if err := e.EncodeMapLen(recordFields); err != nil {
		return err
	}
	str := func(k, s string) error {
		if err := e.EncodeString(k); err != nil {
			return err
		}
		return e.EncodeString(s)
	}
	u64 := func(k string, n uint64) error {
		if err := e.EncodeString(k); err != nil {
			return err
		}
		return e.EncodeUint64(n)
	}
	i64 := func(k string, n int64) error {
		if err := e.EncodeString(k); err != nil {
			return err
		}
		return e.EncodeInt64(n)
	}
	if err := str("ID", r.ID); err != nil {
		return err
	}
	if err := str("Kind", r.Kind); err != nil {
		return err
	}
	if err := u64("Version", r.Version); err != nil {
		return err
	}
	if err := u64("Seq", r.Seq); err != nil {
		return err
	}
	if err := i64("CreatedAt", r.CreatedAt); err != nil {
		return err
	}
	if err := i64("UpdatedAt", r.UpdatedAt); err != nil {
		return err
	}
	if err := e.EncodeString("Deleted"); err != nil {
		return err
	}
	if err := e.EncodeBool(r.Deleted); err != nil {
		return err
	}
	if err := i64("DeletedAt", r.DeletedAt); err != nil {
		return err
	}
	if err := e.EncodeString("Data"); err != nil {
		return err
	}
	if r.Data == nil {
		if err := e.EncodeNil(); err != nil {
			return err
		}
	} else if err := e.EncodeBytes(r.Data); err != nil {
		return err
	}
	if err := e.EncodeString("Refs"); err != nil {
		return err
	}
	if r.Refs == nil {
		return e.EncodeNil()
	}
	if err := e.EncodeArrayLen(len(r.Refs)); err != nil {
		return err
	}
	for _, s := range r.Refs {
		if err := e.EncodeString(s); err != nil {
			return err
		}
	}
	return nil
}

func decodeRecord(d *msgpack.Decoder, v reflect.Value) error {
	c, err := d.PeekCode()
	if err != nil {
		return err
	}
	if !msgpcode.IsFixedMap(c) && c != msgpcode.Map16 && c != msgpcode.Map32 {
		return d.DecodeValue(v.Addr().Convert(reflect.TypeFor[*recordReflect]()).Elem())
	}
	n, err := d.DecodeMapLen()
	if err != nil {
		return err
	}
	r := v.Addr().Interface().(*contract.Record)
	var kb [16]byte // every field name fits; reading a key allocates nothing
	for range n {
		k, err := recordKey(d, kb[:])
		if err != nil {
			return err
		}
		switch string(k) {
		case "ID":
			r.ID, err = d.DecodeString()
		case "Kind":
			r.Kind, err = d.DecodeString()
		case "Version":
			r.Version, err = d.DecodeUint64()
		case "Seq":
			r.Seq, err = d.DecodeUint64()
		case "CreatedAt":
			r.CreatedAt, err = d.DecodeInt64()
		case "UpdatedAt":
			r.UpdatedAt, err = d.DecodeInt64()
		case "Deleted":
			r.Deleted, err = d.DecodeBool()
		case "DeletedAt":
			r.DeletedAt, err = d.DecodeInt64()
		case "Data":
			r.Data, err = d.DecodeBytes()
		case "Refs":
			r.Refs, err = decodeStrings(d)
		default:
			err = d.Skip()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// recordKey reads a map key (a str, a bin or a nil, as the reflective
// decoding reads one) into buf when it fits; a longer key, which names no
// field, is read and dropped.
func recordKey(d *msgpack.Decoder, buf []byte) ([]byte, error) {
	n, err := d.DecodeBytesLen()
	if err != nil || n <= 0 {
		return nil, err
	}
	if n > len(buf) {
		buf = make([]byte, n) // checkMsgpack bounds n by the bytes that follow
	}
	return buf[:n], d.ReadFull(buf[:n])
}

// decodeStrings decodes a []string as the reflective decoding does: nil for
// a nil, otherwise a slice of the array's length.
func decodeStrings(d *msgpack.Decoder) ([]string, error) {
	n, err := d.DecodeArrayLen()
	if err != nil || n == -1 {
		return nil, err
	}
	ss := make([]string, n)
	for i := range ss {
		if ss[i], err = d.DecodeString(); err != nil {
			return nil, err
		}
	}
	return ss, nil
}

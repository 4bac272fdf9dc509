package contractnats

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cutover/cutover/services/contract"
)

// PageRef is the export endpoint's reply: where the page went and what the
// orchestrator needs to ask for the next one. The records stay in the
// stream.
type PageRef struct {
	// Seq is the page's sequence in PagesStream; ImportFromStream takes it.
	// 0 for an empty page, which is not published (nothing to import).
	Seq uint64 `msgpack:"seq"`
	// Count is the number of records in the page.
	Count int `msgpack:"n"`
	// Next is the cursor for the next page (contract.Page.Next).
	Next uint64 `msgpack:"next"`
	// More reports whether another page follows.
	More bool `msgpack:"more"`
	// SyncToken is the token the export runs under (issued by the first
	// historical page; paper 001 (A2)).
	SyncToken uint64 `msgpack:"tok"`
	// Dependents are the resources referenced by the page's records that
	// migrate on their own (child migrations).
	Dependents []string `msgpack:"deps,omitempty"`
	// Duplicate is true when the stream already held this page (same
	// Nats-Msg-Id): a retried export. The reply then describes the stored
	// page, not the one the retry computed, so Next always matches the
	// records that the importer will read.
	Duplicate bool `msgpack:"dup,omitempty"`
	// Page is the page itself when the request asked for it inline
	// (contract.ExportRequest.Inline) and it fit InlinePageMax: nothing was
	// published and Seq is 0; the import request carries it back.
	Page *contract.Page `msgpack:"page,omitempty"`
}

// refOf returns the PageRef of page stored at seq.
func refOf(page *contract.Page, seq uint64, dup bool) PageRef {
	return PageRef{
		Seq: seq, Count: len(page.Records), Next: page.Next, More: page.More,
		SyncToken: page.SyncToken, Dependents: page.Dependents, Duplicate: dup,
	}
}

// Request and reply bodies (docs/participant.md "Operations" lists their
// keys). Field names are short: every byte of a request is paid on every
// call.
type (
	exportRequest struct {
		Migration string                 `msgpack:"mig"`
		Request   contract.ExportRequest `msgpack:"req"`
	}
	importRequest struct {
		Migration string             `msgpack:"mig"`
		Resource  string             `msgpack:"res"`
		Authority contract.Authority `msgpack:"auth"`
		// Seq is the page's sequence in PagesStream; 0 with an inline Page
		// or with no page (a reset or a digests read alone).
		Seq     uint64         `msgpack:"seq,omitempty"`
		Page    *contract.Page `msgpack:"page,omitempty"`
		Reset   bool           `msgpack:"reset,omitempty"`
		Digests bool           `msgpack:"digests,omitempty"`
	}
	// authorityRequest is an authority, digests, cleanup or repair request.
	authorityRequest struct {
		Resource  string             `msgpack:"res"`
		Authority contract.Authority `msgpack:"auth"`
	}
	sliceRequest struct {
		Resource string `msgpack:"res"`
		From     int64  `msgpack:"from"`
		To       int64  `msgpack:"to"`
	}
	checkpointRequest struct {
		Migration string `msgpack:"mig"`
	}
	// authorityReply answers an authority request (the record held
	// afterwards) and a repair (the record replaced).
	authorityReply struct {
		Authority contract.Authority `msgpack:"auth"`
	}
	cleanupReply struct {
		Removed int `msgpack:"n"`
	}
	checkpointReply struct {
		Seq uint64 `msgpack:"seq"`
	}
)

// encode marshals v; the wire types always encode, so an error is internal.
func encode(v any) ([]byte, error) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return nil, contract.Errorf(contract.CodeInternal, "encode %T: %v", v, err)
	}
	return b, nil
}

// decode unmarshals untrusted msgpack b into v. It first checks that b is
// exactly one well-formed msgpack value whose every declared length fits in
// the bytes that follow: msgpack v5 allocates a bin or an array at its
// declared length before reading it, so a garbled 10-byte payload could
// otherwise ask for gigabytes (library code never panics or exhausts memory
// on input). Errors wrap errGarbled.
func decode(b []byte, v any) (err error) {
	defer func() {
		// msgpack v5.4.1 panics on a nil where a time.Time is expected.
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: decoder panic: %v", errGarbled, r)
		}
	}()
	if err := checkMsgpack(b); err != nil {
		return err
	}
	if err := msgpack.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %w", errGarbled, err)
	}
	return nil
}

// errGarbled marks a payload that is not the expected msgpack.
var errGarbled = errors.New("garbled msgpack payload")

// checkMsgpack walks b without allocating and reports errGarbled unless b
// holds exactly one complete msgpack value whose lengths all fit.
func checkMsgpack(b []byte) error {
	bad := func(why string, at int) error { return fmt.Errorf("%w: %s at byte %d", errGarbled, why, at) }
	pos := 0
	// need counts the values still to read; each takes at least one byte,
	// so need > remaining bytes is already malformed and need stays bounded.
	need := 1
	u := func(n int) (int, bool) { // reads an n-byte big-endian length
		if len(b)-pos < n {
			return 0, false
		}
		var v uint64
		switch n {
		case 1:
			v = uint64(b[pos])
		case 2:
			v = uint64(binary.BigEndian.Uint16(b[pos:]))
		case 4:
			v = uint64(binary.BigEndian.Uint32(b[pos:]))
		}
		pos += n
		if v > uint64(len(b)) {
			return 0, false
		}
		return int(v), true
	}
	for need > 0 {
		if pos >= len(b) {
			return bad("truncated", pos)
		}
		c := b[pos]
		at := pos
		pos++
		need--
		skip, items := 0, 0
		switch {
		case c <= 0x7f, c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			items = 2 * int(c&0x0f)
		case c >= 0x90 && c <= 0x9f:
			items = int(c & 0x0f)
		case c >= 0xa0 && c <= 0xbf:
			skip = int(c & 0x1f)
		default:
			var ok bool
			switch c {
			case 0xc4, 0xd9: // bin8, str8
				skip, ok = u(1)
			case 0xc5, 0xda: // bin16, str16
				skip, ok = u(2)
			case 0xc6, 0xdb: // bin32, str32
				skip, ok = u(4)
			case 0xc7, 0xc8, 0xc9: // ext8/16/32: length, then a type byte
				skip, ok = u(1 << (c - 0xc7))
				skip++
			case 0xca, 0xce, 0xd2:
				skip, ok = 4, true
			case 0xcb, 0xcf, 0xd3:
				skip, ok = 8, true
			case 0xcc, 0xd0:
				skip, ok = 1, true
			case 0xcd, 0xd1:
				skip, ok = 2, true
			case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1/2/4/8/16 plus type
				skip, ok = 1+(1<<(c-0xd4)), true
			case 0xdc:
				items, ok = u(2)
			case 0xdd:
				items, ok = u(4)
			case 0xde:
				items, ok = u(2)
				items *= 2
			case 0xdf:
				items, ok = u(4)
				items *= 2
			default: // 0xc1 is never used
				return bad(fmt.Sprintf("code 0x%02x", c), at)
			}
			if !ok {
				return bad("length beyond payload", at)
			}
		}
		if skip > len(b)-pos {
			return bad("length beyond payload", at)
		}
		pos += skip
		need += items
		if need > len(b)-pos {
			return bad("more items than bytes", at)
		}
	}
	if pos != len(b) {
		return bad("trailing bytes", pos)
	}
	return nil
}

// DecodePage decodes one message of the PAGES stream (tools: `cutover
// decode page`). Untrusted bytes are checked before any allocation
// (checkMsgpack). Errors: a garbled payload.
func DecodePage(b []byte) (contract.Page, error) {
	var p contract.Page
	err := decode(b, &p)
	return p, err
}

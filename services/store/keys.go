package store

import (
	"encoding/binary"
	"strings"
)

// Key families; see the layout in doc.go.
const (
	famFormat  = 'V'
	famAuth    = 'a'
	famCursor  = 'c'
	famDigest  = 'd'
	famKind    = 'i'
	famChange  = 'q'
	famRecord  = 'r'
	famState   = 's'
	famTime    = 't'
	famExpiry  = 'x'
	sep        = 0x00
	sepSuccess = 0x01 // sep+1: the exclusive end of a "<fam><res>\x00" prefix
)

// Validation limits.
const (
	maxResourceLen = 256
	maxIDLen       = 128
	maxKindLen     = 128
	maxCursorLen   = 256
)

func validName(what, s string, max int, allowEmpty bool) error {
	if s == "" && !allowEmpty {
		return invalidf("empty %s", what)
	}
	if len(s) > max {
		return invalidf("%s longer than %d bytes", what, max)
	}
	if strings.IndexByte(s, sep) >= 0 {
		return invalidf("%s contains NUL", what)
	}
	return nil
}

func validResource(res string) error { return validName("resource", res, maxResourceLen, false) }
func validID(id string) error        { return validName("id", id, maxIDLen, false) }
func validKind(kind string) error    { return validName("kind", kind, maxKindLen, true) }

func putU64(b []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(b, v) }

// resPrefix is "<fam><res>\x00".
func resPrefix(fam byte, res string) []byte {
	b := make([]byte, 0, 2+len(res)+8+maxIDLen)
	b = append(b, fam)
	b = append(b, res...)
	return append(b, sep)
}

// prefixEnd is the exclusive upper bound of a "<fam><res>\x00" prefix.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	end[len(end)-1] = sepSuccess
	return end
}

func recordKey(res, id string) []byte { return append(resPrefix(famRecord, res), id...) }

func changeKey(res string, seq uint64) []byte { return putU64(resPrefix(famChange, res), seq) }

func kindPrefix(res, kind string) []byte {
	b := append(resPrefix(famKind, res), kind...)
	return append(b, sep)
}

func kindKey(res, kind string, created int64, id string) []byte {
	return append(putU64(kindPrefix(res, kind), uint64(created)), id...)
}

func timeKey(res string, created int64, id string) []byte {
	return append(putU64(resPrefix(famTime, res), uint64(created)), id...)
}

func digestKey(res string, slice int64) []byte {
	return putU64(resPrefix(famDigest, res), uint64(slice))
}

func authorityKey(res string) []byte { return append([]byte{famAuth}, res...) }

func stateKey(res string) []byte { return append([]byte{famState}, res...) }

func cursorKey(name string) []byte { return append([]byte{famCursor}, name...) }

var formatKey = []byte{famFormat}

func expiryPrefix(expiry int64) []byte { return putU64([]byte{famExpiry}, uint64(expiry)) }

func expiryKey(expiry int64, res, id string) []byte {
	b := append(expiryPrefix(expiry), res...)
	b = append(b, sep)
	return append(b, id...)
}

// parseExpiryKey splits an expiry-index key; ok is false for a malformed key.
func parseExpiryKey(k []byte) (expiry int64, res, id string, ok bool) {
	if len(k) < 1+8+2 || k[0] != famExpiry {
		return 0, "", "", false
	}
	expiry = int64(binary.BigEndian.Uint64(k[1:9]))
	rest := k[9:]
	i := strings.IndexByte(string(rest), sep)
	if i <= 0 || i == len(rest)-1 {
		return 0, "", "", false
	}
	return expiry, string(rest[:i]), string(rest[i+1:]), true
}

// splitCreatedID returns the id that follows prefix and an 8-byte created
// time in an index key, and that time; ok is false for a malformed key.
func splitCreatedID(key, prefix []byte) (created int64, id string, ok bool) {
	if len(key) <= len(prefix)+8 {
		return 0, "", false
	}
	created = int64(binary.BigEndian.Uint64(key[len(prefix) : len(prefix)+8]))
	return created, string(key[len(prefix)+8:]), true
}

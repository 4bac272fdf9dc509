package kvrouting

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
)

// Resource names one logical resource: a kind ("conv", "media", "tenant")
// and an id. Its string form is "kind/id".
type Resource struct {
	Kind string
	ID   string
}

// String returns "kind/id".
func (r Resource) String() string { return r.Kind + "/" + r.ID }

// Validate returns ErrInvalid (an *InvalidError) unless the kind is a
// short lowercase word and the id is a non-empty string of at most 200
// bytes without control characters.
func (r Resource) Validate() error {
	switch {
	case r.Kind == "":
		return invalidf("resource kind: empty")
	case len(r.Kind) > 32:
		return invalidf("resource kind: longer than 32 bytes")
	}
	for _, c := range r.Kind {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return invalidf("resource kind %q: only a-z, 0-9 and '-'", r.Kind)
		}
	}
	switch {
	case r.ID == "":
		return invalidf("resource id: empty")
	case len(r.ID) > 200:
		return invalidf("resource id: longer than 200 bytes")
	}
	for _, c := range r.ID {
		if c < 0x20 || c == 0x7f {
			return invalidf("resource id %q: control character %U", r.ID, c)
		}
	}
	return nil
}

// ParseResource parses "kind/id" and validates it.
func ParseResource(s string) (Resource, error) {
	kind, id, ok := strings.Cut(s, "/")
	if !ok {
		return Resource{}, invalidf("resource %q: want kind/id", s)
	}
	r := Resource{Kind: kind, ID: id}
	return r, r.Validate()
}

// Key returns the KV key of the resource's routing document: the kind, a
// dot, and the id escaped to KV's key alphabet ([-/_=.a-zA-Z0-9]): bytes
// outside [A-Za-z0-9-_] become "=XX" (upper-case hex), so the mapping is
// injective and "." never appears inside the id part.
func (r Resource) Key() string {
	var b strings.Builder
	b.Grow(len(r.Kind) + 1 + len(r.ID))
	b.WriteString(r.Kind)
	b.WriteByte('.')
	const hexd = "0123456789ABCDEF"
	for i := 0; i < len(r.ID); i++ {
		c := r.ID[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('=')
		b.WriteByte(hexd[c>>4])
		b.WriteByte(hexd[c&0xf])
	}
	return b.String()
}

// ResourceFromKey inverts Key.
func ResourceFromKey(key string) (Resource, error) {
	kind, esc, ok := strings.Cut(key, ".")
	if !ok {
		return Resource{}, invalidf("routing key %q", key)
	}
	var b strings.Builder
	for i := 0; i < len(esc); i++ {
		if esc[i] != '=' {
			b.WriteByte(esc[i])
			continue
		}
		if i+2 >= len(esc) {
			return Resource{}, invalidf("routing key %q: bad escape", key)
		}
		v, err := hex.DecodeString(esc[i+1 : i+3])
		if err != nil {
			return Resource{}, invalidf("routing key %q: bad escape", key)
		}
		b.WriteByte(v[0])
		i += 2
	}
	r := Resource{Kind: kind, ID: b.String()}
	return r, r.Validate()
}

// Token is a lock token: 128 random bits, hex encoded. It is stored whole in
// the routing document and never logged whole (see Redacted and LogValue).
type Token string

// NewToken returns a fresh random token.
func NewToken() Token {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand never fails on supported platforms (Go 1.24+ panics
		// internally instead of returning an error).
		panic("kvrouting: crypto/rand: " + err.Error())
	}
	return Token(hex.EncodeToString(b[:]))
}

// Redacted returns the first 6 hex digits followed by "…", enough to
// correlate log lines, useless for presenting the token.
func (t Token) Redacted() string {
	if t == "" {
		return "-"
	}
	if len(t) <= 6 {
		return "…"
	}
	return string(t[:6]) + "…"
}

// LogValue implements slog.LogValuer so a token passed to slog is redacted.
func (t Token) LogValue() slog.Value { return slog.StringValue(t.Redacted()) }

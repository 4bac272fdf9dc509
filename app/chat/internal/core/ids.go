package core

import (
	"crypto/rand"
	"encoding/hex"
	"unicode/utf8"

	"github.com/cutover/cutover/services/contract"
)

// MaxIDLen is the longest id (conversation, message, media, user) accepted,
// in bytes: the store's record-id limit.
const MaxIDLen = 128

// ValidID returns a CodeInvalid *contract.Error unless s is a non-empty,
// valid UTF-8 string of at most MaxIDLen bytes without control characters.
// what names the id in the message ("message id").
func ValidID(what, s string) error {
	switch {
	case s == "":
		return contract.Errorf(contract.CodeInvalid, "%s is empty", what)
	case len(s) > MaxIDLen:
		return contract.Errorf(contract.CodeInvalid, "%s is longer than %d bytes", what, MaxIDLen)
	case !utf8.ValidString(s):
		return contract.Errorf(contract.CodeInvalid, "%s is not valid UTF-8", what)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return contract.Errorf(contract.CodeInvalid, "%s contains a control character", what)
		}
	}
	return nil
}

// NewID returns prefix followed by n random bytes in hex.
func NewID(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (Go 1.24+)
	return prefix + hex.EncodeToString(b)
}

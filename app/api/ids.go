package api

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/services/contract"
)

// MaxIDLen is the longest id a client may choose (the chat services' limit).
const MaxIDLen = 128

// validNewID returns a CodeInvalid *contract.Error unless id, chosen by the
// client for a new conversation or message, is 1 to MaxIDLen bytes of
// [A-Za-z0-9._-] and neither "." nor "..". Every layer takes such an id as
// is: it is one URL path segment without escaping (and "." and ".." are the
// segments path cleaning removes, so those could never be read back), a
// kvrouting resource id (the KV key escapes '.'), a store id, and the
// plain form of a reaction's record id (no ':'). Ids read from a path are
// checked with chat.ValidID only, so that an id stored before this rule
// stays readable.
func validNewID(what, id string) error {
	if err := chat.ValidID(what, id); err != nil {
		return err
	}
	if id == "." || id == ".." {
		return contract.Errorf(contract.CodeInvalid, "%s %q is reserved", what, id)
	}
	for i := 0; i < len(id); {
		if idByte(id[i]) {
			i++
			continue
		}
		c, _ := idCharacter(id[i:])
		return contract.Errorf(contract.CodeInvalid, "%s %q: %s; ids are A-Z a-z 0-9 '.' '_' '-'", what, id, c)
	}
	return nil
}

// idCharacter describes the character s starts with, decoded as UTF-8, for
// an error message, and returns its length in bytes: "character 'ü'
// (U+00FC)"; one that does not print as itself (a control or format
// character such as U+202E, right-to-left override, or a space other than
// ' ') by its code point alone, "character U+202E"; a byte that does not
// start valid UTF-8 as "byte 0xFF (not UTF-8)".
func idCharacter(s string) (string, int) {
	r, n := utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError && n <= 1:
		if n == 0 {
			return "no character", 0
		}
		return fmt.Sprintf("byte 0x%02X (not UTF-8)", s[0]), 1
	case strconv.IsPrint(r):
		return fmt.Sprintf("character %q (%U)", r, r), n
	}
	return fmt.Sprintf("character %U", r), n
}

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// canonicalPath reports whether p (an escaped URL path) is what path
// cleaning leaves unchanged: it starts with '/' and has no empty, "." or
// ".." segment (a trailing '/' is kept). http.ServeMux redirects any other
// path to its cleaned form, which the API refuses to do.
func canonicalPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

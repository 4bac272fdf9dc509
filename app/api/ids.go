package api

import (
	"path"
	"strings"

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
	for i := 0; i < len(id); i++ {
		if c := id[i]; !idByte(c) {
			return contract.Errorf(contract.CodeInvalid, "%s %q: character %q; ids are A-Z a-z 0-9 '.' '_' '-'", what, id, rune(c))
		}
	}
	return nil
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

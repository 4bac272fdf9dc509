package api

import (
	"strings"
	"testing"

	"github.com/cutover/cutover/services/contract"
)

// TestValidNewIDNamesTheCharacter: a refused id names the offending
// character as the client wrote it, decoded as UTF-8 (not its first byte
// read as Latin-1: 'Ã' for 'ü'), with its code point; an invisible one
// (U+202E, right-to-left override) by its code point only.
func TestValidNewIDNamesTheCharacter(t *testing.T) {
	for _, tc := range []struct {
		id, want string
		not      []string
	}{
		{"aü", `character 'ü' (U+00FC)`, []string{"Ã"}},
		{"a\u202eb", `character U+202E;`, []string{"â", "'\\u202e'"}},
		{"a b", `character ' ' (U+0020)`, nil},
		{"a/b", `character '/' (U+002F)`, nil},
		{"a\u00a0b", `character U+00A0;`, []string{"Â"}},
		{"a\xffb", `not valid UTF-8`, []string{"ÿ", "\xff"}},
	} {
		err := validNewID("conversation id", tc.id)
		e, ok := err.(*contract.Error)
		if !ok || e.Code != contract.CodeInvalid {
			t.Fatalf("validNewID(%q) = %v, want a CodeInvalid *contract.Error", tc.id, err)
		}
		if !strings.Contains(e.Message, tc.want) {
			t.Errorf("validNewID(%q): %q, want it to contain %q", tc.id, e.Message, tc.want)
		}
		for _, n := range tc.not {
			if strings.Contains(e.Message, n) {
				t.Errorf("validNewID(%q): %q contains %q", tc.id, e.Message, n)
			}
		}
	}
}

// TestIDCharacter: idCharacter describes the character at the start of
// s, an invalid UTF-8 byte as such.
func TestIDCharacter(t *testing.T) {
	for s, want := range map[string]string{
		"ü":      `character 'ü' (U+00FC)`,
		"\u202e": `character U+202E`,
		"\x01":   `character U+0001`,
		"\xff":   `byte 0xFF (not UTF-8)`,
		"\xc3":   `byte 0xC3 (not UTF-8)`,
		"😀":      `character '😀' (U+1F600)`,
	} {
		if got, _ := idCharacter(s); got != want {
			t.Errorf("idCharacter(%q) = %q, want %q", s, got, want)
		}
	}
}

package approval

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// MaxNameRunes bounds an operator's name.
const MaxNameRunes = 64

// Canonical returns the form in which operator names are compared: Unicode
// NFKC (compatibility forms folded: fullwidth letters, ligatures), every
// format character removed (Unicode category Cf: zero-width spaces and
// joiners, the soft hyphen, bidi controls, the byte-order mark), case
// folded, NFKC again (folding may denormalise) and surrounding space
// trimmed. Two names are one operator exactly when their canonical forms
// are equal. Any goroutine may call it.
func Canonical(name string) string {
	s := dropFormat(norm.NFKC.String(name))
	s = norm.NFKC.String(cases.Fold().String(s)) // a Caser is not safe to share
	return strings.TrimSpace(dropFormat(s))
}

func dropFormat(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
}

// ValidName reports, as an error wrapping ErrName, why name cannot be a
// registered operator's name: it must be its own canonical form, 1 to
// MaxNameRunes letters, marks, digits and . - _ @ starting with a letter
// or a digit, and written in one script (Unicode UTS #39 "highly
// restrictive": one script, or Latin with Han and the Japanese kana, or
// with Han and Bopomofo, or with Han and Hangul). So "alice" may be
// registered, and "аlice" (Cyrillic а, Latin lice) may not: a name that
// looks like another in a different script never enters a registry.
func ValidName(name string) error {
	if name == "" || !utf8.ValidString(name) {
		return fmt.Errorf("%w: %q: empty or not UTF-8", ErrName, name)
	}
	if c := Canonical(name); c != name {
		return fmt.Errorf("%w: %q is not in its canonical form (%q)", ErrName, name, c)
	}
	if n := utf8.RuneCountInString(name); n > MaxNameRunes {
		return fmt.Errorf("%w: %q: %d characters, at most %d", ErrName, name, n, MaxNameRunes)
	}
	for i, r := range []rune(name) {
		ok := unicode.IsLetter(r) || unicode.IsDigit(r) || (i > 0 && (unicode.Is(unicode.M, r) || strings.ContainsRune(".-_@", r)))
		if !ok {
			return fmt.Errorf("%w: %q: %q is not a letter, a digit or one of . - _ @ after the first", ErrName, name, r)
		}
	}
	if s := scripts(name); !oneScript(s) {
		return fmt.Errorf("%w: %q mixes the scripts %s", ErrName, name, strings.Join(s, ", "))
	}
	return nil
}

// scripts returns the scripts of name's characters, sorted, without Common
// and Inherited (digits, punctuation, combining marks).
func scripts(name string) []string {
	var out []string
	for _, r := range name {
		for s, table := range unicode.Scripts {
			if s != "Common" && s != "Inherited" && unicode.Is(table, r) && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	slices.Sort(out)
	return out
}

// oneScript: UTS #39 §5.2 "highly restrictive".
func oneScript(s []string) bool {
	if len(s) <= 1 {
		return true
	}
	for _, allowed := range [][]string{
		{"Han", "Hiragana", "Katakana", "Latin"},
		{"Bopomofo", "Han", "Latin"},
		{"Hangul", "Han", "Latin"},
	} {
		if !slices.ContainsFunc(s, func(x string) bool { return !slices.Contains(allowed, x) }) {
			return true
		}
	}
	return false
}

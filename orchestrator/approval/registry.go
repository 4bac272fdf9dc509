package approval

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// keyPrefix starts a public key in a registry entry.
const keyPrefix = "ed25519:"

// maxRegistryBytes bounds a registry file.
const maxRegistryBytes = 1 << 20

// Entry is one operator of a registry: a canonical, valid name and an
// ed25519 public key, "ed25519:<base64>".
type Entry struct {
	Name      string `json:"name"`
	PublicKey string `json:"public_key"`
}

func encodePublic(pub ed25519.PublicKey) string {
	return keyPrefix + base64.StdEncoding.EncodeToString(pub)
}

func (e Entry) public() (ed25519.PublicKey, error) {
	b64, ok := strings.CutPrefix(e.PublicKey, keyPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: operator %q: public key %q is not %s<base64>", ErrRegistry, e.Name, e.PublicKey, keyPrefix)
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: operator %q: public key is not %d bytes of base64", ErrRegistry, e.Name, ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// Registry is the operators whose approvals count: one public key per
// canonical name, no key under two names (one person could otherwise
// approve twice). It is immutable once built, apart from Add; safe for
// concurrent reads.
type Registry struct {
	entries []Entry
	keys    map[string]ed25519.PublicKey
}

// Source gives the registry in force. A *Registry is its own Source;
// File reads a file at every call, so that an operator added to or
// removed from it counts at once. Implementations must be safe for
// concurrent use.
type Source interface {
	Registry() (*Registry, error)
}

// Registry implements Source.
func (r *Registry) Registry() (*Registry, error) { return r, nil }

// File is a Source: the registry in the file at this path (LoadRegistry),
// read at every call.
type File string

// Registry implements Source.
func (f File) Registry() (*Registry, error) { return LoadRegistry(string(f)) }

// NewRegistry returns a registry of entries. Errors: ErrRegistry for an
// invalid name or key, a name or a key twice.
func NewRegistry(entries ...Entry) (*Registry, error) {
	r := &Registry{keys: map[string]ed25519.PublicKey{}}
	for _, e := range entries {
		if err := r.Add(e); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add adds e. Errors: ErrRegistry for an invalid name or key, or a name or
// a key already registered (nothing added).
func (r *Registry) Add(e Entry) error {
	if err := ValidName(e.Name); err != nil {
		return fmt.Errorf("%w: %w", ErrRegistry, err)
	}
	pub, err := e.public()
	if err != nil {
		return err
	}
	if _, ok := r.keys[e.Name]; ok {
		return fmt.Errorf("%w: operator %q is registered twice", ErrRegistry, e.Name)
	}
	for name, k := range r.keys {
		if k.Equal(pub) {
			return fmt.Errorf("%w: operators %q and %q have the same key", ErrRegistry, name, e.Name)
		}
	}
	r.keys[e.Name] = pub
	r.entries = append(r.entries, e)
	return nil
}

// Entries returns the operators, in the order they were added.
func (r *Registry) Entries() []Entry { return slices.Clone(r.entries) }

// Len is the number of operators.
func (r *Registry) Len() int { return len(r.entries) }

// MarshalJSON writes the registry as operators.json holds it: a JSON array
// of entries.
func (r *Registry) MarshalJSON() ([]byte, error) {
	if r.entries == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(r.entries)
}

// ParseRegistry decodes operators.json: a JSON array of entries, no other
// field. Errors: ErrRegistry.
func ParseRegistry(b []byte) (*Registry, error) {
	var es []Entry
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&es); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRegistry, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the array", ErrRegistry)
	}
	return NewRegistry(es...)
}

// LoadRegistry reads the registry at path. A file that others than its
// owner may write is refused: whoever can write it can register a key.
// Errors: the file's; ErrRegistry.
func LoadRegistry(path string) (*Registry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("%w: %s is writable by group or others (mode %v)", ErrRegistry, path, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRegistryBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRegistryBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrRegistry, path, maxRegistryBytes)
	}
	r, err := ParseRegistry(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Verify checks that tokens authorise q at now and returns their
// approvals, in the order given, each with its operator's canonical name.
// Every token must be well formed (ErrMalformed), by a registered
// operator (ErrUnknownOperator), signed by that operator's key
// (ErrSignature), for exactly q (ErrMismatch) and valid at now
// (ErrExpired); no operator may approve twice, under one canonical name
// or with one key (ErrSameOperator); at least MinApprovers operators must
// approve (ErrTooFew); and approvers, when given (a command's
// --approver), must name exactly the operators who signed (ErrApprovers).
// Every error wraps ErrRefused and names the approval it is about. Any
// goroutine may call it.
func (r *Registry) Verify(q Request, approvers, tokens []string, now time.Time) ([]*Approval, error) {
	if err := q.Validate(); err != nil {
		return nil, refusal{err}
	}
	if len(tokens) > MaxApprovals {
		return nil, refusal{fmt.Errorf("%w: %d approvals (at most %d)", ErrMalformed, len(tokens), MaxApprovals)}
	}
	var out []*Approval
	var keys []ed25519.PublicKey
	for i, tok := range tokens {
		a, err := Parse(tok)
		if err != nil {
			return nil, refusal{fmt.Errorf("approval %d: %w", i+1, err)}
		}
		name := Canonical(a.Operator)
		pub, ok := r.keys[name]
		if !ok {
			return nil, refusal{fmt.Errorf("%w: approval %d: operator %q is not in the registry", ErrUnknownOperator, i+1, a.Operator)}
		}
		if !ed25519.Verify(pub, signed(a.payload), a.sig) {
			return nil, refusal{fmt.Errorf("%w: approval %d is not signed by %q's key", ErrSignature, i+1, name)}
		}
		if err := a.check(q, now); err != nil {
			return nil, refusal{err}
		}
		for j, b := range out {
			if b.Operator == name || keys[j].Equal(pub) {
				return nil, refusal{fmt.Errorf("%w: %q approves twice (approvals %d and %d)", ErrSameOperator, name, j+1, i+1)}
			}
		}
		a.Operator = name
		out = append(out, a)
		keys = append(keys, pub)
	}
	if len(out) < MinApprovers {
		return nil, refusal{fmt.Errorf("%w: %d signed approval(s), %d distinct operators needed", ErrTooFew, len(out), MinApprovers)}
	}
	if len(approvers) > 0 {
		signers := make([]string, len(out))
		for i, a := range out {
			signers[i] = a.Operator
		}
		names := Distinct(approvers)
		for _, n := range names {
			if !slices.Contains(signers, n) {
				return nil, refusal{fmt.Errorf("%w: approver %q gave no signed approval", ErrApprovers, n)}
			}
		}
		for _, s := range signers {
			if !slices.Contains(names, s) {
				return nil, refusal{fmt.Errorf("%w: %q signed an approval but is not among the approvers (%s)", ErrApprovers, s, strings.Join(names, ", "))}
			}
		}
	}
	return out, nil
}

// Distinct returns the distinct canonical forms of names, non-empty, in
// the order first given.
func Distinct(names []string) []string {
	var out []string
	for _, n := range names {
		if c := Canonical(n); c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// CheckUnsigned checks approver names given without signatures (a
// development deployment): at least MinApprovers distinct canonical names,
// each a ValidName, so the Unicode tricks are refused even there. It
// returns the canonical names. Errors wrap ErrRefused and ErrTooFew or
// ErrName. Any goroutine may call it.
func CheckUnsigned(approvers []string) ([]string, error) {
	names := Distinct(approvers)
	for _, n := range names {
		if err := ValidName(n); err != nil {
			return nil, refusal{err}
		}
	}
	if len(names) < MinApprovers {
		return nil, refusal{fmt.Errorf("%w: %d distinct approver(s) (%s); at least %d distinct ones are needed", ErrTooFew, len(names), strings.Join(names, ", "), MinApprovers)}
	}
	return names, nil
}

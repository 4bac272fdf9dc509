package approval

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"time"
)

// pemType and pemOperator are the PEM block type and header of an
// operator's key file.
const (
	pemType     = "PRIVATE KEY"
	pemOperator = "Operator"
)

// Key is an operator's signing key. Safe for concurrent use.
type Key struct {
	name string
	priv ed25519.PrivateKey
}

// GenerateKey returns a new key for the operator name (in its canonical
// form, which must be a ValidName). Errors: ErrName.
func GenerateKey(name string) (*Key, error) {
	name = Canonical(name)
	if err := ValidName(name); err != nil {
		return nil, err
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return &Key{name: name, priv: priv}, nil
}

// Name is the operator's canonical name.
func (k *Key) Name() string { return k.name }

// Entry is the key's registry entry: the operator's name and public key.
func (k *Key) Entry() Entry {
	return Entry{Name: k.name, PublicKey: encodePublic(k.priv.Public().(ed25519.PublicKey))}
}

// MarshalPEM encodes the key as a PEM "PRIVATE KEY" block (PKCS #8) with
// an "Operator" header naming its operator.
func (k *Key) MarshalPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemType, Headers: map[string]string{pemOperator: k.name}, Bytes: der}), nil
}

// ParseKey decodes a key written by MarshalPEM. Errors wrap ErrMalformed
// (not such a PEM block, not an ed25519 key) or ErrName (its operator).
func ParseKey(b []byte) (*Key, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != pemType {
		return nil, fmt.Errorf("%w: not a PEM %q block", ErrMalformed, pemType)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: a %T, not an ed25519 key", ErrMalformed, k)
	}
	name := blk.Headers[pemOperator]
	if err := ValidName(name); err != nil {
		return nil, err
	}
	return &Key{name: name, priv: priv}, nil
}

// Approve signs the operator's approval of q, issued at now and valid for
// validity (0 < validity <= MaxValidity; whole seconds), and returns its
// token. Errors: ErrMalformed for an invalid request or validity.
func (k *Key) Approve(q Request, now time.Time, validity time.Duration) (string, error) {
	if err := q.Validate(); err != nil {
		return "", err
	}
	if validity < time.Second || validity > MaxValidity {
		return "", fmt.Errorf("%w: validity %s (at least 1s, at most %s)", ErrMalformed, validity, MaxValidity)
	}
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", err
	}
	st := Statement{Version: version, Operator: k.name, Operation: q.Operation, Resource: q.Resource, Region: q.Region,
		Reason: q.Reason, IssuedAt: now.Unix(), ExpiresAt: now.Add(validity).Unix(), Nonce: hex.EncodeToString(nonce[:])}
	return k.Sign(st)
}

// Sign signs st as it is and returns its token: whatever operator it
// names, only a registry entry whose key is k's verifies it, and then only
// under that entry's name (Registry.Verify). Approve is the way to approve
// a request; Sign serves tools and tests that need an exact statement.
func (k *Key) Sign(st Statement) (string, error) {
	payload, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	return token(payload, ed25519.Sign(k.priv, signed(payload))), nil
}

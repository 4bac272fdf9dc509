package approval

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The operations that take two people: their command types
// (events.TypeForceRelease, events.TypeFenceClear).
const (
	OpForceRelease = "force-release"
	OpFenceClear   = "fence-clear"
)

// Operations lists every operation an approval may approve.
var Operations = []string{OpForceRelease, OpFenceClear}

// Limits of an approval.
const (
	// MaxValidity is the longest an approval may be valid: from its issue
	// time to its expiry.
	MaxValidity = time.Hour
	// ClockSkew is how far in the future an approval's issue time may be
	// (the signer's clock runs ahead of the orchestrator's).
	ClockSkew = time.Minute
	// MinApprovers is how many distinct operators must approve.
	MinApprovers = 2
	// MaxApprovals bounds the approvals one command may carry.
	MaxApprovals = 8
	// MaxReasonBytes bounds a reason.
	MaxReasonBytes = 1024
	// maxTokenBytes bounds a token (a statement, its signature, base64).
	maxTokenBytes = 4096
)

// version is the statement's version; tokenPrefix starts every token and
// names it; signingContext prefixes the signed bytes, so that a signature
// made for anything else never verifies as an approval.
const (
	version        = 1
	tokenPrefix    = "cutover-approval-1."
	signingContext = "cutover approval v1\x00"
)

// Request is what a two-person command asks for: the operation, its
// resource ("kind/id", as kvrouting.Resource.String writes it), the region
// (fence clear only) and the reason the audit event records.
type Request struct {
	Operation string
	Resource  string
	Region    string
	Reason    string
}

// Validate reports a request that no approval can be for: an unknown
// operation, no resource, a region missing for fence clear or given for
// force-release, a reason too long. Errors wrap ErrMalformed.
func (q Request) Validate() error {
	switch {
	case !slices.Contains(Operations, q.Operation):
		return fmt.Errorf("%w: operation %q (want one of %s)", ErrMalformed, q.Operation, strings.Join(Operations, ", "))
	case q.Resource == "":
		return fmt.Errorf("%w: no resource", ErrMalformed)
	case q.Operation == OpFenceClear && q.Region == "":
		return fmt.Errorf("%w: %s needs a region", ErrMalformed, q.Operation)
	case q.Operation != OpFenceClear && q.Region != "":
		return fmt.Errorf("%w: %s takes no region", ErrMalformed, q.Operation)
	case len(q.Reason) > MaxReasonBytes:
		return fmt.Errorf("%w: a reason of %d bytes (at most %d)", ErrMalformed, len(q.Reason), MaxReasonBytes)
	}
	return nil
}

func (q Request) String() string {
	s := q.Operation + " " + q.Resource
	if q.Region != "" {
		s += " at " + q.Region
	}
	return fmt.Sprintf("%s (reason %q)", s, q.Reason)
}

// Statement is what an operator signs. Its canonical encoding is its JSON
// with the fields in this order and no space (encoding/json's): a token
// whose statement is encoded any other way is malformed, so that one
// signature means one statement to every reader. Times are Unix seconds.
type Statement struct {
	Version   int    `json:"v"`
	Operator  string `json:"operator"`
	Operation string `json:"op"`
	Resource  string `json:"resource"`
	Region    string `json:"region"`
	Reason    string `json:"reason"`
	IssuedAt  int64  `json:"iat"`
	ExpiresAt int64  `json:"exp"`
	// Nonce makes every approval distinct (128 random bits, hex).
	Nonce string `json:"nonce"`
}

// Request is the request the statement approves.
func (s Statement) Request() Request {
	return Request{Operation: s.Operation, Resource: s.Resource, Region: s.Region, Reason: s.Reason}
}

// Approval is a parsed approval token: the statement, its ID and the
// signature (not yet verified: Registry.Verify does).
type Approval struct {
	Statement
	// ID names the approval: the first 128 bits of the SHA-256 of the
	// signed statement, hex. The orchestrator records every ID it
	// accepts, so an approval is used once.
	ID      string
	payload []byte
	sig     []byte
}

// Issued and Expires are the statement's times.
func (a *Approval) Issued() time.Time  { return time.Unix(a.IssuedAt, 0).UTC() }
func (a *Approval) Expires() time.Time { return time.Unix(a.ExpiresAt, 0).UTC() }

// token encodes a signed statement.
func token(payload, sig []byte) string {
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// signed is what the signature covers.
func signed(payload []byte) []byte { return append([]byte(signingContext), payload...) }

// Parse decodes an approval token (surrounding space ignored) without
// verifying it. Errors wrap ErrMalformed: not a token, a statement that is
// not canonical JSON or not of this version, an unknown operation, an
// empty operator or resource, a bad nonce.
func Parse(tok string) (*Approval, error) {
	tok = strings.TrimSpace(tok)
	if len(tok) > maxTokenBytes {
		return nil, fmt.Errorf("%w: a token of %d bytes", ErrMalformed, len(tok))
	}
	rest, ok := strings.CutPrefix(tok, tokenPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: not an approval token (want %s…)", ErrMalformed, tokenPrefix)
	}
	p64, s64, ok := strings.Cut(rest, ".")
	if !ok {
		return nil, fmt.Errorf("%w: no signature", ErrMalformed)
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p64)
	sig, err2 := base64.RawURLEncoding.DecodeString(s64)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%w: not base64url", ErrMalformed)
	}
	var st Statement
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("%w: statement: %v", ErrMalformed, err)
	}
	if canon, err := json.Marshal(st); err != nil || !bytes.Equal(canon, payload) {
		return nil, fmt.Errorf("%w: the statement is not in its canonical encoding", ErrMalformed)
	}
	if st.Version != version {
		return nil, fmt.Errorf("%w: statement version %d (want %d)", ErrMalformed, st.Version, version)
	}
	if err := st.Request().Validate(); err != nil {
		return nil, err
	}
	if st.Operator == "" {
		return nil, fmt.Errorf("%w: no operator", ErrMalformed)
	}
	if n, err := hex.DecodeString(st.Nonce); err != nil || len(n) != 16 {
		return nil, fmt.Errorf("%w: nonce %q", ErrMalformed, st.Nonce)
	}
	h := sha256.Sum256(payload)
	return &Approval{Statement: st, ID: hex.EncodeToString(h[:16]), payload: payload, sig: sig}, nil
}

// check reports why a does not approve q at now: another request
// (ErrMismatch), or not valid now (ErrExpired).
func (a *Approval) check(q Request, now time.Time) error {
	if a.Request() != q {
		return fmt.Errorf("%w: the approval of %q is for %s, not %s", ErrMismatch, a.Operator, a.Request(), q)
	}
	validity := time.Duration(a.ExpiresAt-a.IssuedAt) * time.Second
	switch {
	case validity <= 0 || validity > MaxValidity:
		return fmt.Errorf("%w: the approval of %q is valid for %s (more than 0, at most %s)", ErrExpired, a.Operator, validity, MaxValidity)
	case !now.Before(a.Expires()):
		return fmt.Errorf("%w: the approval of %q expired at %s", ErrExpired, a.Operator, a.Expires().Format(time.RFC3339))
	case a.Issued().After(now.Add(ClockSkew)):
		return fmt.Errorf("%w: the approval of %q is issued in the future (%s)", ErrExpired, a.Operator, a.Issued().Format(time.RFC3339))
	}
	return nil
}

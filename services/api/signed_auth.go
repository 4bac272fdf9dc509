package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cutover/cutover/services/chat"
	"github.com/cutover/cutover/services/contract"
)

// SignedAuth is the production Authenticator: a user token is
// "u1.<base64url(user id)>.<expiry unix seconds>.<base64url(HMAC-SHA256)>",
// minted by SignUserToken with the same secret (an identity provider would
// mint them in a real deployment), so a caller cannot claim another user.
// Service identities use "svc:<name>:<secret>" as with DevAuth. Safe for
// concurrent use once built.
type SignedAuth struct {
	// Secret keys the user-token MACs (at least 16 bytes).
	Secret []byte
	// ServiceSecrets maps a service name to its secret.
	ServiceSecrets map[string]string
	// Clock is the time source for expiry (default time.Now).
	Clock func() time.Time
}

var _ Authenticator = SignedAuth{}

const userTokenPrefix = "u1."

// SignUserToken mints a user token valid until now+ttl. Errors: an invalid
// user id or a secret shorter than 16 bytes.
func SignUserToken(secret []byte, user string, ttl time.Duration, now time.Time) (string, error) {
	if len(secret) < 16 {
		return "", fmt.Errorf("api: token secret must be at least 16 bytes")
	}
	if err := chat.ValidID("user id", user); err != nil {
		return "", err
	}
	body := userTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(user)) + "." + strconv.FormatInt(now.Add(ttl).Unix(), 10)
	return body + "." + base64.RawURLEncoding.EncodeToString(mac(secret, body)), nil
}

func mac(secret []byte, body string) []byte {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(body))
	return h.Sum(nil)
}

// Authenticate implements Authenticator.
func (a SignedAuth) Authenticate(r *http.Request) (Identity, error) {
	tok, err := bearer(r)
	if err != nil {
		return Identity{}, err
	}
	if strings.HasPrefix(tok, "svc:") {
		return DevAuth{ServiceSecrets: a.ServiceSecrets}.Authenticate(r)
	}
	bad := contract.Errorf(contract.CodeUnauthorized, "bad or expired user token")
	if len(a.Secret) < 16 || !strings.HasPrefix(tok, userTokenPrefix) {
		return Identity{}, bad
	}
	i := strings.LastIndexByte(tok, '.')
	body, sig := tok[:i], tok[i+1:]
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || subtle.ConstantTimeCompare(got, mac(a.Secret, body)) != 1 {
		return Identity{}, bad
	}
	parts := strings.Split(strings.TrimPrefix(body, userTokenPrefix), ".")
	if len(parts) != 2 {
		return Identity{}, bad
	}
	user, err := base64.RawURLEncoding.DecodeString(parts[0])
	exp, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || err2 != nil {
		return Identity{}, bad
	}
	now := time.Now
	if a.Clock != nil {
		now = a.Clock
	}
	if now().Unix() >= exp {
		return Identity{}, bad
	}
	if err := chat.ValidID("user id", string(user)); err != nil {
		return Identity{}, bad
	}
	return Identity{Kind: User, Name: string(user)}, nil
}

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

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/services/contract"
)

// SignedAuth is the production Authenticator: a user token is
// "u2.<base64url(user id)>.<base64url(audience)>.<issued unix s>.<expiry unix s>.<base64url(HMAC-SHA256)>",
// minted by SignUserToken with the same secret (an identity provider would
// mint them in a real deployment), so a caller cannot claim another user.
// A token is accepted only for its audience (the API and the projector
// take different ones, so a token for one does not open the other), and
// only while it is valid: not after its expiry, not before its issue time
// (beyond a minute of clock skew), and never if it was minted for longer
// than MaxTTL. Service identities use "svc:<name>:<secret>" as with
// DevAuth. Safe for concurrent use once built.
type SignedAuth struct {
	// Secret keys the user-token MACs (at least 16 bytes).
	Secret []byte
	// Audience is the audience a token must name (AudienceAPI when empty).
	Audience string
	// MaxTTL bounds a token's validity, expiry minus issue time
	// (MaxTokenTTL when zero).
	MaxTTL time.Duration
	// ServiceSecrets maps a service name to its secret.
	ServiceSecrets map[string]string
	// Clock is the time source for expiry (default time.Now).
	Clock func() time.Time
}

var _ Authenticator = SignedAuth{}

// Token audiences.
const (
	// AudienceAPI is the user-facing API's audience.
	AudienceAPI = "api"
	// AudienceProjector is the projector's (read models, dashboard).
	AudienceProjector = "projector"
)

// MaxTokenTTL is the longest validity a user token may have.
const MaxTokenTTL = 24 * time.Hour

// tokenSkew is how far in the future a token's issue time may lie.
const tokenSkew = time.Minute

const userTokenPrefix = "u2."

// SignUserToken mints a token for user and audience, valid from now until
// now+ttl. Errors: an invalid user id or audience, a secret shorter than 16
// bytes, a ttl above MaxTokenTTL.
func SignUserToken(secret []byte, user, audience string, ttl time.Duration, now time.Time) (string, error) {
	if len(secret) < 16 {
		return "", fmt.Errorf("api: token secret must be at least 16 bytes")
	}
	if err := chat.ValidID("user id", user); err != nil {
		return "", err
	}
	if !validAudience(audience) {
		return "", fmt.Errorf("api: audience %q: want 1 to 32 of a-z 0-9 -", audience)
	}
	if ttl > MaxTokenTTL {
		return "", fmt.Errorf("api: token ttl %v above the maximum %v", ttl, MaxTokenTTL)
	}
	body := userTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(user)) + "." + base64.RawURLEncoding.EncodeToString([]byte(audience)) +
		"." + strconv.FormatInt(now.Unix(), 10) + "." + strconv.FormatInt(now.Add(ttl).Unix(), 10)
	return body + "." + base64.RawURLEncoding.EncodeToString(mac(secret, body)), nil
}

func validAudience(a string) bool {
	if a == "" || len(a) > 32 {
		return false
	}
	for _, c := range a {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
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
	if len(parts) != 4 {
		return Identity{}, bad
	}
	user, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	aud, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	iat, err3 := strconv.ParseInt(parts[2], 10, 64)
	exp, err4 := strconv.ParseInt(parts[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return Identity{}, bad
	}
	want, maxTTL := a.Audience, a.MaxTTL
	if want == "" {
		want = AudienceAPI
	}
	if maxTTL <= 0 {
		maxTTL = MaxTokenTTL
	}
	if subtle.ConstantTimeCompare(aud, []byte(want)) != 1 {
		return Identity{}, contract.Errorf(contract.CodeUnauthorized, "user token is not for this service (audience %q)", aud)
	}
	now := time.Now
	if a.Clock != nil {
		now = a.Clock
	}
	t := now().Unix()
	if t >= exp || iat > t+int64(tokenSkew/time.Second) || exp-iat > int64(maxTTL/time.Second) {
		return Identity{}, bad
	}
	if err := chat.ValidID("user id", string(user)); err != nil {
		return Identity{}, bad
	}
	return Identity{Kind: User, Name: string(user)}, nil
}

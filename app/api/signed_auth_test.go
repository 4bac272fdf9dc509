package api

import (
	"encoding/base64"
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/services/contract"
)

func TestSignedAuth(t *testing.T) {
	secret := []byte("0123456789abcdef0123")
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	a := SignedAuth{Secret: secret, ServiceSecrets: map[string]string{"validator": "s3"}, Clock: func() time.Time { return now }}
	auth := func(a SignedAuth, tok string) (Identity, error) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return a.Authenticate(r)
	}
	tok, err := SignUserToken(secret, "alice", AudienceAPI, time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := auth(a, tok); err != nil || id.Kind != User || id.Name != "alice" {
		t.Fatalf("valid token: %v %+v", err, id)
	}
	if id, err := auth(a, "svc:validator:s3"); err != nil || id.Kind != Service {
		t.Fatalf("service: %v", err)
	}
	// The projector takes its own audience, and not the API's.
	proj := a
	proj.Audience = AudienceProjector
	ptok, _ := SignUserToken(secret, "ops", AudienceProjector, time.Hour, now)
	if id, err := auth(proj, ptok); err != nil || id.Name != "ops" {
		t.Fatalf("projector token at the projector: %v", err)
	}
	// A token minted, by hand, for longer than the maximum.
	long := func() string {
		body := userTokenPrefix + "YWxpY2U." + "YXBp." + strconv.FormatInt(now.Unix(), 10) + "." + strconv.FormatInt(now.Add(MaxTokenTTL+time.Hour).Unix(), 10)
		return body + "." + base64.RawURLEncoding.EncodeToString(mac(secret, body))
	}()
	future, _ := SignUserToken(secret, "alice", AudienceAPI, time.Hour, now.Add(time.Hour))
	other, _ := SignUserToken([]byte("another-secret-of-16+"), "alice", AudienceAPI, time.Hour, now)
	expired, _ := SignUserToken(secret, "alice", AudienceAPI, -time.Second, now)
	forged := strings.Replace(tok, tok[3:8], "Ym9i", 1) // claim another user with alice's MAC
	for name, bad := range map[string]struct {
		a   SignedAuth
		tok string
	}{
		"dev token": {a, "user:alice"}, "wrong secret": {a, other}, "expired": {a, expired}, "forged user": {a, forged},
		"truncated": {a, tok[:len(tok)-3]}, "garbage": {a, "u2.x.y.z.w.v"}, "bad service secret": {a, "svc:validator:nope"},
		"old format": {a, "u1.YWxpY2U.1900000000.x"}, "projector token at the API": {a, ptok}, "API token at the projector": {proj, tok},
		"longer than the maximum": {a, long}, "issued in the future": {a, future},
	} {
		_, err := auth(bad.a, bad.tok)
		var e *contract.Error
		if !errors.As(err, &e) || e.Code != contract.CodeUnauthorized {
			t.Errorf("%s: got %v, want unauthorized", name, err)
		}
	}
	if _, err := SignUserToken([]byte("short"), "alice", AudienceAPI, time.Hour, now); err == nil {
		t.Fatal("short secret accepted")
	}
	if _, err := SignUserToken(secret, "alice", AudienceAPI, MaxTokenTTL+time.Second, now); err == nil {
		t.Fatal("ttl above the maximum accepted")
	}
	if _, err := SignUserToken(secret, "alice", "a.b", time.Hour, now); err == nil {
		t.Fatal("bad audience accepted")
	}
}

package api

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/services/contract"
)

func TestSignedAuth(t *testing.T) {
	secret := []byte("0123456789abcdef0123")
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	a := SignedAuth{Secret: secret, ServiceSecrets: map[string]string{"validator": "s3"}, Clock: func() time.Time { return now }}
	auth := func(tok string) (Identity, error) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return a.Authenticate(r)
	}
	tok, err := SignUserToken(secret, "alice", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := auth(tok); err != nil || id.Kind != User || id.Name != "alice" {
		t.Fatalf("valid token: %v %+v", err, id)
	}
	if id, err := auth("svc:validator:s3"); err != nil || id.Kind != Service {
		t.Fatalf("service: %v", err)
	}
	other, _ := SignUserToken([]byte("another-secret-of-16+"), "alice", time.Hour, now)
	expired, _ := SignUserToken(secret, "alice", -time.Second, now)
	forged := strings.Replace(tok, tok[3:8], "Ym9i", 1) // claim another user with alice's MAC
	for name, bad := range map[string]string{
		"dev token": "user:alice", "wrong secret": other, "expired": expired, "forged user": forged,
		"truncated": tok[:len(tok)-3], "garbage": "u1.x.y.z", "bad service secret": "svc:validator:nope",
	} {
		_, err := auth(bad)
		var e *contract.Error
		if !errors.As(err, &e) || e.Code != contract.CodeUnauthorized {
			t.Errorf("%s: got %v, want unauthorized", name, err)
		}
	}
	if _, err := SignUserToken([]byte("short"), "alice", time.Hour, now); err == nil {
		t.Fatal("short secret accepted")
	}
}

package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/cutover/cutover/internal/system"
)

// TestSignedTokens: with an auth secret the API refuses development tokens
// and accepts a token minted by `cutover token` with the same secret.
func TestSignedTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the system")
	}
	const secret = "a-gateway-secret-of-32-bytes-xyz"
	s := startSystem(t, func(c *system.Config) { c.AuthSecret = secret })
	post := func(tok string) int {
		req, _ := http.NewRequest("POST", s.api+"/v1/conversations", strings.NewReader(`{"title":"t"}`))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("user:alice"); code != http.StatusUnauthorized {
		t.Fatalf("dev token with an auth secret: %d, want 401", code)
	}
	code, out, errs := run(t, "token", "--user", "alice", "--secret", secret)
	if code != 0 {
		t.Fatalf("token: %d %s", code, errs)
	}
	if code := post(strings.TrimSpace(out)); code != http.StatusCreated {
		t.Fatalf("signed token: %d, want 201", code)
	}
	if code, _, _ := run(t, "token", "--user", "alice", "--secret", "short"); code != 2 {
		t.Fatalf("short secret: exit %d, want 2", code)
	}
}

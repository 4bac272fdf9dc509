package main

import (
	"net/http"
	"os"
	"path/filepath"
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
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secretFile, short := file("auth.secret", secret), file("short", "short")
	code, out, errs := run(t, "token", "--user", "alice", "--secret-file", secretFile)
	if code != 0 {
		t.Fatalf("token: %d %s", code, errs)
	}
	if code := post(strings.TrimSpace(out)); code != http.StatusCreated {
		t.Fatalf("signed token: %d, want 201", code)
	}
	// A token for the projector does not open the API.
	_, out, _ = run(t, "token", "--user", "alice", "--secret-file", secretFile, "--audience", "projector")
	if code := post(strings.TrimSpace(out)); code != http.StatusUnauthorized {
		t.Fatalf("projector token at the API: %d, want 401", code)
	}
	for _, bad := range [][]string{
		{"--secret-file", short},                          // too short
		{"--secret", secret},                              // on the command line
		{"--secret-file", secretFile, "--ttl", "25h"},     // above the maximum
		{"--secret-file", secretFile, "--audience", "db"}, // unknown audience
		{}, // no secret at all
	} {
		code, out, errs := run(t, append([]string{"token", "--user", "alice"}, bad...)...)
		if code != 2 || out != "" {
			t.Errorf("token %v: exit %d, printed %q; want 2 and no token", bad, code, out)
		}
		if len(bad) > 0 && bad[0] == "--secret" && !strings.Contains(errs, "CUTOVER_AUTH_SECRET") {
			t.Errorf("--secret on the command line: %q does not name $CUTOVER_AUTH_SECRET", errs)
		}
	}
}

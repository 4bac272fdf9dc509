package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/app/api"
	"github.com/cutover/cutover/app/client"
	cnats "github.com/cutover/cutover/nats"
)

// secureFiles are a secured deployment's files, written by `cutover certs`
// (the documented one-time command) into dir, with bcrypt's lowest cost:
// every connection's authentication pays it on the server, and the tests'
// servers run under the race detector on a loaded machine.
type secureFiles struct{ dir string }

func writeSecureFiles(t *testing.T, dir string, regions ...string) secureFiles {
	t.Helper()
	if len(regions) == 0 {
		regions = []string{"us-east", "eu-west"}
	}
	var out, errs bytes.Buffer
	if code := Run(context.Background(), []string{"certs", "--dir", dir, "--regions", strings.Join(regions, ","), "--bcrypt-cost", "4", "--operators", "alice,bob"}, &out, &errs); code != 0 {
		t.Fatalf("cutover certs: exit %d: %s", code, errs.String())
	}
	return secureFiles{dir: dir}
}

func (f secureFiles) path(name string) string { return filepath.Join(f.dir, name) }

// natsFlags are a `cutover nats` node's: users, TLS on clients, mutual
// TLS on routes.
func (f secureFiles) natsFlags() []string {
	return []string{"--users", f.path(certsUsersFile), "--tls-cert", f.path("server.pem"), "--tls-key", f.path("server-key.pem"),
		"--tls-ca", f.path("ca.pem"), "--route-tls"}
}

// creds are a role's credentials as user: its NATS user, and the contract
// secret (the gateway, the orchestrators) or its region's contract key (a
// service-<region> user).
func (f secureFiles) creds(user string) []string {
	c := []string{"--nats-user", user, "--nats-password-file", f.path("nats-" + user + ".password"), "--nats-ca", f.path("ca.pem")}
	switch region, svc := strings.CutPrefix(user, "service-"); {
	case user == "gateway" || user == "orchestrator":
		c = append(c, "--contract-secret-file", f.path(certsContractSecret))
	case svc:
		c = append(c, "--contract-key-file", f.path(certsContractKey(region)))
	}
	return c
}

// secrets are the token and service secrets of the gateway and projector.
func (f secureFiles) secrets() []string {
	return []string{"--auth-secret-file", f.path(certsAuthSecret), "--service-secret-file", f.path(certsServiceSecret)}
}

func (f secureFiles) read(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(f.path(name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// security is user's client security, for the test's own connections.
func (f secureFiles) security(t testing.TB, user string) cnats.ClientSecurity {
	return cnats.ClientSecurity{User: user, Password: f.read(t, "nats-"+user+".password"), CAFile: f.path("ca.pem")}
}

// token mints a signed token for user and audience.
func (f secureFiles) token(t testing.TB, user, audience string) string {
	t.Helper()
	tok, err := api.SignUserToken([]byte(f.read(t, certsAuthSecret)), user, audience, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// client is an SDK client of user with a signed token.
func (f secureFiles) client(t *testing.T, apiURL, user string) *client.Client {
	t.Helper()
	c, err := client.New(apiURL, f.token(t, user, api.AudienceAPI))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

package ops

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator/approval"
	"github.com/cutover/cutover/services/contractnats"
)

// Files `cutover certs` writes, besides the PKI's, one
// nats-<user>.password per user and one operator-<name>.key per operator.
const (
	CertsUsersFile      = "users.json"
	CertsAuthSecret     = "auth.secret"
	CertsServiceSecret  = "service.secret"
	CertsPromCredential = "prometheus.credentials"
	CertsOperators      = "operators.json"
	CertsContractSecret = "contract.secret"
)

// CertsContractKey is the file of region's contract key.
func CertsContractKey(region string) string { return "contract-" + region + ".key" }

// CertsUser is one NATS user `cutover certs` writes, with the role that
// connects as it.
type CertsUser struct {
	Name     string
	Identity cnats.Identity
	Regions  []string
}

// CertsUsers are the users of a deployment of regions: the admin
// (`cutover provision`), the gateway (serving every region), the
// orchestrators, the projector and the health checks (readers), and one
// service user per region (`cutover service --region R`).
func CertsUsers(regions []string) []CertsUser {
	us := []CertsUser{
		{"admin", cnats.IdentityAdmin, nil},
		{"gateway", cnats.IdentityRouting, regions},
		{"orchestrator", cnats.IdentityOrchestrator, nil},
		{"projector", cnats.IdentityReader, nil},
		{"health", cnats.IdentityReader, nil},
	}
	for _, r := range regions {
		us = append(us, CertsUser{"service-" + r, cnats.IdentityService, []string{r}})
	}
	return us
}

// CertsRequest is `cutover certs`: what a secured deployment needs, written
// once into Dir. The caller has validated it.
type CertsRequest struct {
	Dir      string
	Regions  []string
	Hosts    []string
	Validity time.Duration
	// BcryptCost is the cost of the users' password hashes.
	BcryptCost int
	// Operators get a key pair each (test deployments); the registry is
	// written empty without them.
	Operators []string
}

// WriteCerts writes r's files into r.Dir and describes them on stdout: a
// CA with server/route and client certificates (loopback and r.Hosts), the
// users file with a bcrypt-hashed password per user of CertsUsers and each
// password in nats-<user>.password, the token and service secrets,
// Prometheus' credentials, the contract secret and each region's contract
// key derived from it (contractnats.RegionKey), and the operator registry.
// Secrets and keys are 0600, the CA, the credentials and the registry
// 0644. A Dir that already holds a users file is left as it is. The users
// file is written last: its presence means the directory is complete.
func WriteCerts(r CertsRequest, stdout io.Writer) error {
	if _, err := os.Stat(filepath.Join(r.Dir, CertsUsersFile)); err == nil {
		fmt.Fprintf(stdout, "cutover certs: %s already holds a deployment's certificates and secrets; nothing written (remove it to start over)\n", r.Dir)
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return err
	}
	write := func(name, content string, mode fs.FileMode) error {
		return os.WriteFile(filepath.Join(r.Dir, name), []byte(content), mode)
	}
	pki, err := cnats.WritePKI(r.Dir, r.Validity, r.Hosts...)
	if err != nil {
		return err
	}
	if err := os.Chmod(pki.CA, 0o644); err != nil {
		return err
	}
	var users []cnats.User
	for _, u := range CertsUsers(r.Regions) {
		pw := randomSecret()
		h, err := cnats.HashPassword(pw, r.BcryptCost)
		if err != nil {
			return err
		}
		users = append(users, cnats.User{Name: u.Name, Password: h, Identity: u.Identity, Regions: u.Regions})
		if err := write("nats-"+u.Name+".password", pw+"\n", 0o600); err != nil {
			return err
		}
	}
	service := randomSecret()
	for name, content := range map[string]string{CertsAuthSecret: randomSecret(), CertsServiceSecret: service} {
		if err := write(name, content+"\n", 0o600); err != nil {
			return err
		}
	}
	if err := write(CertsPromCredential, "svc:validator:"+service+"\n", 0o644); err != nil {
		return err
	}
	csecret := randomSecret()
	if err := write(CertsContractSecret, csecret+"\n", 0o600); err != nil {
		return err
	}
	for _, region := range r.Regions {
		if err := write(CertsContractKey(region), hex.EncodeToString(contractnats.RegionKey([]byte(csecret), region))+"\n", 0o600); err != nil {
			return err
		}
	}
	reg, err := approval.NewRegistry()
	if err != nil {
		return err
	}
	for _, n := range r.Operators {
		k, err := approval.GenerateKey(n)
		if err != nil {
			return err
		}
		pem, err := k.MarshalPEM()
		if err != nil {
			return err
		}
		if err := write("operator-"+k.Name()+".key", string(pem), 0o600); err != nil {
			return err
		}
		if err := reg.Add(k.Entry()); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(reg, "", "  ")
	if err != nil {
		return err
	}
	if err := write(CertsOperators, string(b)+"\n", 0o644); err != nil {
		return err
	}
	b, err = cnats.MarshalUsersFile(users)
	if err != nil {
		return err
	}
	if err := write(CertsUsersFile, string(b), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cutover certs: wrote into %s\n", r.Dir)
	fmt.Fprintf(stdout, "  TLS       %s (CA), %s + %s (servers and routes), %s + %s (clients)\n",
		filepath.Base(pki.CA), filepath.Base(pki.ServerCert), filepath.Base(pki.ServerKey), filepath.Base(pki.ClientCert), filepath.Base(pki.ClientKey))
	fmt.Fprintf(stdout, "  NATS      %s (bcrypt), nats-<user>.password for", CertsUsersFile)
	for _, u := range CertsUsers(r.Regions) {
		fmt.Fprintf(stdout, " %s (%s)", u.Name, u.Identity)
	}
	fmt.Fprintf(stdout, "\n  secrets   %s, %s, %s\n", CertsAuthSecret, CertsServiceSecret, CertsPromCredential)
	fmt.Fprintf(stdout, "  contract  %s (orchestrator, gateway),", CertsContractSecret)
	for _, region := range r.Regions {
		fmt.Fprintf(stdout, " %s", CertsContractKey(region))
	}
	fmt.Fprintln(stdout, " (cutover service --region R)")
	fmt.Fprintf(stdout, "  operators %s (%d registered", CertsOperators, reg.Len())
	for _, e := range reg.Entries() {
		fmt.Fprintf(stdout, "; operator-%s.key", e.Name)
	}
	fmt.Fprintln(stdout, ")")
	return nil
}

// randomSecret is a random secret of 52 base32 characters (260 bits).
func randomSecret() string { return rand.Text() + rand.Text() }

package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cutover/cutover/internal/system"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator/approval"
	"github.com/cutover/cutover/services/contractnats"
	"golang.org/x/crypto/bcrypt"
)

func init() {
	register("certs", "write a deployment's certificates, NATS users (bcrypt) and secrets into a directory (once)", oneLine(runCerts))
}

// certsUser is one NATS user `cutover certs` writes, with the role that
// connects as it.
type certsUser struct {
	name     string
	identity cnats.Identity
	regions  []string
}

// certsUsers are the users of a deployment of regions: the admin
// (`cutover provision`), the gateway (serving every region), the
// orchestrators, the projector and the health checks (readers), and one
// service user per region (`cutover service --region R`).
func certsUsers(regions []string) []certsUser {
	us := []certsUser{
		{"admin", cnats.IdentityAdmin, nil},
		{"gateway", cnats.IdentityRouting, regions},
		{"orchestrator", cnats.IdentityOrchestrator, nil},
		{"projector", cnats.IdentityReader, nil},
		{"health", cnats.IdentityReader, nil},
	}
	for _, r := range regions {
		us = append(us, certsUser{"service-" + r, cnats.IdentityService, []string{r}})
	}
	return us
}

// Files `cutover certs` writes, besides the PKI's and one
// nats-<user>.password per user.
const (
	certsUsersFile      = "users.json"
	certsAuthSecret     = "auth.secret"
	certsServiceSecret  = "service.secret"
	certsPromCredential = "prometheus.credentials"
	certsOperators      = "operators.json"
)

func runCerts(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := newFlags("certs", "certs --dir DIR [--regions a,b] [--hosts h1,h2] [--validity D] [--operators a,b]\n\n"+
		"Writes, once, what a secured deployment needs into DIR: a CA with a server/route certificate (loopback\n"+
		"and --hosts) and a client certificate; "+certsUsersFile+" for `cutover nats --users` with one user per role\n"+
		"(admin, gateway, orchestrator, projector, health, service-<region>), their passwords bcrypt-hashed, and\n"+
		"each password in nats-<user>.password (for --nats-password-file); the token secret ("+certsAuthSecret+", for\n"+
		"--auth-secret-file and `cutover token --secret-file`), the validator's service secret ("+certsServiceSecret+"),\n"+
		"Prometheus' bearer credentials ("+certsPromCredential+"), the contract secret ("+certsContractSecret+", for the orchestrator's\n"+
		"and the gateway's --contract-secret-file) and each region's contract key (contract-<region>.key, for\n"+
		"`cutover service --region R --contract-key-file`); the operator registry the orchestrators read\n"+
		"("+certsOperators+", --operators-file): empty, or with a key pair per --operators name (operator-<name>.key,\n"+
		"for test deployments: an operator's key is better made on the operator's own machine with `cutover operator\n"+
		"keygen` and added with `cutover operator register`). Keys and secrets are written 0600 (the\n"+
		"credentials file 0644: Prometheus runs as another user), readable by whoever runs the roles: run it as\n"+
		"that user (docker-compose.yml's certs service does). A DIR that already holds them is left as it is.", stdout)
	dir := fset.String("dir", "", "output directory (created; required)")
	regions := fset.String("regions", "us-east,eu-west", "the deployment's regions (one service user each; the gateway serves all)")
	hosts := fset.String("hosts", "", "extra DNS names or IPs of the NATS servers' certificate, comma separated")
	validity := fset.Duration("validity", 365*24*time.Hour, "certificate validity")
	operators := fset.String("operators", "", "operators to make a key pair for and register in "+certsOperators+", comma separated (test deployments)")
	cost := fset.Int("bcrypt-cost", bcrypt.DefaultCost, "bcrypt cost of the users' password hashes (every connection's authentication pays it on the server; tests lower it)")
	checkConfig := addCheckConfig(fset)
	if err := parse(fset, args); err != nil {
		return err
	}
	if fset.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fset.Arg(0))
	}
	if *dir == "" {
		return fmt.Errorf("%w: --dir is required", errUsage)
	}
	rs := splitList(*regions)
	if len(rs) == 0 {
		return fmt.Errorf("%w: --regions is empty", errUsage)
	}
	for _, r := range rs {
		if err := parseRegion("regions", r); err != nil {
			return err
		}
	}
	if *validity <= 0 {
		return fmt.Errorf("%w: --validity must be positive", errUsage)
	}
	opNames := approval.Distinct(splitList(*operators))
	if len(opNames) != len(splitList(*operators)) {
		return fmt.Errorf("%w: --operators names an operator twice", errUsage)
	}
	for _, n := range opNames {
		if err := approval.ValidName(n); err != nil {
			return fmt.Errorf("%w: --operators: %w", errUsage, err)
		}
	}
	if *cost < bcrypt.MinCost || *cost > bcrypt.MaxCost {
		return fmt.Errorf("%w: --bcrypt-cost must be %d..%d", errUsage, bcrypt.MinCost, bcrypt.MaxCost)
	}
	if *checkConfig {
		return configChecked(stdout, "certs")
	}
	if _, err := os.Stat(filepath.Join(*dir, certsUsersFile)); err == nil {
		fmt.Fprintf(stdout, "cutover certs: %s already holds a deployment's certificates and secrets; nothing written (remove it to start over)\n", *dir)
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	pki, err := cnats.WritePKI(*dir, *validity, splitList(*hosts)...)
	if err != nil {
		return err
	}
	if err := os.Chmod(pki.CA, 0o644); err != nil {
		return err
	}
	var entries []usersEntry
	for _, u := range certsUsers(rs) {
		pw := system.RandomSecret()
		h, err := cnats.HashPassword(pw, *cost)
		if err != nil {
			return err
		}
		entries = append(entries, usersEntry{Name: u.name, Password: h, Identity: string(u.identity), Regions: u.regions})
		if err := os.WriteFile(filepath.Join(*dir, "nats-"+u.name+".password"), []byte(pw+"\n"), 0o600); err != nil {
			return err
		}
	}
	service := system.RandomSecret()
	for name, content := range map[string]string{certsAuthSecret: system.RandomSecret(), certsServiceSecret: service} {
		if err := os.WriteFile(filepath.Join(*dir, name), []byte(content+"\n"), 0o600); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(*dir, certsPromCredential), []byte("svc:validator:"+service+"\n"), 0o644); err != nil {
		return err
	}
	// The contract secret (orchestrator, gateway) and each region's key
	// derived from it (`cutover service --region R`).
	csecret := system.RandomSecret()
	if err := os.WriteFile(filepath.Join(*dir, certsContractSecret), []byte(csecret+"\n"), 0o600); err != nil {
		return err
	}
	for _, r := range rs {
		key := hex.EncodeToString(contractnats.RegionKey([]byte(csecret), r))
		if err := os.WriteFile(filepath.Join(*dir, certsContractKey(r)), []byte(key+"\n"), 0o600); err != nil {
			return err
		}
	}
	reg, err := approval.NewRegistry()
	if err != nil {
		return err
	}
	for _, n := range opNames {
		k, err := approval.GenerateKey(n)
		if err != nil {
			return err
		}
		pem, err := k.MarshalPEM()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*dir, "operator-"+k.Name()+".key"), pem, 0o600); err != nil {
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
	if err := os.WriteFile(filepath.Join(*dir, certsOperators), append(b, '\n'), 0o644); err != nil {
		return err
	}
	b, err = json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return err
	}
	// users.json last: its presence means the directory is complete.
	if err := os.WriteFile(filepath.Join(*dir, certsUsersFile), append(b, '\n'), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "cutover certs: wrote into %s\n", *dir)
	fmt.Fprintf(stdout, "  TLS       %s (CA), %s + %s (servers and routes), %s + %s (clients)\n",
		filepath.Base(pki.CA), filepath.Base(pki.ServerCert), filepath.Base(pki.ServerKey), filepath.Base(pki.ClientCert), filepath.Base(pki.ClientKey))
	fmt.Fprintf(stdout, "  NATS      %s (bcrypt), nats-<user>.password for", certsUsersFile)
	for _, u := range certsUsers(rs) {
		fmt.Fprintf(stdout, " %s (%s)", u.name, u.identity)
	}
	fmt.Fprintf(stdout, "\n  secrets   %s, %s, %s\n", certsAuthSecret, certsServiceSecret, certsPromCredential)
	fmt.Fprintf(stdout, "  contract  %s (orchestrator, gateway),", certsContractSecret)
	for _, r := range rs {
		fmt.Fprintf(stdout, " %s", certsContractKey(r))
	}
	fmt.Fprintln(stdout, " (cutover service --region R)")
	fmt.Fprintf(stdout, "  operators %s (%d registered", certsOperators, reg.Len())
	for _, e := range reg.Entries() {
		fmt.Fprintf(stdout, "; operator-%s.key", e.Name)
	}
	fmt.Fprintln(stdout, ")")
	return nil
}

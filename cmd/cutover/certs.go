package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/cutover/cutover/internal/ops"
	"github.com/cutover/cutover/orchestrator/approval"
	"golang.org/x/crypto/bcrypt"
)

func init() {
	register("certs", "write a deployment's certificates, NATS users (bcrypt) and secrets into a directory (once)", oneLine(runCerts))
}

// The files `cutover certs` writes (ops.WriteCerts), by the names the
// roles' help and the tests use.
const (
	certsUsersFile      = ops.CertsUsersFile
	certsAuthSecret     = ops.CertsAuthSecret
	certsServiceSecret  = ops.CertsServiceSecret
	certsPromCredential = ops.CertsPromCredential
	certsOperators      = ops.CertsOperators
	certsContractSecret = ops.CertsContractSecret
)

// certsContractKey is the file of region's contract key.
func certsContractKey(region string) string { return ops.CertsContractKey(region) }

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
	return ops.WriteCerts(ops.CertsRequest{Dir: *dir, Regions: rs, Hosts: splitList(*hosts), Validity: *validity,
		BcryptCost: *cost, Operators: opNames}, stdout)
}

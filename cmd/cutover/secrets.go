package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Secrets reach a command from an environment variable or a file, never
// from its arguments: arguments show in the process list (ps, /proc) to
// every user of the machine. A secret's old flag (--service-secret X) is
// still recognised, so that a command line carrying one is refused with a
// message naming where the secret goes instead, rather than parsed.

// secretFlag is one secret a command takes.
type secretFlag struct {
	name string // the refused argv flag, e.g. "service-secret"
	env  string // its environment variable, e.g. CUTOVER_SERVICE_SECRET
	// argv records whether the refused flag was given at all; file is
	// --<name>-file.
	argv refusedFlag
	file *string
}

// refusedFlag is a string flag whose use is an error reported later.
type refusedFlag struct{ set bool }

func (r *refusedFlag) String() string { return "" }
func (r *refusedFlag) Set(string) error {
	r.set = true
	return nil
}

// Environment variables of the secrets.
const (
	passwordEnv      = "CUTOVER_NATS_PASSWORD"
	authSecretEnv    = "CUTOVER_AUTH_SECRET"
	serviceSecretEnv = "CUTOVER_SERVICE_SECRET"
	// operatorsEnv names the orchestrator's operator registry: public
	// keys, not a secret, but no less guarded (only its owner may write
	// it), so it comes the same ways.
	operatorsEnv = "CUTOVER_OPERATORS_FILE"
)

// minSecret is the shortest secret accepted (HMAC keys, service secrets).
const minSecret = 16

// addSecret registers --name (refused) and --name-file on fs.
func addSecret(fs *flag.FlagSet, name, env, what string) *secretFlag {
	s := &secretFlag{name: name, env: env}
	fs.Var(&s.argv, name, "refused: a secret on the command line shows in the process list; use $"+env+" or --"+name+"-file")
	s.file = fs.String(name+"-file", "", what+", read from this file (default $"+env+")")
	return s
}

// check reports a usage error when the secret was given on the command
// line.
func (s *secretFlag) check() error {
	if s.argv.set {
		return fmt.Errorf("%w: --%s: a secret on the command line shows in the process list; set $%s or give --%s-file FILE",
			errUsage, s.name, s.env, s.name)
	}
	return nil
}

// given reports whether a source of the secret is configured (the file is
// not read: --check-config does not look at files).
func (s *secretFlag) given() bool { return *s.file != "" || os.Getenv(s.env) != "" }

// value returns the secret: the file's content without its trailing line
// break, else the environment variable ("" when neither is given). Errors:
// an unreadable file; a usage error for an empty file or a secret shorter
// than min (min 0: any length).
func (s *secretFlag) value(min int) (string, error) {
	v := os.Getenv(s.env)
	where := "$" + s.env
	if *s.file != "" {
		f, err := os.Open(*s.file)
		if err != nil {
			return "", fmt.Errorf("--%s-file: %w", s.name, err)
		}
		b, err := io.ReadAll(io.LimitReader(f, 64<<10))
		f.Close()
		if err != nil {
			return "", fmt.Errorf("--%s-file: %w", s.name, err)
		}
		v, where = strings.TrimRight(string(b), "\r\n"), "--"+s.name+"-file "+*s.file
		if v == "" {
			return "", fmt.Errorf("%w: %s is empty", errUsage, where)
		}
	}
	if v != "" && len(v) < min {
		return "", fmt.Errorf("%w: %s: the secret must be at least %d bytes", errUsage, where, min)
	}
	return v, nil
}

package main

import (
	"encoding/hex"
	"flag"
	"fmt"

	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/services/contractnats"
)

// Signed contract replies (services/contractnats signing.go): the
// orchestrator and the gateway hold the deployment's contract secret, a
// `cutover service` only its region's key. `cutover certs` writes both.

// Environment variables of the contract's keys.
const (
	contractSecretEnv = "CUTOVER_CONTRACT_SECRET"
	contractKeyEnv    = "CUTOVER_CONTRACT_KEY"
)

func addContractSecret(fs *flag.FlagSet) *secretFlag {
	return addSecret(fs, "contract-secret", contractSecretEnv,
		"the deployment's contract secret: contract replies are signed and verified with its region keys (`cutover certs` writes "+certsContractSecret+")")
}

func addContractKey(fs *flag.FlagSet) *secretFlag {
	return addSecret(fs, "contract-key", contractKeyEnv,
		"this region's contract key, hex: its contract replies are signed with it (`cutover certs` writes contract-<region>.key)")
}

// checkContract refuses s on the command line, and its absence unless
// insecure.
func checkContract(s *secretFlag, role, what string, insecure bool) error {
	if err := s.check(); err != nil {
		return err
	}
	if !insecure && !s.given() {
		return errNoCredentials(role, fmt.Sprintf("%s (signed contract replies: set $%s or give --%s-file FILE)", what, s.env, s.name))
	}
	return nil
}

// applyContractSecret reads the contract secret into cfg.
func applyContractSecret(s *secretFlag, cfg *system.Config) error {
	v, err := s.value(contractnats.MinSecretLen)
	if err != nil {
		return err
	}
	cfg.ContractSecret = v
	return nil
}

// applyContractKey reads a region's contract key (64 hex digits) into cfg.
func applyContractKey(s *secretFlag, cfg *system.Config) error {
	v, err := s.value(0)
	if err != nil || v == "" {
		return err
	}
	key, err := hex.DecodeString(v)
	if err != nil || len(key) != 32 {
		return fmt.Errorf("%w: the contract key must be 64 hex digits (`cutover certs` writes contract-<region>.key)", errUsage)
	}
	cfg.ContractKey = key
	return nil
}

// contractLine says how the role's contract replies are signed, for its
// banner.
func contractLine(cfg *system.Config) string {
	if cfg.ContractSecret == "" && cfg.ContractKey == nil {
		return "INSECURE: contract replies neither signed nor verified (--insecure-dev-auth)"
	}
	return "signed with the region keys"
}

package main

import "github.com/cutover/cutover/internal/ops"

// parseRegion returns a usage error unless s, the value of --flagName, is a
// region name (the roles' flags).
func parseRegion(flagName, s string) error { return ops.CheckRegion(flagName, s) }

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string { return ops.SplitList(s) }

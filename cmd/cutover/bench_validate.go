//go:build ignore

package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cutover/cutover/bench"
)

// benchValidate times full-content validation with the write-time slice
// digests against a read-everything comparison (bench.RunValidate).
func benchValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench validate", "bench validate [--json] [--sizes 4000,100000,1000000]", stdout)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	sizes := fs.String("sizes", "4000,100000,1000000", "resource sizes in messages, comma-separated")
	if err := parse(fs, args); err != nil {
		return err
	}
	var ns []int
	for _, s := range strings.Split(*sizes, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 1 {
			return fmt.Errorf("%w: --sizes: %q", errUsage, s)
		}
		ns = append(ns, v)
	}
	res, err := bench.RunValidate(ctx, bench.ValidateOptions{Sizes: ns, Progress: func(s string) { fmt.Fprintln(stderr, "bench", s) }})
	if err != nil {
		return err
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "validate (%s): target %s: met=%v\n", res.Durability, res.Target, res.Met)
		for _, s := range res.Sizes {
			fmt.Fprintf(stdout, "  %9d messages: digests %9.1f ms | full scan %9.1f ms | %.0fx\n", s.Messages, s.DigestMs, s.ScanMs, s.Ratio)
		}
	}
	return printResult(stdout, *asJSON, &res)
}

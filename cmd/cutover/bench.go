package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/cutover/cutover/kvrouting/routingbench"
)

func init() {
	register("bench", "measure this design against its baselines (suites: routing)", runBench)
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" {
		fmt.Fprintln(stdout, "Usage: cutover bench <suite> [--json] [flags]\n\nSuites:\n  routing   resolve + decide vs a lock-record baseline (paper 000 §5.3)")
		if len(args) == 0 {
			return fmt.Errorf("%w: missing suite", errUsage)
		}
		return errHelp
	}
	switch args[0] {
	case "routing":
		return benchRouting(ctx, args[1:], stdout, stderr)
	default:
		return fmt.Errorf("%w: unknown suite %q (have: routing)", errUsage, args[0])
	}
}

func benchRouting(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench routing", "bench routing [--json] [--ops N] [--resources N] [--lazy-fsync]", stdout)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	ops := fs.Int("ops", 20000, "operations per measurement")
	resources := fs.Int("resources", 1000, "distinct resources")
	lazy := fs.Bool("lazy-fsync", false, "run the embedded server with JetStream's default lazy fsync instead of sync always")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *ops <= 0 || *resources < 10 {
		return fmt.Errorf("%w: --ops must be > 0 and --resources >= 10", errUsage)
	}
	sync := !*lazy
	res, err := routingbench.Run(ctx, routingbench.Options{
		Ops: *ops, Resources: *resources, SyncAlways: &sync,
		Progress: func(s string) { fmt.Fprintln(stderr, "bench routing:", s) },
	})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(stdout, "routing (%s)\n", res.Durability)
	fmt.Fprintf(stdout, "  embedded (unlocked, cached): %10.0f ns/op  %.3f store reads/op\n", res.Embedded.NsPerOp, res.Embedded.StoreReadsPerOp)
	fmt.Fprintf(stdout, "  lock-record baseline:        %10.0f ns/op  %.3f store reads/op\n", res.Baseline.NsPerOp, res.Baseline.StoreReadsPerOp)
	fmt.Fprintf(stdout, "  locked (read-through):       %10.0f ns/op  %.3f store reads/op\n", res.Locked.NsPerOp, res.Locked.StoreReadsPerOp)
	fmt.Fprintf(stdout, "  ratio baseline/embedded: %.0fx (target >= 100x, 0 reads): met=%v\n", res.Ratio, res.Met)
	for _, m := range res.Mixed {
		fmt.Fprintf(stdout, "  f=%-6g ours %8.0f ns/op %.4f reads/op | baseline %8.0f ns/op %.3f reads/op | time %.0fx reads %.0fx\n",
			m.LockedFraction, m.Ours.NsPerOp, m.Ours.StoreReadsPerOp, m.Baseline.NsPerOp, m.Baseline.StoreReadsPerOp, m.TimeRatio, m.ReadsRatio)
	}
	return nil
}

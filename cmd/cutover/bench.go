//go:build ignore

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/cutover/cutover/kvrouting/routingbench"
)

func init() {
	register("bench", "measure this design against its baselines (suites: routing, reads, fence, throughput, copy, validate)", runBench)
}

// benchSuites are the suites of `cutover bench` (issue 7), in the order the
// help lists them.
var benchSuites = []struct {
	name, help string
	run        func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}{
	{"routing", "resolve + decide vs a lock-record baseline (paper 000 §5.3)", benchRouting},
	{"reads", "routing-store reads per migration with and without the holder's cached document", benchReads},
	{"fence", "write/delete-blocked windows: protocol vs stop-and-copy, read-only, delete-blocking (paper 001 §6.5)", benchFence},
	{"throughput", "sustained migrations/s of the mixed workload under live traffic; write-lock p99; CPU", benchThroughput},
	{"copy", "Phase 2 records/s vs the raw JetStream publish + Pebble batch-write rate", benchCopy},
	{"validate", "full-content validation time at 4,000 / 100,000 / 1,000,000 messages (digests vs scan)", benchValidate},
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	args, prof, err := profileFlags(args)
	if err != nil {
		return err
	}
	if prof.cpu != "" || prof.mem != "" {
		stop, err := prof.start()
		if err != nil {
			return err
		}
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintln(stderr, "bench: profile:", err)
			} else {
				fmt.Fprintf(stderr, "bench: profiles written (cpu %q, heap %q); read with: go tool pprof -top <binary> <file>\n", prof.cpu, prof.mem)
			}
		}()
	}
	var names []string
	for _, s := range benchSuites {
		names = append(names, s.name)
	}
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" {
		fmt.Fprintln(stdout, "Usage: cutover bench [--cpuprofile FILE] [--memprofile FILE] <suite> [--json] [flags]\n\nSuites:")
		for _, s := range benchSuites {
			fmt.Fprintf(stdout, "  %-10s %s\n", s.name, s.help)
		}
		if len(args) == 0 {
			return fmt.Errorf("%w: missing suite", errUsage)
		}
		return errHelp
	}
	for _, s := range benchSuites {
		if s.name == args[0] {
			return s.run(ctx, args[1:], stdout, stderr)
		}
	}
	return fmt.Errorf("%w: unknown suite %q (have: %s)", errUsage, args[0], strings.Join(names, ", "))
}

// suiteResult is the common shape of a suite's JSON (issue 7): this design,
// its baseline, their ratio, the target, and the durability every figure
// ran with.
type suiteResult struct {
	Suite      string   `json:"suite"`
	Durability string   `json:"durability"`
	Ours       any      `json:"ours"`
	Baseline   any      `json:"baseline"`
	Ratio      float64  `json:"ratio"`
	Target     string   `json:"target"`
	Met        bool     `json:"target_met"`
	Details    any      `json:"details,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

// printResult writes v as indented JSON, or a short human summary followed
// by the JSON.
func printResult(stdout io.Writer, asJSON bool, v any) error {
	if !asJSON {
		if r, ok := v.(*suiteResult); ok {
			fmt.Fprintf(stdout, "%s (%s): ratio %.2f, target %s: met=%v\n", r.Suite, r.Durability, r.Ratio, r.Target, r.Met)
			for _, n := range r.Notes {
				fmt.Fprintf(stdout, "  note: %s\n", n)
			}
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
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

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/cutover/cutover/bench"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/services/contract"
)

func init() {
	register("bench", "measure this design against its baselines (suites: routing, reads, fence, throughput, copy, validate, reverse)", runBench)
}

// benchSuites are the suites of `cutover bench` (package bench),
// in the order the help lists them.
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
	{"reverse", "a move back within the reverse window (only the changes since the swap) vs a full copy back", benchReverse},
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	args, prof, err := profileFlags(args)
	if err != nil {
		return err
	}
	if prof != (bench.Profile{}) {
		stop, err := prof.Start()
		if err != nil {
			return err
		}
		defer func() {
			if err := stop(); err != nil {
				fmt.Fprintln(stderr, "bench: profile:", err)
			} else {
				fmt.Fprintf(stderr, "bench: profiles written (cpu %q, heap %q, trace %q); read with: go tool pprof -top <binary> <file>; go tool trace -pprof=sync <trace>\n", prof.CPU, prof.Mem, prof.Trace)
			}
		}()
	}
	var names []string
	for _, s := range benchSuites {
		names = append(names, s.name)
	}
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" {
		fmt.Fprintln(stdout, "Usage: cutover bench [--cpuprofile FILE] [--memprofile FILE] [--trace FILE] <suite> [--json] [flags]\n\nSuites:")
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
			err := s.run(ctx, args[1:], stdout, stderr)
			if errors.Is(err, bench.ErrOptions) {
				return fmt.Errorf("%w: %w", errUsage, err)
			}
			return err
		}
	}
	return fmt.Errorf("%w: unknown suite %q (have: %s)", errUsage, args[0], strings.Join(names, ", "))
}

// profileFlags takes --cpuprofile FILE, --memprofile FILE and --trace FILE (or =FILE)
// from the front of args, before the suite's name.
func profileFlags(args []string) ([]string, bench.Profile, error) {
	var p bench.Profile
	for len(args) > 0 && strings.HasPrefix(args[0], "--") {
		name, val, eq := strings.Cut(args[0], "=")
		var dst *string
		switch name {
		case "--cpuprofile":
			dst = &p.CPU
		case "--memprofile":
			dst = &p.Mem
		case "--trace":
			dst = &p.Trace
		default:
			return args, p, nil
		}
		args = args[1:]
		if !eq {
			if len(args) == 0 || strings.HasPrefix(args[0], "-") {
				return nil, p, fmt.Errorf("%w: %s needs a file name", errUsage, name)
			}
			val, args = args[0], args[1:]
		}
		if val == "" {
			return nil, p, fmt.Errorf("%w: %s needs a file name", errUsage, name)
		}
		*dst = val
	}
	return args, p, nil
}

// printResult writes v as indented JSON, or its text summary followed by
// the JSON.
func printResult(stdout io.Writer, asJSON bool, v interface{ WriteText(io.Writer) }) error {
	if !asJSON {
		v.WriteText(stdout)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// suiteFlags is a suite's flag set with its --json flag.
func suiteFlags(name, synopsis string, stdout io.Writer) (*flag.FlagSet, *bool) {
	fs := newFlags("bench "+name, "bench "+name+" "+synopsis, stdout)
	return fs, fs.Bool("json", false, "print the result as JSON")
}

// suiteProgress prints a suite's progress lines to stderr.
func suiteProgress(stderr io.Writer, suite string) func(string) {
	return func(s string) { fmt.Fprintln(stderr, "bench "+suite+":", s) }
}

func benchRouting(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, asJSON := suiteFlags("routing", "[--json] [--ops N] [--resources N] [--lazy-fsync]", stdout)
	o := bench.RoutingOptions{Progress: suiteProgress(stderr, "routing")}
	fs.IntVar(&o.Ops, "ops", 20000, "operations per measurement")
	fs.IntVar(&o.Resources, "resources", 1000, "distinct resources")
	fs.BoolVar(&o.LazyFsync, "lazy-fsync", false, "run the embedded server with JetStream's default lazy fsync instead of sync always")
	if err := parse(fs, args); err != nil {
		return err
	}
	res, err := bench.Routing(ctx, o)
	if err != nil {
		return err
	}
	if !*asJSON {
		res.WriteText(stdout)
		return nil
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

func benchReads(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, asJSON := suiteFlags("reads", "[--json] [--conversations N]", stdout)
	o := bench.ReadsOptions{Progress: suiteProgress(stderr, "reads")}
	fs.IntVar(&o.Conversations, "conversations", 40, "conversations to migrate in each mode")
	fs.StringVar(&o.Mix, "mix", "small", "conversation sizes: small (10 messages each) or paper (the paper's size mix, 4,000-message conversations included)")
	return runSuite(fs, args, stdout, asJSON, func() (*bench.Result, error) { return bench.Reads(ctx, o) })
}

func benchFence(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, asJSON := suiteFlags("fence", "[--json] [--conversations N] [--big N] [--huge N] [--clients N] [--concurrency N] [--strategies a,b] [--supercluster [--wan rtt=80ms,mbps=200]]", stdout)
	o := bench.FenceOptions{Progress: suiteProgress(stderr, "fence")}
	fs.IntVar(&o.Conversations, "conversations", 30, "conversations (54% 10 messages, 39% 80, 7% --big; at least one of each)")
	fs.IntVar(&o.Big, "big", 4000, "messages in a large conversation")
	fs.IntVar(&o.Clients, "clients", 6, "concurrent users driving live traffic")
	fs.IntVar(&o.Concurrency, "concurrency", 8, "migrations in flight")
	fs.BoolVar(&o.Warmup, "warmup", true, "first migrate a tiny workload once, unmeasured (the first run in a process is slower)")
	fs.IntVar(&o.Huge, "huge", 0, "also migrate this many conversations of --huge-size messages, a class of their own")
	fs.IntVar(&o.HugeSize, "huge-size", bench.DefaultHugeSize, "messages in a huge conversation")
	checkWAN := wanFlags(fs, &o.Supercluster, &o.WAN)
	strategies := fs.String("strategies", strings.Join(bench.FenceStrategies, ","), "strategies to run (protocol first)")
	return runSuite(fs, args, stdout, asJSON, func() (*bench.Result, error) {
		if err := checkWAN(); err != nil {
			return nil, err
		}
		o.Strategies = strings.Split(*strategies, ",")
		return bench.Fence(ctx, o)
	})
}

func benchThroughput(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, asJSON := suiteFlags("throughput", "[--json] [--runs N] [--conversations N] [--big N] [--clients N] [--concurrency N] [--supercluster [--wan SPEC]]", stdout)
	o := bench.ThroughputOptions{Progress: suiteProgress(stderr, "throughput")}
	fs.IntVar(&o.Conversations, "conversations", 300, "conversations (paper size mix)")
	fs.IntVar(&o.Big, "big", 4000, "messages in a large conversation")
	fs.IntVar(&o.Clients, "clients", 6, "concurrent users driving live traffic")
	fs.IntVar(&o.Concurrency, "concurrency", 128, "migrations in flight")
	fs.IntVar(&o.Workers, "workers", 2, "orchestrator workers")
	fs.StringVar(&o.Fanout, "fanout", "direct", "how the migrations start: direct (one Start each, all at once; the engine's capacity) or tenant (one tenant move with --concurrency)")
	fs.BoolVar(&o.LazyFsync, "lazy-fsync", false, "run JetStream with its default lazy fsync instead of sync always (Pebble keeps fsync per commit)")
	fs.IntVar(&o.BackgroundSteps, "background-steps", 0, fmt.Sprintf("per worker, concurrent steps of migrations outside Phase 3 (0: the orchestrator's default, %d)", orchestrator.DefaultBackgroundSteps))
	fs.IntVar(&o.Cluster, "cluster", 1, "nodes: 1 (one node, sync always) or 3 (an embedded R3 cluster, the clustered durable default); per region with --supercluster")
	fs.IntVar(&o.Runs, "runs", 1, "measure N times, each on a deployment of its own, and report the run of median rate (every run's rate and write-lock p99 in details.runs): one run spreads about ±15 % on 2 cores")
	checkWAN := wanFlags(fs, &o.Supercluster, &o.WAN)
	return runSuite(fs, args, stdout, asJSON, func() (*bench.Result, error) {
		if err := checkWAN(); err != nil {
			return nil, err
		}
		if o.Runs < 1 {
			return nil, fmt.Errorf("%w: --runs must be >= 1", bench.ErrOptions)
		}
		return bench.Throughput(ctx, o)
	})
}

func benchCopy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, asJSON := suiteFlags("copy", "[--json] [--conversations N] [--messages N] [--postgres] [--supercluster [--wan SPEC]]", stdout)
	o := bench.CopyOptions{Progress: suiteProgress(stderr, "copy")}
	fs.IntVar(&o.Conversations, "conversations", 3, "large conversations to migrate, one at a time")
	fs.IntVar(&o.Messages, "messages", 4000, "messages per conversation")
	fs.IntVar(&o.PageLimit, "page-limit", contract.DefaultPageLimit, "export page size, for the migration and the raw copy alike")
	fs.BoolVar(&o.Postgres, "postgres", false, "messages in a private PostgreSQL server (the participant kit); the raw rate is COPY into that server")
	checkWAN := wanFlags(fs, &o.Supercluster, &o.WAN)
	return runSuite(fs, args, stdout, asJSON, func() (*bench.Result, error) {
		if err := checkWAN(); err != nil {
			return nil, err
		}
		return bench.Copy(ctx, o)
	})
}

func benchReverse(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, asJSON := suiteFlags("reverse", "[--json] [--messages N] [--after D] [--changes N]", stdout)
	o := bench.ReverseOptions{Progress: suiteProgress(stderr, "reverse")}
	fs.IntVar(&o.Messages, "messages", 100_000, "messages in the conversation moved away and back")
	fs.DurationVar(&o.After, "after", time.Minute, "how long it stays away before the move back (at most 30m)")
	fs.IntVar(&o.Changes, "changes", 100, "messages posted at the target before the move back (plus one edit and one delete)")
	return runSuite(fs, args, stdout, asJSON, func() (*bench.Result, error) { return bench.Reverse(ctx, o) })
}

// runSuite parses a suite's flags, runs it and prints its result.
func runSuite(fs *flag.FlagSet, args []string, stdout io.Writer, asJSON *bool, run func() (*bench.Result, error)) error {
	if err := parse(fs, args); err != nil {
		return err
	}
	res, err := run()
	if err != nil {
		return err
	}
	return printResult(stdout, *asJSON, res)
}

func benchValidate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, asJSON := suiteFlags("validate", "[--json] [--sizes 4000,100000,1000000]", stdout)
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
	return printResult(stdout, *asJSON, &res)
}

//go:build ignore

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/cutover/cutover/bench"
	"github.com/cutover/cutover/events"
)

// readsFigure is one mode of the reads suite.
type readsFigure struct {
	Migrations        int     `json:"migrations"`
	Completed         int     `json:"completed"`
	StoreReads        uint64  `json:"store_reads"`
	StoreWrites       uint64  `json:"store_writes"`
	ReadsPerMigration float64 `json:"reads_per_migration"`
	WritesPerMigation float64 `json:"writes_per_migration"`
}

// benchReads counts routing-store reads per migration with the holder's
// cached document (this design, paper 000 §8) and without it (every lock
// transition reads the document first), over the same migrations with no
// user traffic, so every read counted is the orchestrator's.
func benchReads(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench reads", "bench reads [--json] [--conversations N]", stdout)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	n := fs.Int("conversations", 40, "conversations to migrate in each mode")
	mixName := fs.String("mix", "small", "conversation sizes: small (10 messages each) or paper (the paper's size mix, 4,000-message conversations included)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *n < 1 {
		return fmt.Errorf("%w: --conversations must be >= 1", errUsage)
	}
	mix := []sizeClass{{"10", 10, 1}}
	switch *mixName {
	case "small":
	case "paper":
		mix = paperMix(4000)
	default:
		return fmt.Errorf("%w: --mix must be small or paper", errUsage)
	}
	say := func(s string) { fmt.Fprintln(stderr, "bench reads:", s) }
	run := func(noCache bool) (readsFigure, error) {
		var f readsFigure
		e, err := startBenchEnv(ctx, benchEnvOptions{NoHolderCache: noCache}, io.Discard)
		if err != nil {
			return f, err
		}
		defer e.Close()
		convs := mixConvs("reads", *n, mix, 1)
		if err := e.seed(ctx, convs, []string{"u0", "u1"}, nil); err != nil {
			return f, err
		}
		before := e.lk.Store().Stats()
		ms, _, err := e.moveAll(ctx, "reads", convs, 8, nil)
		if err != nil {
			return f, err
		}
		after := e.lk.Store().Stats()
		f.Migrations = len(ms)
		for _, m := range ms {
			if m.state.Status == events.StatusCompleted {
				f.Completed++
			}
		}
		f.StoreReads = after.Reads() - before.Reads()
		f.StoreWrites = after.Writes - before.Writes
		f.ReadsPerMigration = bench.Ratio(float64(f.StoreReads), float64(f.Completed))
		f.WritesPerMigation = bench.Ratio(float64(f.StoreWrites), float64(f.Completed))
		say(fmt.Sprintf("no-holder-cache=%v: %d/%d completed, %.2f reads and %.2f writes per migration", noCache, f.Completed, f.Migrations, f.ReadsPerMigration, f.WritesPerMigation))
		return f, nil
	}
	ours, err := run(false)
	if err != nil {
		return err
	}
	base, err := run(true)
	if err != nil {
		return err
	}
	r := &suiteResult{Suite: "reads", Durability: bench.DurableSingle, Ours: ours, Baseline: base,
		Ratio:  bench.Ratio(base.ReadsPerMigration, ours.ReadsPerMigration),
		Target: ">= 10x fewer routing-store reads per migration with the holder's cached document",
		Notes: []string{
			"reads are leader/direct/mirror gets on the routing KV counted by kvrouting.Store, with no user traffic running",
			"mix " + *mixName + ": the baseline's reads grow with the steps a migration takes (one check per copy step and per lock step), ours do not; since the lock steps record their fences and the swap its validation (fewer steps), a 10-message conversation takes 8 checks, not 10",
			"every migration checks that it still holds its lock before each call that acts under it (fences, each export/import page, validation: kvrouting.Locker.Verify), and every lock transition is a conditional write",
			"ours: the holder's cached document (the last document this migration wrote; it is the lock's only writer) answers those checks and is the revision the conditional writes expect, so only the pre-lock reads (it has no document yet); paper 000 §8 reports ~90 % fewer routing reads from the same optimisation",
			"baseline (orchestrator.WithoutHolderCache): every check and every transition reads the document from the leader first, the paper's design before that optimisation",
		}}
	if ours.ReadsPerMigration == 0 && base.ReadsPerMigration > 0 {
		r.Ratio = base.ReadsPerMigration // no reads at all: report the baseline's count
	}
	r.Met = r.Ratio >= 10 && ours.Completed == ours.Migrations && base.Completed == base.Migrations
	return printResult(stdout, *asJSON, r)
}

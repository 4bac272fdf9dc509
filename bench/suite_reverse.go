package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/internal/workload"
)

// ReverseOptions configures the reverse suite.
type ReverseOptions struct {
	// Messages is the conversation's size (>= 10).
	Messages int
	// After is how long the conversation stays at the target before it
	// moves back (>= 0, below the reverse window: 30 min here).
	After time.Duration
	// Changes is how many messages users post at the target before the
	// move back (>= 0); besides, they edit and delete one seeded message
	// each.
	Changes int
	// Progress, if set, receives progress lines.
	Progress func(string)
}

// maxReverseAfter bounds ReverseOptions.After below the reverse window the
// suite runs with (the secondary lease and the cleanup window, both 1 h).
const maxReverseAfter = 30 * time.Minute

// reverseSide is one way of moving back: what it copied and how long it
// took.
type reverseSide struct {
	// RecordsCopied is what the move back exported and imported, every
	// service (its migration's page counts).
	RecordsCopied int `json:"records_copied"`
	// MoveBackMs is the move back's duration, requested → completed.
	MoveBackMs int64 `json:"move_back_ms"`
	// HistoricalMs is its Phase 2 (hard-delete lock → write lock).
	HistoricalMs int64 `json:"historical_ms"`
	// WriteBlockedMs is its write-blocked time (write lock → swap).
	WriteBlockedMs int64 `json:"write_blocked_ms"`
	// Incremental reports whether the services copied from the swap's
	// change sequence (the ones holding no records of the conversation
	// have none, and copy their nothing in full).
	Incremental bool `json:"incremental"`
	Attempts    int  `json:"attempts"`
}

// Reverse measures the reverse window (orchestrator/reverse.go): a
// conversation of o.Messages messages moves to the target, users change a
// little there for o.After, and it moves back; once with the reverse
// window (only the changes since the swap are copied back) and once, in a
// deployment of its own, with it off (orchestrator.Config.FullCopyBack:
// the old copy reset and the whole history copied). Errors: ErrOptions, a
// migration that did not complete, a side that did not copy as intended,
// the run's.
func Reverse(ctx context.Context, o ReverseOptions) (*Result, error) {
	if o.Messages < 10 || o.Changes < 0 || o.After < 0 || o.After > maxReverseAfter {
		return nil, fmt.Errorf("%w: --messages must be >= 10, --changes >= 0, --after in [0, %s]", ErrOptions, maxReverseAfter)
	}
	inc, err := reverseRun(ctx, o, false)
	if err != nil {
		return nil, fmt.Errorf("with the reverse window: %w", err)
	}
	full, err := reverseRun(ctx, o, true)
	if err != nil {
		return nil, fmt.Errorf("full copy back: %w", err)
	}
	ratio := Ratio(float64(full.RecordsCopied), float64(max(inc.RecordsCopied, 1)))
	details := map[string]any{
		"messages": o.Messages, "after_ms": o.After.Milliseconds(), "changes": o.Changes + 2,
		"records_copied_incremental": inc.RecordsCopied, "records_copied_full": full.RecordsCopied, "ratio": ratio,
		"move_back_ms_incremental": inc.MoveBackMs, "move_back_ms_full": full.MoveBackMs,
		"historical_ms_incremental": inc.HistoricalMs, "historical_ms_full": full.HistoricalMs,
		"write_blocked_ms_incremental": inc.WriteBlockedMs, "write_blocked_ms_full": full.WriteBlockedMs,
	}
	r := &Result{Suite: "reverse", Durability: DurableSingle, Ours: inc, Baseline: full, Ratio: ratio, Details: details,
		Target: "a move back within the reverse window copies >= 20x fewer records than a full copy back; write-blocked time unchanged",
		Notes: []string{
			"records copied = records exported and imported by the move back, every service (the conversation's messages; its other services hold none)",
			"each side runs in its own deployment (the full side with orchestrator.Config.FullCopyBack), one after the other",
			fmt.Sprintf("changes at the target before the move back: %d posts, 1 edit, 1 delete (a tombstone within the window)", o.Changes),
		}}
	r.Met = ratio >= 20
	say(o.Progress, "records copied back: %d incremental, %d full (%.0fx); move back %d vs %d ms; write-blocked %d vs %d ms",
		inc.RecordsCopied, full.RecordsCopied, ratio, inc.MoveBackMs, full.MoveBackMs, inc.WriteBlockedMs, full.WriteBlockedMs)
	return r, nil
}

// reverseRun is one side of Reverse in a deployment of its own.
func reverseRun(ctx context.Context, o ReverseOptions, fullCopyBack bool) (reverseSide, error) {
	cfg := system.Config{}
	cfg.Orchestrator.FullCopyBack = fullCopyBack
	cfg.Orchestrator.CleanupWindow = 2 * maxReverseAfter // the old copy stays for the whole run
	e, err := startEnv(ctx, cfg)
	if err != nil {
		return reverseSide{}, err
	}
	defer e.Close()
	side := map[bool]string{false: "incremental", true: "full"}[fullCopyBack]
	convs := workload.Assign("reverse", 1, []workload.SizeClass{{Name: fmt.Sprint(o.Messages), Messages: o.Messages, Share: 1}}, 1, 0)
	if err := e.seed(ctx, convs, users(2), o.Progress); err != nil {
		return reverseSide{}, err
	}
	conv := convs[0].ID
	res := "conv/" + conv
	if _, err := e.moveOne(ctx, res, e.Target); err != nil {
		return reverseSide{}, err
	}
	say(o.Progress, "%s: moved to %s; %d changes there, back in %s", side, e.Target, o.Changes+2, o.After)
	c, err := client.New(e.APIURL, "user:seed", client.WithWorkers(8)) // the seeded messages' author
	if err != nil {
		return reverseSide{}, err
	}
	defer c.Close()
	if _, err := c.EditMessage(ctx, conv, workload.SeedID(1), "edited at the target"); err != nil {
		return reverseSide{}, fmt.Errorf("edit at the target: %w", err)
	}
	if _, err := c.DeleteMessage(ctx, conv, workload.SeedID(2)); err != nil {
		return reverseSide{}, fmt.Errorf("delete at the target: %w", err)
	}
	for i := range o.Changes {
		if _, err := c.PostMessage(ctx, conv, client.NewMessage{ID: fmt.Sprintf("after-swap-%d", i), Text: "posted at the target"}); err != nil {
			return reverseSide{}, fmt.Errorf("post at the target: %w", err)
		}
	}
	select {
	case <-ctx.Done():
		return reverseSide{}, ctx.Err()
	case <-time.After(o.After):
	}
	st, err := e.moveOne(ctx, res, e.Source)
	if err != nil {
		return reverseSide{}, err
	}
	out := reverseSide{Attempts: st.Attempt}
	for _, p := range st.Services {
		out.RecordsCopied += p.Records
		out.Incremental = out.Incremental || p.Since > 0
	}
	if f := st.Figures; f != nil {
		out.MoveBackMs, out.HistoricalMs, out.WriteBlockedMs = f.TotalMs, f.HistoricalMs, f.WriteBlockedMs
	}
	if out.Incremental == fullCopyBack {
		return out, fmt.Errorf("the move back copied %s, not %s (%d records)", map[bool]string{false: "in full", true: "incrementally"}[out.Incremental], side, out.RecordsCopied)
	}
	return out, nil
}

// moveOne migrates res to target, waits for its end and returns its final
// state; a migration that did not complete is an error.
func (e *env) moveOne(ctx context.Context, res, target string) (*events.State, error) {
	id, err := e.Orch.Start(ctx, events.Start{Resource: res, Target: target})
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(15 * time.Minute); ; {
		st, _, err := e.Orch.State(ctx, id)
		if err == nil && st.Status.Terminal() {
			if st.Status != events.StatusCompleted {
				return nil, fmt.Errorf("migration of %s to %s ended %s: %s", res, target, st.Status, st.Reason)
			}
			return st, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("migration of %s to %s did not end in 15 minutes", res, target)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-e.Done():
			return nil, errors.New("system stopped during the migration")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

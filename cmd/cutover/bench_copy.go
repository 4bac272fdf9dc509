//go:build ignore

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/cutover/cutover/bench"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services/chat"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// copyFigure is this design's Phase 2 rate.
type copyFigure struct {
	Migrations    int     `json:"migrations"`
	Records       int     `json:"records"`
	HistoricalMs  float64 `json:"historical_ms"`
	RecordsPerSec float64 `json:"records_per_s"`
	PageLimit     int     `json:"page_limit"`
}

// benchCopy migrates large conversations one at a time with no traffic and
// compares the Phase 2 rate (records / historical-copy time) with the raw
// rate of the same records published to PAGES and written to Pebble in the
// same process.
func benchCopy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench copy", "bench copy [--json] [--conversations N] [--messages N]", stdout)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	n := fs.Int("conversations", 3, "large conversations to migrate, one at a time")
	size := fs.Int("messages", 4000, "messages per conversation")
	pageLimit := fs.Int("page-limit", contract.DefaultPageLimit, "export page size, for the migration and the raw copy alike")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *n < 1 || *size < 1 || *pageLimit < 1 || *pageLimit > store.MaxPageLimit {
		return fmt.Errorf("%w: --conversations and --messages must be >= 1, --page-limit in [1, %d]", errUsage, store.MaxPageLimit)
	}
	say := func(s string) { fmt.Fprintln(stderr, "bench copy:", s) }
	e, err := startBenchEnv(ctx, benchEnvOptions{PageLimit: *pageLimit}, io.Discard)
	if err != nil {
		return err
	}
	defer e.Close()
	convs := mixConvs("copy", *n, []sizeClass{{fmt.Sprint(*size), *size, 1}}, 1)
	if err := e.seed(ctx, convs, []string{"u0", "u1"}, say); err != nil {
		return err
	}
	ms, _, err := e.moveAll(ctx, "copy", convs, 1, nil)
	if err != nil {
		return err
	}
	ours := copyFigure{PageLimit: *pageLimit}
	for _, m := range ms {
		if m.state.Status != events.StatusCompleted {
			return fmt.Errorf("migration of %s ended %s: %s", m.state.Resource, m.state.Status, m.state.Reason)
		}
		ours.Migrations++
		for _, p := range m.state.Services {
			ours.Records += p.Records
		}
		ours.HistoricalMs += msBetween(m.state.HardDeleteAt, m.state.WriteLockedAt)
	}
	ours.RecordsPerSec = bench.Ratio(float64(ours.Records), ours.HistoricalMs/1000)

	// The raw floor: the same records (read back from the source stores).
	var raw []bench.RawCopy
	for _, c := range convs {
		res := "conv/" + c.ID
		var recs []store.Record
		for _, p := range e.regions[e.source].ParticipantsFor(chat.KindConversation) {
			sp, ok := p.(interface{ Store() *store.Store })
			if !ok {
				continue
			}
			var after uint64
			for {
				page, last, more, err := sp.Store().Changes(res, after, 0, store.MaxPageLimit)
				if err != nil {
					return err
				}
				recs = append(recs, page...)
				after = last
				if !more || len(page) == 0 {
					break
				}
			}
		}
		rc, err := bench.MeasureRawCopy(ctx, e.js, res, recs, *pageLimit, e.dir)
		if err != nil {
			return err
		}
		raw = append(raw, rc)
	}
	var rrecs int
	var rms float64
	for _, r := range raw {
		rrecs += r.Records
		rms += r.PublishMs + r.PebbleMs
	}
	base := map[string]any{"records": rrecs, "ms": rms, "records_per_s": bench.Ratio(float64(rrecs), rms/1000), "runs": raw,
		"what": "pages of the same records: JetStream publish to PAGES (acked) + Pebble batch write (store.Import, fsync), sequential"}
	r := &suiteResult{Suite: "copy", Durability: bench.DurableSingle, Ours: ours, Baseline: base,
		Ratio:  bench.Ratio(ours.RecordsPerSec, bench.Ratio(float64(rrecs), rms/1000)),
		Target: ">= 50% of the raw JetStream publish + Pebble batch-write rate (ratio >= 0.5)",
		Notes:  []string{"Phase 2 time = hard-delete lock -> write lock (fence, every page's export + publish + import + checkpoint event, the write-lock escalation); records include the few delta records (no traffic runs)"}}
	r.Met = r.Ratio >= 0.5
	say(fmt.Sprintf("phase 2 %.0f records/s, raw %.0f records/s", ours.RecordsPerSec, bench.Ratio(float64(rrecs), rms/1000)))
	return printResult(stdout, *asJSON, r)
}

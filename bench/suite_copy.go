package bench

import (
	"context"
	"fmt"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/app/chat/messages"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/pgserver"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/internal/workload"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/services/store"
)

// CopyOptions configures the copy suite.
type CopyOptions struct {
	// Conversations to migrate one at a time, of Messages messages each
	// (both >= 1).
	Conversations, Messages int
	// PageLimit is the export page size, for the migration and the raw
	// copy alike, in [1, store.MaxPageLimit].
	PageLimit int
	// Supercluster runs one cluster per region, gateways shaped by WAN
	// (the raw copy stays in-process: it has no region).
	Supercluster bool
	WAN          cnats.WAN
	// Postgres keeps the messages service in a private PostgreSQL server
	// (fsync on; the participant kit over services/pgstore), and the raw
	// rate is then the same records' inserts into that server (COPY, one
	// transaction per page).
	Postgres bool
	// Progress, if set, receives progress lines.
	Progress func(string)
}

// copyFigure is this design's Phase 2 rate.
type copyFigure struct {
	Migrations    int     `json:"migrations"`
	Records       int     `json:"records"`
	HistoricalMs  float64 `json:"historical_ms"`
	RecordsPerSec float64 `json:"records_per_s"`
	PageLimit     int     `json:"page_limit"`
}

// Copy migrates large conversations one at a time with no traffic and
// compares the Phase 2 rate (records / historical-copy time) with the raw
// rate of the same records published to PAGES and written to Pebble in the
// same process (MeasureRawCopy). Errors: ErrOptions, a migration that did
// not complete, or the run's.
func Copy(ctx context.Context, o CopyOptions) (*Result, error) {
	if o.Conversations < 1 || o.Messages < 1 || o.PageLimit < 1 || o.PageLimit > store.MaxPageLimit {
		return nil, fmt.Errorf("%w: --conversations and --messages must be >= 1, --page-limit in [1, %d]", ErrOptions, store.MaxPageLimit)
	}
	if o.WAN != (cnats.WAN{}) && !o.Supercluster {
		return nil, fmt.Errorf("%w: --wan needs --supercluster", ErrOptions)
	}
	cfg := system.Config{Supercluster: o.Supercluster, WAN: o.WAN}
	cfg.Orchestrator.PageLimit = o.PageLimit
	if o.Postgres {
		pg, err := pgserver.Start(ctx, pgserver.Options{Durable: true})
		if err != nil {
			return nil, err
		}
		defer func() { _ = pg.Stop() }()
		cfg.Postgres = pg.URL()
	}
	e, err := startEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	convs := workload.Assign("copy", o.Conversations, []workload.SizeClass{{Name: fmt.Sprint(o.Messages), Messages: o.Messages, Share: 1}}, 1, 0)
	if err := e.seed(ctx, convs, users(2), o.Progress); err != nil {
		return nil, err
	}
	ms, _, err := e.moveAll(ctx, "copy", convs, 1, nil)
	if err != nil {
		return nil, err
	}
	ours := copyFigure{PageLimit: o.PageLimit}
	for _, m := range ms {
		if m.state.Status != events.StatusCompleted {
			return nil, fmt.Errorf("migration of %s ended %s: %s", m.state.Resource, m.state.Status, m.state.Reason)
		}
		ours.Migrations++
		for _, p := range m.state.Services {
			ours.Records += p.Records
		}
		ours.HistoricalMs += msBetween(m.state.HardDeleteAt, m.state.WriteLockedAt)
	}
	ours.RecordsPerSec = Ratio(float64(ours.Records), ours.HistoricalMs/1000)

	if o.Postgres {
		return e.rawPostgres(ctx, o, convs, ours)
	}
	// The raw floor: the same records (read back from the source stores).
	var raw []RawCopy
	for _, c := range convs {
		recs, err := e.sourceRecords("conv/" + c.ID)
		if err != nil {
			return nil, err
		}
		rc, err := MeasureRawCopy(ctx, e.JS, "conv/"+c.ID, recs, o.PageLimit, e.Config.DataDir)
		if err != nil {
			return nil, err
		}
		raw = append(raw, rc)
	}
	var rrecs int
	var rms float64
	for _, r := range raw {
		rrecs += r.Records
		rms += r.PublishMs + r.PebbleMs
	}
	rawRate := Ratio(float64(rrecs), rms/1000)
	base := map[string]any{"records": rrecs, "ms": rms, "records_per_s": rawRate, "runs": raw,
		"what": "pages of the same records: JetStream publish to PAGES (acked) + Pebble batch write (store.Import, fsync), sequential"}
	r := &Result{Suite: "copy", Durability: DurableSingle, Ours: ours, Baseline: base,
		Ratio:  Ratio(ours.RecordsPerSec, rawRate),
		Target: ">= 50% of the raw JetStream publish + Pebble batch-write rate (ratio >= 0.5)",
		Notes:  []string{"Phase 2 time = hard-delete lock -> write lock (fence, every page's export + publish + import + checkpoint event, the write-lock escalation); records include the few delta records (no traffic runs)"}}
	r.Met = r.Ratio >= 0.5
	say(o.Progress, "phase 2 %.0f records/s, raw %.0f records/s", ours.RecordsPerSec, rawRate)
	return r, nil
}

// rawPostgres is the copy suite's PostgreSQL floor: the messages the
// migrations copied, read back from the source, inserted into a table of
// the same shape on the same server with COPY, one transaction per page of
// o.PageLimit, sequentially.
func (e *env) rawPostgres(ctx context.Context, o CopyOptions, convs []workload.Conv, ours copyFigure) (*Result, error) {
	var raw []RawPostgresCopy
	for _, c := range convs {
		recs, err := e.sourceRecordsOf("conv/"+c.ID, messages.ServiceName)
		if err != nil {
			return nil, err
		}
		rc, err := MeasureRawPostgresCopy(ctx, e.Config.Postgres, recs, o.PageLimit)
		if err != nil {
			return nil, err
		}
		raw = append(raw, rc)
	}
	var rrecs int
	var ims, cms float64
	for _, r := range raw {
		rrecs += r.Records
		ims += r.InsertMs
		cms += r.CopyMs
	}
	insertRate, copyRate := Ratio(float64(rrecs), ims/1000), Ratio(float64(rrecs), cms/1000)
	base := map[string]any{"records": rrecs, "ms": ims, "records_per_s": insertRate, "copy_records_per_s": copyRate, "runs": raw,
		"what": "the same messages inserted into PostgreSQL on the same server, one transaction (synchronous commit, fsync on) per page, sequential: a multi-row INSERT per page (records_per_s, the ratio's base) and COPY per page (copy_records_per_s)"}
	r := &Result{Suite: "copy", Durability: DurableSingle + "; PostgreSQL fsync on, synchronous commit", Ours: ours, Baseline: base,
		Ratio:  Ratio(ours.RecordsPerSec, insertRate),
		Target: ">= 50% of the raw batched-insert rate of the same records into the same PostgreSQL (ratio >= 0.5)",
		Notes: []string{"messages in PostgreSQL through the participant kit (services/pgstore), the other services on Pebble; records are every service's (the seeded conversations hold messages only)",
			"Phase 2 time = hard-delete lock -> write lock (fence, every page's export + publish to PAGES + import + checkpoint event, the write-lock escalation)",
			fmt.Sprintf("against COPY per page the ratio is %.2f", Ratio(ours.RecordsPerSec, copyRate))}}
	r.Met = r.Ratio >= 0.5
	say(o.Progress, "phase 2 %.0f records/s, raw PostgreSQL batched INSERT %.0f records/s, COPY %.0f records/s", ours.RecordsPerSec, insertRate, copyRate)
	return r, nil
}

// sourceRecords reads every record of resource from the source region's
// conversation stores.
func (e *env) sourceRecords(resource string) ([]store.Record, error) {
	return e.sourceRecordsOf(resource, "")
}

// sourceRecordsOf reads every record of resource from the source region's
// conversation services (service "" for all of them), whatever their store.
func (e *env) sourceRecordsOf(resource, service string) ([]store.Record, error) {
	var recs []store.Record
	for _, p := range e.Regions[e.Source].ParticipantsFor(chat.KindConversation) {
		in, ok := p.(interface {
			Records(context.Context, string) ([]store.Record, error)
		})
		if !ok || (service != "" && p.Service() != service) {
			continue
		}
		rs, err := in.Records(context.Background(), resource)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rs...)
	}
	return recs, nil
}

package ops

import (
	"encoding/json"
	"io"
	"slices"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/wire"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/projector/httpapi"
)

// How the operator commands show states, events and routing documents as
// JSON. Tokens are always redacted.

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func writeJSONLine(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

// rfc formats a JSON timestamp: RFC 3339 in UTC, "" for the zero time.
func rfc(t time.Time) string { return httpapi.Time(t) }

// StateJSON is a migration's state as the operator commands print it
// with --json, its token redacted.
type StateJSON struct {
	ID          string        `json:"id"`
	Resource    string        `json:"resource,omitempty"`
	Source      string        `json:"source,omitempty"`
	Target      string        `json:"target,omitempty"`
	Parent      string        `json:"parent,omitempty"`
	Tenant      string        `json:"tenant,omitempty"`
	Phase       string        `json:"phase"`
	Status      string        `json:"status"`
	Attempt     int           `json:"attempt"`
	MaxAttempts int           `json:"max_attempts"`
	Token       string        `json:"token,omitempty"`
	Reason      string        `json:"reason,omitempty"`
	Abort       string        `json:"abort,omitempty"`
	LockExpiry  string        `json:"lock_expiry,omitempty"`
	WaitUntil   string        `json:"wait_until,omitempty"`
	RequestedAt string        `json:"requested_at,omitempty"`
	EndedAt     string        `json:"ended_at,omitempty"`
	Figures     *FiguresJSON  `json:"figures,omitempty"`
	Children    []string      `json:"children,omitempty"`
	Services    []serviceJSON `json:"services,omitempty"`
	Fanout      *fanoutJSON   `json:"tenant_progress,omitempty"`
	Events      int           `json:"events"`
	LastSeq     uint64        `json:"last_seq,omitempty"`
	// WriteBlockedMs is how long the resource's writes have been blocked
	// over every attempt; MaxWriteBlockMs the write-block budget (0: the
	// write lease).
	WriteBlockedMs  int64 `json:"write_blocked_ms"`
	MaxWriteBlockMs int64 `json:"max_write_block_ms,omitempty"`
	// Paused is set while a pause holds the migration (PausedAt: since
	// when); RateRecordsPerS is its copy cap (0: none).
	Paused          bool   `json:"paused,omitempty"`
	PausedAt        string `json:"paused_at,omitempty"`
	PauseReason     string `json:"pause_reason,omitempty"`
	RateRecordsPerS int    `json:"rate_records_per_s,omitempty"`
	// Retrying is set on an active migration that has rolled back at least
	// once (the rolled-back phase, or a fresh attempt after it).
	Retrying bool `json:"retrying,omitempty"`
	// Rollbacks are its rolled-back attempts, read from its history
	// (`migrate status <id>` only).
	Rollbacks []RollbackJSON `json:"rollbacks,omitempty"`
}

// RollbackJSON is one rolled-back attempt of a migration.
type RollbackJSON struct {
	Attempt int    `json:"attempt"`
	Phase   string `json:"phase"`
	Reason  string `json:"reason"`
	Time    string `json:"time"`
}

// FiguresJSON are a migration's figures (paper 001 §6.2) as JSON, the
// shape the projector's read models use too.
type FiguresJSON = httpapi.Figures

// ToFiguresJSON converts figures to their JSON shape; nil gives nil.
func ToFiguresJSON(f *events.Figures) *FiguresJSON { return httpapi.FiguresOf(f) }

type serviceJSON struct {
	Service        string `json:"service"`
	Pages          int    `json:"pages"`
	Records        int    `json:"records"`
	HistoricalDone bool   `json:"historical_done"`
	DeltaDone      bool   `json:"delta_done"`
}

type fanoutJSON struct {
	Tenant      string `json:"tenant"`
	Target      string `json:"target"`
	Total       int    `json:"total"`
	Started     int    `json:"started"`
	Active      int    `json:"active"`
	Completed   int    `json:"completed"`
	Failed      int    `json:"failed"`
	Dropped     int    `json:"dropped"`
	Concurrency int    `json:"concurrency"`
	// Brakes counts the automatic brakes, BrakeReason the last one's
	// reason; MaxWriteLockP99Ms is the brake's threshold.
	Brakes            int    `json:"brakes,omitempty"`
	BrakeReason       string `json:"brake_reason,omitempty"`
	MaxWriteLockP99Ms int64  `json:"max_write_lock_p99_ms,omitempty"`
	// MaxSourceLatencyMs is the source-latency brake's threshold.
	MaxSourceLatencyMs int64 `json:"max_source_latency_ms,omitempty"`
}

func toStateJSON(st *events.State, seq uint64) StateJSON {
	if st == nil {
		return StateJSON{}
	}
	j := StateJSON{ID: st.ID, Resource: st.Resource, Source: st.Source, Target: st.Target, Parent: st.Parent, Tenant: st.Tenant,
		Phase: string(st.Phase), Status: string(st.Status), Attempt: st.Attempt, MaxAttempts: st.MaxAttempts,
		Reason: st.Reason, Abort: st.Abort, LockExpiry: rfc(st.LockExpiry), WaitUntil: rfc(st.WaitUntil),
		RequestedAt: rfc(st.RequestedAt), EndedAt: rfc(st.EndedAt), Figures: ToFiguresJSON(st.Figures), Children: slices.Clone(st.Children),
		Events: st.Events, LastSeq: seq, Retrying: rolledBack(st) > 0,
		WriteBlockedMs: st.WriteBlocked.Milliseconds(), MaxWriteBlockMs: st.MaxWriteBlock.Milliseconds(),
		Paused: st.Paused, PausedAt: rfc(st.PausedAt), PauseReason: st.PauseReason, RateRecordsPerS: st.Rate}
	if st.Token != "" {
		j.Token = kvrouting.Token(st.Token).Redacted()
	}
	for _, s := range st.Services {
		j.Services = append(j.Services, serviceJSON{s.Service, s.Pages, s.Records, s.HistoricalDone, s.DeltaDone})
	}
	if f := st.Fanout; f != nil {
		j.Fanout = &fanoutJSON{Tenant: f.Tenant, Target: f.Target, Total: len(f.Resources), Started: f.Next, Active: len(f.Active),
			Completed: f.Completed, Failed: f.Failed, Dropped: f.Dropped, Concurrency: f.Concurrency,
			Brakes: f.Brakes, BrakeReason: f.BrakeReason, MaxWriteLockP99Ms: f.MaxWriteLockP99.Milliseconds(),
			MaxSourceLatencyMs: f.MaxSourceLatency.Milliseconds()}
		j.RateRecordsPerS = f.Rate
	}
	return j
}

// eventJSON is one event for --json; tokens in the body are redacted.
type eventJSON struct {
	Seq         uint64      `json:"seq,omitempty"`
	Time        string      `json:"time"`
	Type        string      `json:"type"`
	MigrationID string      `json:"migration_id"`
	Resource    string      `json:"resource,omitempty"`
	Phase       string      `json:"phase,omitempty"`
	Status      string      `json:"status,omitempty"`
	Detail      string      `json:"detail,omitempty"`
	Body        events.Body `json:"body"`
}

func toEventJSON(seq uint64, e *events.Envelope) eventJSON {
	j := eventJSON{Seq: seq, Time: rfc(e.Time), Type: e.Type, MigrationID: e.MigrationID, Resource: e.Resource, Detail: describe(e), Body: e.Body}
	if e.State != nil {
		j.Phase, j.Status = string(e.State.Phase), string(e.State.Status)
		if j.Resource == "" {
			j.Resource = e.State.Resource
		}
	}
	switch b := e.Body.(type) {
	case events.Requested:
		b.Token = kvrouting.Token(b.Token).Redacted()
		j.Body = b
	case events.Rescheduled:
		b.Token = kvrouting.Token(b.Token).Redacted()
		j.Body = b
	}
	return j
}

// routingDocJSON is the routing document in the shape of the API's GET
// /v1/routing (app/client.RoutingDocument decodes it): the wire
// format's JSON form (`cutover decode routing`, internal/wire.Routing) and
// the revision read, from the leader.
type routingDocJSON struct {
	wire.Routing
	Revision uint64 `json:"revision"`
	Source   string `json:"source"`
}

func toRoutingJSON(d *kvrouting.Document) routingDocJSON {
	return routingDocJSON{Routing: wire.RoutingOf(d), Revision: d.Revision, Source: "leader"}
}

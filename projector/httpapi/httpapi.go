// Package httpapi serves the projector's read models over HTTP (the
// `cutover projector` role and `cutover dev`): recent migrations, one
// migration with its timeline, a tenant's progress.
package httpapi

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/projector"
	"github.com/cutover/cutover/services/contract"
)

// Options configure Handler. The zero value serves everything to anyone
// with no cap on event streams (development).
type Options struct {
	// Authenticate, when set, must accept a request before any route but
	// /healthz answers (401 otherwise). It sees the request's
	// Authorization header, or the token a browser was given as a cookie
	// (GET /?token=T checks T and sets that cookie, so that the dashboard's
	// page and its event stream, which cannot send headers, authenticate).
	Authenticate func(*http.Request) error
	// Streams, when set, caps the dashboard's concurrent event streams per
	// client address: past the cap a stream is refused with 503.
	Streams Slots
	// StreamWriteTimeout bounds the write of each streamed event (0 = 10
	// s): a client that stops reading is dropped, whatever the server's
	// WriteTimeout.
	StreamWriteTimeout time.Duration
}

// Slots counts holders of a scarce resource per client address
// (internal/httpguard.Slots).
type Slots interface {
	Acquire(client string) bool
	Release(client string)
}

// TokenCookie is the cookie that carries a browser's token.
const TokenCookie = "cutover_token"

// Handler serves p's read models, /healthz and, when metrics is not nil,
// metrics on /metrics:
//
//	GET /v1/migrations[?status=S&resource=R&limit=N]   recent migrations, newest first
//	GET /v1/migrations/{id}                            one migration with its timeline
//	GET /v1/tenants/{id}                               a tenant fan-out's progress
//	GET /                                              the operator dashboard (dashboard.go)
//	GET /v1/dashboard[/stream]                         its data, once or as server-sent events
//
// behind o's authentication. Errors use the user API's JSON error shape
// (docs/api.md).
func Handler(p *projector.Projector, metrics http.Handler, o Options) http.Handler {
	mux := http.NewServeMux()
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		sendJSON(w, http.StatusOK, map[string]any{"ok": true, "last_seq": p.LastSeq()})
	})
	mux.HandleFunc("GET /v1/migrations", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit := 100
		if s := q.Get("limit"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 {
				sendError(w, http.StatusBadRequest, "invalid", "limit must be a non-negative integer")
				return
			}
			limit = n
		}
		status, resource := q.Get("status"), q.Get("resource")
		snap := p.Snapshot()
		out := []Migration{}
		for _, v := range snap.Migrations {
			if (status != "" && string(v.Status) != status) || (resource != "" && v.Resource != resource) {
				continue
			}
			out = append(out, toMigration(v, false))
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Updated > out[j].Updated })
		if limit > 0 && len(out) > limit {
			out = out[:limit]
		}
		durations := map[string]Durations{}
		for name, d := range snap.Durations {
			durations[name] = Durations{Count: d.Count, P50: d.P50.String(), P99: d.P99.String(), Max: d.Max.String()}
		}
		sendJSON(w, http.StatusOK, map[string]any{"last_seq": snap.LastSeq, "migrations": out, "durations": durations})
	})
	mux.HandleFunc("GET /v1/migrations/{id}", func(w http.ResponseWriter, r *http.Request) {
		v, ok := p.Migration(r.PathValue("id"))
		if !ok {
			sendError(w, http.StatusNotFound, "not_found", "no migration "+r.PathValue("id"))
			return
		}
		sendJSON(w, http.StatusOK, toMigration(v, true))
	})
	mux.HandleFunc("GET /v1/tenants/{id}", func(w http.ResponseWriter, r *http.Request) {
		t, ok := p.Tenant(r.PathValue("id"))
		if !ok {
			sendError(w, http.StatusNotFound, "not_found", "no tenant migration "+r.PathValue("id"))
			return
		}
		sendJSON(w, http.StatusOK, Tenant{ID: t.ID, Tenant: t.Tenant, Target: t.Target, Status: string(t.Status), Total: t.Total,
			Started: t.Started, Active: t.Active, Completed: t.Completed, Failed: t.Failed, Dropped: t.Dropped, Concurrency: t.Concurrency,
			Paused: t.Paused, RateRecordsPerS: t.Rate, Brakes: t.Brakes, BrakeReason: t.BrakeReason})
	})
	dashboard(mux, p, o)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		sendError(w, http.StatusNotFound, "not_found", "no route "+r.Method+" "+r.URL.Path)
	})
	if o.Authenticate == nil {
		return mux
	}
	return authenticated(mux, o.Authenticate)
}

// authenticated serves h to requests authenticate accepts; /healthz stays
// open (health checks carry no credentials).
func authenticated(h http.Handler, authenticate func(*http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			h.ServeHTTP(w, r)
			return
		}
		if tok := r.URL.Query().Get("token"); tok != "" && r.Method == http.MethodGet && r.URL.Path == "/" {
			// A browser's sign-in: check the token, keep it in a cookie
			// only this origin's requests carry, and drop it from the URL.
			rr := r.Clone(r.Context())
			rr.Header.Set("Authorization", "Bearer "+tok)
			if err := authenticate(rr); err != nil {
				unauthorized(w, err)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: tok, Path: "/", HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		if r.Header.Get("Authorization") == "" {
			if c, err := r.Cookie(TokenCookie); err == nil && c.Value != "" {
				r = r.Clone(r.Context())
				r.Header.Set("Authorization", "Bearer "+c.Value)
			}
		}
		if err := authenticate(r); err != nil {
			unauthorized(w, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func unauthorized(w http.ResponseWriter, err error) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="cutover projector"`)
	// The authenticator's own words (an *contract.Error's message), never
	// its code or a Go package's name.
	sendError(w, http.StatusUnauthorized, "unauthorized", "authentication required: "+contract.ClientText(contract.AsError(err).Message))
}

// Migration is a projector.MigrationView over HTTP.
type Migration struct {
	ID       string `json:"id"`
	Resource string `json:"resource,omitempty"`
	Tenant   string `json:"tenant,omitempty"`
	Parent   string `json:"parent,omitempty"`
	Source   string `json:"source,omitempty"`
	Target   string `json:"target,omitempty"`
	Phase    string `json:"phase"`
	Status   string `json:"status"`
	Attempt  int    `json:"attempt"`
	Reason   string `json:"reason,omitempty"`
	// WriteBlockedMs is how long the resource's writes have been blocked
	// over every attempt.
	WriteBlockedMs int64 `json:"write_blocked_ms"`
	// Paused is set while a pause holds the migration; RateRecordsPerS
	// is its copy cap (0: none).
	Paused          bool            `json:"paused,omitempty"`
	RateRecordsPerS int             `json:"rate_records_per_s,omitempty"`
	Figures         *Figures        `json:"figures,omitempty"`
	Children        []string        `json:"children,omitempty"`
	LastSeq         uint64          `json:"last_seq"`
	Updated         string          `json:"updated"`
	Timeline        []TimelineEntry `json:"timeline,omitempty"`
}

// TimelineEntry is one event of a migration's timeline.
type TimelineEntry struct {
	Seq   uint64 `json:"seq"`
	Type  string `json:"type"`
	Phase string `json:"phase"`
	Time  string `json:"time"`
}

// Tenant is a tenant fan-out's progress (projector.TenantView).
type Tenant struct {
	ID          string `json:"id"`
	Tenant      string `json:"tenant"`
	Target      string `json:"target"`
	Status      string `json:"status"`
	Total       int    `json:"total"`
	Started     int    `json:"started"`
	Active      int    `json:"active"`
	Completed   int    `json:"completed"`
	Failed      int    `json:"failed"`
	Dropped     int    `json:"dropped"`
	Concurrency int    `json:"concurrency"`
	// Paused, RateRecordsPerS, Brakes and BrakeReason are the move's
	// steering: paused, its copy cap (0: none), its automatic brakes and
	// why the last one tripped.
	Paused          bool   `json:"paused,omitempty"`
	RateRecordsPerS int    `json:"rate_records_per_s,omitempty"`
	Brakes          int    `json:"brakes,omitempty"`
	BrakeReason     string `json:"brake_reason,omitempty"`
}

// Durations summarises a phase's durations.
type Durations struct {
	Count int    `json:"count"`
	P50   string `json:"p50"`
	P99   string `json:"p99"`
	Max   string `json:"max"`
}

func toMigration(v projector.MigrationView, timeline bool) Migration {
	j := Migration{ID: v.ID, Resource: v.Resource, Tenant: v.Tenant, Parent: v.Parent, Source: v.Source, Target: v.Target,
		Phase: string(v.Phase), Status: string(v.Status), Attempt: v.Attempt, Reason: v.Reason, Figures: FiguresOf(v.Figures),
		WriteBlockedMs: v.WriteBlocked.Milliseconds(), Paused: v.Paused, RateRecordsPerS: v.Rate,
		Children: v.Children, LastSeq: v.LastSeq, Updated: Time(v.Updated)}
	if timeline {
		for _, t := range v.Timeline {
			j.Timeline = append(j.Timeline, TimelineEntry{Seq: t.Seq, Type: t.Type, Phase: string(t.Phase), Time: Time(t.Time)})
		}
	}
	return j
}

func sendJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// sendError writes the API's error shape.
func sendError(w http.ResponseWriter, status int, code, msg string) {
	sendJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// Figures are a migration's figures (paper 001 §6.2) in JSON, as the
// projector and `cutover migrate status --json` show them.
type Figures struct {
	PreLockMs    int64 `json:"pre_lock_ms"`
	HistoricalMs int64 `json:"historical_ms"`
	WriteLockMs  int64 `json:"write_lock_ms"`
	CutoverMs    int64 `json:"cutover_ms"`
	TotalMs      int64 `json:"total_ms"`
	Attempts     int   `json:"attempts"`
	Records      int   `json:"records"`
	// WriteBlockedMs is how long writes were blocked over every attempt
	// (a rolled-back attempt's write lock included).
	WriteBlockedMs int64 `json:"write_blocked_ms"`
}

// FiguresOf is f in JSON (nil for nil).
func FiguresOf(f *events.Figures) *Figures {
	if f == nil {
		return nil
	}
	return &Figures{f.PreLockMs, f.HistoricalMs, f.WriteLockMs, f.CutoverMs, f.TotalMs, f.Attempts, f.Records, f.WriteBlockedMs}
}

// Time is t in RFC 3339 with nanoseconds, UTC ("" for the zero time).
func Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

package httpapi

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/projector"
)

// The operator dashboard: GET / serves one page (embedded,
// no build step, no CDN) that renders /v1/dashboard/stream, a server-sent
// event stream of Board snapshots: one at once, then one after every change
// the projector folds in (at most every 200 ms).

//go:embed dashboard/index.html
var dashboardFS embed.FS

// Board is what the dashboard shows.
type Board struct {
	Time string `json:"time"`
	// InFlight are the migrations not ended, with their phase and elapsed
	// time; Recent the last ended ones.
	InFlight []BoardMigration `json:"in_flight"`
	Recent   []BoardMigration `json:"recent"`
	Tenants  []BoardTenant    `json:"tenants"`
	// WriteLock summarises the completed migrations' write-lock windows;
	// Histogram counts them per bucket (upper bound in ms, "+Inf" last).
	WriteLock Durations       `json:"write_lock"`
	Histogram []BoardBucket   `json:"write_lock_histogram"`
	Rollbacks []BoardRollback `json:"rollbacks"`
	// Locks are the locks the in-flight migrations hold, by resource.
	Locks []BoardLock `json:"locks"`
}

// BoardMigration is one migration on the board.
type BoardMigration struct {
	ID          string  `json:"id"`
	Resource    string  `json:"resource"`
	Source      string  `json:"source"`
	Target      string  `json:"target"`
	Phase       string  `json:"phase"`
	Status      string  `json:"status"`
	Attempt     int     `json:"attempt"`
	ElapsedMs   float64 `json:"elapsed_ms"`
	WriteLockMs int64   `json:"write_lock_ms,omitempty"`
	// WriteBlockedMs is how long writes were blocked over every attempt
	// (rolled-back ones included).
	WriteBlockedMs int64 `json:"write_blocked_ms,omitempty"`
	// Paused is set while a pause holds it; RateRecordsPerS is its copy
	// cap (0: none).
	Paused          bool `json:"paused,omitempty"`
	RateRecordsPerS int  `json:"rate_records_per_s,omitempty"`
}

// BoardTenant is a tenant move's progress, with an ETA at its observed
// completion rate.
type BoardTenant struct {
	ID        string  `json:"id"`
	Tenant    string  `json:"tenant"`
	Target    string  `json:"target"`
	Status    string  `json:"status"`
	Total     int     `json:"total"`
	Finished  int     `json:"finished"`
	Failed    int     `json:"failed"`
	ElapsedMs float64 `json:"elapsed_ms"`
	ETAMs     float64 `json:"eta_ms"`
	// The move's steering: paused, its concurrency and copy cap (0: none),
	// its automatic brakes and why the last one tripped.
	Paused          bool   `json:"paused,omitempty"`
	Concurrency     int    `json:"concurrency"`
	RateRecordsPerS int    `json:"rate_records_per_s,omitempty"`
	Brakes          int    `json:"brakes,omitempty"`
	BrakeReason     string `json:"brake_reason,omitempty"`
}

// BoardBucket is one write-lock histogram bucket.
type BoardBucket struct {
	LE    string `json:"le"`
	Count int    `json:"count"`
}

// BoardRollback is one rollback with its reason.
type BoardRollback struct {
	ID       string `json:"id"`
	Resource string `json:"resource"`
	Reason   string `json:"reason"`
	Time     string `json:"time"`
}

// BoardLock is a lock an in-flight migration holds.
type BoardLock struct {
	Resource string `json:"resource"`
	Lock     string `json:"lock"`
	Region   string `json:"region"`
	ID       string `json:"migration_id"`
}

// lockOf is the lock a migration in phase ph holds on its source.
func lockOf(ph events.Phase) string {
	switch ph {
	case events.PhasePreLocked, events.PhaseRequested, events.PhaseConverged:
		return "pre"
	case events.PhaseHistorical:
		return "hard-delete"
	case events.PhaseDelta, events.PhaseValidated:
		return "write"
	}
	return ""
}

var histogramMs = []int64{10, 25, 50, 100, 250, 500, 1000, 2500, 5000}

// board builds the dashboard's snapshot from the projector's models.
func board(snap projector.Snapshot, now time.Time) Board {
	b := Board{Time: Time(now), InFlight: []BoardMigration{}, Recent: []BoardMigration{}, Tenants: []BoardTenant{},
		Rollbacks: []BoardRollback{}, Locks: []BoardLock{}}
	if d, ok := snap.Durations[projector.DurWriteLock]; ok {
		b.WriteLock = Durations{Count: d.Count, P50: d.P50.String(), P99: d.P99.String(), Max: d.Max.String()}
	}
	counts := make([]int, len(histogramMs)+1)
	for _, v := range snap.Migrations {
		if v.Phase == events.PhaseTenant {
			continue
		}
		start := v.Updated
		if len(v.Timeline) > 0 {
			start = v.Timeline[0].Time
		}
		m := BoardMigration{ID: v.ID, Resource: v.Resource, Source: v.Source, Target: v.Target, Phase: string(v.Phase),
			Status: string(v.Status), Attempt: v.Attempt, WriteBlockedMs: v.WriteBlocked.Milliseconds(), Paused: v.Paused, RateRecordsPerS: v.Rate}
		if v.Status == events.StatusActive {
			m.ElapsedMs = float64(now.Sub(start).Milliseconds())
			b.InFlight = append(b.InFlight, m)
			if l := lockOf(v.Phase); l != "" {
				b.Locks = append(b.Locks, BoardLock{Resource: v.Resource, Lock: l, Region: v.Source, ID: v.ID})
			}
		} else {
			m.ElapsedMs = float64(v.Updated.Sub(start).Milliseconds())
			if v.Figures != nil {
				m.WriteLockMs = v.Figures.WriteLockMs
			}
			b.Recent = append(b.Recent, m)
		}
		if v.Status == events.StatusCompleted && v.Figures != nil {
			i := sort.Search(len(histogramMs), func(i int) bool { return v.Figures.WriteLockMs <= histogramMs[i] })
			counts[i]++
		}
		for _, e := range v.Timeline {
			if e.Type == events.TypeRolledBack {
				b.Rollbacks = append(b.Rollbacks, BoardRollback{ID: v.ID, Resource: v.Resource, Reason: v.Reason, Time: Time(e.Time)})
			}
		}
	}
	for i, c := range counts {
		le := "+Inf"
		if i < len(histogramMs) {
			le = fmt.Sprint(histogramMs[i])
		}
		b.Histogram = append(b.Histogram, BoardBucket{LE: le, Count: c})
	}
	for _, t := range snap.Tenants {
		bt := BoardTenant{ID: t.ID, Tenant: t.Tenant, Target: t.Target, Status: string(t.Status), Total: t.Total,
			Finished: t.Completed + t.Failed + t.Dropped, Failed: t.Failed,
			Paused: t.Paused, Concurrency: t.Concurrency, RateRecordsPerS: t.Rate, Brakes: t.Brakes, BrakeReason: t.BrakeReason}
		if v, ok := snap.Migrations[t.ID]; ok && len(v.Timeline) > 0 {
			end := now
			if t.Status != events.StatusActive {
				end = v.Updated
			}
			bt.ElapsedMs = float64(end.Sub(v.Timeline[0].Time).Milliseconds())
		}
		if bt.Finished > 0 && bt.Finished < bt.Total {
			bt.ETAMs = bt.ElapsedMs / float64(bt.Finished) * float64(bt.Total-bt.Finished)
		}
		b.Tenants = append(b.Tenants, bt)
	}
	sort.Slice(b.InFlight, func(i, j int) bool { return b.InFlight[i].ElapsedMs > b.InFlight[j].ElapsedMs })
	sort.Slice(b.Recent, func(i, j int) bool { return b.Recent[i].ID > b.Recent[j].ID })
	sort.Slice(b.Rollbacks, func(i, j int) bool { return b.Rollbacks[i].Time > b.Rollbacks[j].Time })
	sort.Slice(b.Locks, func(i, j int) bool { return b.Locks[i].Resource < b.Locks[j].Resource })
	if len(b.Recent) > 50 {
		b.Recent = b.Recent[:50]
	}
	if len(b.Rollbacks) > 50 {
		b.Rollbacks = b.Rollbacks[:50]
	}
	return b
}

// dashboard registers GET / and the stream on mux.
func dashboard(mux *http.ServeMux, p *projector.Projector, o Options) {
	writeTimeout := o.StreamWriteTimeout
	if writeTimeout <= 0 {
		writeTimeout = 10 * time.Second
	}
	page, _ := dashboardFS.ReadFile("dashboard/index.html")
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		// The page carries the current board, rendered before the load
		// event; the stream keeps it live from there.
		j, _ := json.Marshal(board(p.Snapshot(), time.Now()))
		j = bytes.ReplaceAll(j, []byte("</"), []byte(`<\/`))
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(bytes.Replace(page, []byte("/*INITIAL*/null"), j, 1))
	})
	mux.HandleFunc("GET /v1/dashboard", func(w http.ResponseWriter, r *http.Request) {
		sendJSON(w, http.StatusOK, board(p.Snapshot(), time.Now()))
	})
	mux.HandleFunc("GET /v1/dashboard/stream", func(w http.ResponseWriter, r *http.Request) {
		if o.Streams != nil {
			client := r.RemoteAddr
			if h, _, err := net.SplitHostPort(client); err == nil {
				client = h
			}
			if !o.Streams.Acquire(client) {
				w.Header().Set("Retry-After", "5")
				sendError(w, http.StatusServiceUnavailable, "unavailable", "too many dashboard streams; close one or retry later")
				return
			}
			defer o.Streams.Release(client)
		}
		rc := http.NewResponseController(w)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		changes, stop := p.Subscribe(64)
		defer stop()
		// Each event gets its own write deadline, which replaces the
		// server's WriteTimeout for this long-lived response: a client that
		// stops reading is dropped after one event, not never.
		send := func() bool {
			if err := rc.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
				return false
			}
			j, _ := json.Marshal(board(p.Snapshot(), time.Now()))
			if _, err := fmt.Fprintf(w, "event: board\ndata: %s\n\n", j); err != nil {
				return false
			}
			return rc.Flush() == nil
		}
		if !send() {
			return
		}
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		dirty, heartbeat := false, 0
		for {
			select {
			case <-r.Context().Done():
				return
			case <-changes:
				dirty = true
			case <-tick.C:
				// Changes are coalesced; the elapsed times and ETAs move
				// every second even without one.
				heartbeat++
				if dirty || heartbeat%5 == 0 {
					dirty = false
					if !send() {
						return
					}
				}
			}
		}
	})
}

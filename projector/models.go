package projector

import (
	"slices"
	"time"

	"github.com/cutover/cutover/events"
)

// TimelineEntry is one event in a migration's timeline.
type TimelineEntry struct {
	Seq   uint64
	Type  string
	Phase events.Phase
	Time  time.Time
}

// MigrationView is the read model of one migration (or tenant fan-out).
type MigrationView struct {
	ID       string
	Resource string
	Tenant   string
	Parent   string
	Source   string
	Target   string
	Phase    events.Phase
	Status   events.Status
	Attempt  int
	Reason   string
	// WriteBlocked is how long the resource's writes have been blocked
	// over every attempt (events.State.WriteBlocked).
	WriteBlocked time.Duration
	// Paused is set while a pause holds it; Rate is its copy cap in
	// records a second (0: none).
	Paused   bool
	Rate     int
	Figures  *events.Figures
	Children []string
	Timeline []TimelineEntry
	LastSeq  uint64
	Updated  time.Time
}

// TenantView is the progress of one tenant fan-out.
type TenantView struct {
	ID          string
	Tenant      string
	Target      string
	Total       int
	Started     int
	Active      int
	Completed   int
	Failed      int
	Dropped     int
	Concurrency int
	Status      events.Status
	// Paused is set while the move is paused; Rate caps its copy (records
	// a second, 0: none); Brakes counts its automatic brakes and
	// BrakeReason says why the last one tripped.
	Paused      bool
	Rate        int
	Brakes      int
	BrakeReason string
}

// Distribution summarises one phase's durations over completed migrations.
type Distribution struct {
	Count int
	P50   time.Duration
	P99   time.Duration
	Max   time.Duration
}

// Phase names of the duration distributions.
const (
	DurPreLock    = "pre-lock"
	DurHistorical = "historical-copy"
	DurWriteLock  = "write-lock"
	DurCutover    = "cutover"
	DurTotal      = "total"
)

// Snapshot is a copy of every read model at one stream sequence.
type Snapshot struct {
	// LastSeq is the last stream sequence folded in.
	LastSeq    uint64
	Migrations map[string]MigrationView
	Tenants    map[string]TenantView
	Durations  map[string]Distribution
}

// models is the mutable fold; owned by one goroutine or guarded by the
// projector's mutex.
type models struct {
	lastSeq    uint64
	migrations map[string]*MigrationView
	tenants    map[string]*TenantView
	durations  map[string][]int64 // ms
}

func newModels() *models {
	return &models{migrations: map[string]*MigrationView{}, tenants: map[string]*TenantView{}, durations: map[string][]int64{}}
}

// apply folds one event (stream sequence seq) into the models.
func (m *models) apply(seq uint64, e *events.Envelope) {
	if seq <= m.lastSeq {
		return // replayed by a restarted consumer
	}
	m.lastSeq = seq
	st := e.State
	if st == nil || e.MigrationID == "" {
		return
	}
	v := m.migrations[e.MigrationID]
	if v == nil {
		v = &MigrationView{ID: e.MigrationID}
		m.migrations[e.MigrationID] = v
	}
	v.Resource, v.Tenant, v.Parent, v.Source, v.Target = st.Resource, st.Tenant, st.Parent, st.Source, st.Target
	v.Phase, v.Status, v.Attempt, v.Reason, v.WriteBlocked = st.Phase, st.Status, st.Attempt, st.Reason, st.WriteBlocked
	v.Paused, v.Rate = st.Paused, st.Rate
	v.Children = slices.Clone(st.Children)
	v.Timeline = append(v.Timeline, TimelineEntry{Seq: seq, Type: e.Type, Phase: st.Phase, Time: e.Time})
	v.LastSeq, v.Updated = seq, e.Time
	if st.Figures != nil {
		f := *st.Figures
		v.Figures = &f
	}
	if f := st.Fanout; f != nil {
		m.tenants[e.MigrationID] = &TenantView{ID: e.MigrationID, Tenant: f.Tenant, Target: f.Target, Total: len(f.Resources),
			Started: f.Next, Active: len(f.Active), Completed: f.Completed, Failed: f.Failed, Dropped: f.Dropped,
			Concurrency: f.Concurrency, Status: st.Status, Paused: st.Paused, Rate: f.Rate, Brakes: f.Brakes, BrakeReason: f.BrakeReason}
		return
	}
	if c, ok := e.Body.(events.Completed); ok {
		f := c.Figures
		for name, ms := range map[string]int64{DurPreLock: f.PreLockMs, DurHistorical: f.HistoricalMs,
			DurWriteLock: f.WriteLockMs, DurCutover: f.CutoverMs, DurTotal: f.TotalMs} {
			m.durations[name] = append(m.durations[name], ms)
		}
	}
}

// snapshot returns a deep copy.
func (m *models) snapshot() Snapshot {
	s := Snapshot{LastSeq: m.lastSeq, Migrations: make(map[string]MigrationView, len(m.migrations)),
		Tenants: make(map[string]TenantView, len(m.tenants)), Durations: map[string]Distribution{}}
	for id, v := range m.migrations {
		c := *v
		c.Timeline = slices.Clone(v.Timeline)
		c.Children = slices.Clone(v.Children)
		if v.Figures != nil {
			f := *v.Figures
			c.Figures = &f
		}
		s.Migrations[id] = c
	}
	for id, t := range m.tenants {
		s.Tenants[id] = *t
	}
	for name, xs := range m.durations {
		s.Durations[name] = distribution(xs)
	}
	return s
}

// distribution computes nearest-rank percentiles.
func distribution(ms []int64) Distribution {
	if len(ms) == 0 {
		return Distribution{}
	}
	xs := slices.Clone(ms)
	slices.Sort(xs)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(xs))+0.999999) - 1
		i = min(max(i, 0), len(xs)-1)
		return time.Duration(xs[i]) * time.Millisecond
	}
	return Distribution{Count: len(xs), P50: rank(0.50), P99: rank(0.99), Max: time.Duration(xs[len(xs)-1]) * time.Millisecond}
}

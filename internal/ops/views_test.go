package ops

// Golden tests of the operator views: every text and JSON rendering of
// states, timelines, routing documents, lock changes, tenant progress and
// dry-run plans, from fixed inputs (fixed times and ids), so that a change
// in any view shows as a diff of testdata/*.golden. `go test -update`
// rewrites them.

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// secret is every lock token of the fixtures: no view may show it whole.
const secret = "tok-0123456789abcdef"

// golden compares got with testdata/name, or rewrites it with -update,
// and checks that no token shows whole.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	if bytes.Contains(got, []byte(secret)) || bytes.Contains(got, []byte("0123456789abcdef")) {
		t.Errorf("%s shows a lock token whole:\n%s", name, got)
	}
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// t0 is the fixtures' epoch; far is a time no run of these tests reaches
// (a lease "in force", a wait still ahead), past one every run has passed.
var (
	t0   = time.Date(2025, 3, 4, 5, 6, 7, 123_000_000, time.UTC)
	far  = time.Date(2199, 1, 2, 3, 4, 5, 0, time.UTC)
	past = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
)

func at(d time.Duration) time.Time { return t0.Add(d) }

var figures = &events.Figures{PreLockMs: 1510, HistoricalMs: 2300, WriteLockMs: 42, CutoverMs: 7, TotalMs: 3900, Attempts: 2, Records: 1234}

// states are one of each shape printState knows.
func states() []*events.State {
	return []*events.State{
		{ID: "m-active", Resource: "conv/lunch", Source: "us-east", Target: "eu-west", Phase: events.PhaseHistorical, Status: events.StatusActive,
			Attempt: 1, MaxAttempts: 3, Token: secret, LockExpiry: at(30 * time.Second), WaitUntil: past, RequestedAt: t0,
			Services: []events.ServiceProgress{{Service: "messages", Pages: 3, Records: 750, HistoricalDone: true}, {Service: "reactions", Pages: 1, Records: 12}},
			Paused:   true, PausedAt: at(time.Second), PauseReason: "peak hours", Rate: 500,
			Events: 9},
		{ID: "m-waiting", Resource: "conv/new", Target: "eu-west", Phase: events.PhasePreLocked, Status: events.StatusActive,
			Attempt: 2, MaxAttempts: 3, Token: secret, LockExpiry: far, WaitUntil: far, Abort: "cancel requested: operator",
			Parent: "t-acme", Tenant: "acme", RequestedAt: t0, Events: 4},
		{ID: "m-rolled", Resource: "conv/retry", Source: "us-east", Target: "eu-west", Phase: events.PhaseRolledBack, Status: events.StatusActive,
			Attempt: 1, MaxAttempts: 3, Reason: "3 transient failures in historical-copy: unavailable", RequestedAt: t0, Events: 6},
		{ID: "m-done", Resource: "conv/lunch", Source: "us-east", Target: "eu-west", Phase: events.PhaseDone, Status: events.StatusCompleted,
			Attempt: 2, MaxAttempts: 3, Token: secret, LockExpiry: at(time.Minute), Figures: figures, Children: []string{"c1", "c2"},
			RequestedAt: t0, EndedAt: at(3900 * time.Millisecond), Events: 21},
		{ID: "m-failed", Resource: "conv/x", Source: "us-east", Target: "ap-south", Phase: events.PhaseDone, Status: events.StatusFailed,
			Attempt: 3, MaxAttempts: 3, Reason: "no contract service answers in ap-south", RequestedAt: t0, EndedAt: at(2 * time.Second), Events: 12},
		{ID: "t-acme", Target: "eu-west", Tenant: "acme", Phase: events.PhaseTenant, Status: events.StatusActive, RequestedAt: t0, Events: 7,
			Fanout: &events.TenantState{Tenant: "acme", Target: "eu-west", Resources: []string{"conv/a", "conv/b", "conv/c", "conv/d"}, Concurrency: 2, Next: 3,
				Active: []events.TenantChild{{Resource: "conv/c", MigrationID: "m-c"}}, Completed: 1, Failed: 1,
				Rate: 1000, MaxWriteLockP99: 500 * time.Millisecond, Brakes: 1, BrakeReason: "write-lock p99 1.2s over 500ms across the last 5 children"}},
	}
}

func TestStateViews(t *testing.T) {
	rbs := []RollbackJSON{{Attempt: 1, Phase: string(events.PhaseHistorical), Reason: "3 transient failures", Time: rfc(at(time.Second))}}
	var text bytes.Buffer
	var js []StateJSON
	for i, st := range states() {
		fmt.Fprintf(&text, "== %s\n", st.ID)
		printState(&text, st)
		j := toStateJSON(st, uint64(100+i))
		if st.Status.Terminal() && st.Attempt > 1 {
			printRollbacks(&text, rbs)
			j.Rollbacks = rbs
		}
		if st.Status.Terminal() {
			fmt.Fprintf(&text, "summary: %s\n", summaryLine(st))
		}
		fmt.Fprintf(&text, "status word: %s\n", statusWord(st))
		js = append(js, j)
	}
	golden(t, "state.golden", text.Bytes())
	var b bytes.Buffer
	if err := writeJSON(&b, js); err != nil {
		t.Fatal(err)
	}
	golden(t, "state.json.golden", b.Bytes())
	if j := toStateJSON(nil, 1); j.ID != "" || j.Events != 0 || j.LastSeq != 0 {
		t.Error("a nil state is not the zero JSON")
	}
}

// timeline is one of each event type describe knows, each with the state
// after it.
func timeline() []*events.Envelope {
	st := func(phase events.Phase, status events.Status, attempt int) *events.State {
		return &events.State{ID: "m-tl", Resource: "conv/lunch", Source: "us-east", Target: "eu-west", Phase: phase, Status: status, Attempt: attempt, MaxAttempts: 3, Token: secret}
	}
	active := events.StatusActive
	delta := events.DeltaCopied{Service: "messages", Cursor: 40, Next: 45, Count: 5, More: false}
	page := events.PageCopied{Service: "messages", Cursor: 0, Next: 250, Count: 250, More: true, Dependents: []string{"reactions", "readstate"}}
	val := events.Validated{OK: true, Slices: 16, Duration: 3456789 * time.Nanosecond}
	bodies := []struct {
		d     time.Duration
		body  events.Body
		state *events.State
	}{
		{0, events.Requested{Resource: "conv/lunch", Target: "eu-west", Attempt: 1, MaxAttempts: 3, Token: secret}, st(events.PhaseRequested, active, 1)},
		{10 * time.Millisecond, events.PreLocked{Source: "us-east", NotBefore: at(0), Expiry: at(time.Minute), WaitUntil: at(1500 * time.Millisecond)}, st(events.PhasePreLocked, active, 1)},
		{1510 * time.Millisecond, events.Converged{}, st(events.PhaseConverged, active, 1)},
		{1520 * time.Millisecond, events.HardDeleteLocked{Expiry: at(time.Minute), Services: []string{"messages", "reactions"}}, st(events.PhaseHistorical, active, 1)},
		{1600 * time.Millisecond, page, st(events.PhaseHistorical, active, 1)},
		{1700 * time.Millisecond, events.PagesCopied{Pages: []events.PageCopied{page, {Service: "reactions", Next: 12, Count: 12}}}, st(events.PhaseHistorical, active, 1)},
		{1800 * time.Millisecond, events.StepFailed{Phase: events.PhaseHistorical, Error: "messages: unavailable"}, st(events.PhaseHistorical, active, 1)},
		{1900 * time.Millisecond, events.RolledBack{Reason: "3 transient failures", Phase: events.PhaseHistorical}, st(events.PhaseRolledBack, active, 1)},
		{2 * time.Second, events.Rescheduled{Attempt: 2, Token: secret, At: at(2500 * time.Millisecond)}, st(events.PhaseRequested, active, 2)},
		{3 * time.Second, events.Renewed{Expiry: at(2 * time.Minute)}, st(events.PhaseHistorical, active, 2)},
		{3100 * time.Millisecond, events.WriteLocked{Expiry: at(3*time.Second + 10*time.Second)}, st(events.PhaseDelta, active, 2)},
		{3110 * time.Millisecond, delta, st(events.PhaseDelta, active, 2)},
		{3120 * time.Millisecond, events.DeltasCopied{Pages: []events.DeltaCopied{delta, {Service: "reactions", Cursor: 12, Next: 12, More: true}}}, st(events.PhaseDelta, active, 2)},
		{3130 * time.Millisecond, val, st(events.PhaseValidated, active, 2)},
		{3131 * time.Millisecond, events.Validated{OK: false, Detail: "messages slice 3: digest differs"}, st(events.PhaseDelta, active, 2)},
		{3140 * time.Millisecond, events.Swapped{Deltas: []events.DeltaCopied{delta, delta}, Validation: &val, CleanupAt: at(10 * time.Minute)}, st(events.PhaseSwapped, active, 2)},
		{3150 * time.Millisecond, events.Swapped{}, nil},
		{3160 * time.Millisecond, events.CleanupScheduled{At: at(10 * time.Minute)}, st(events.PhaseCleanupScheduled, active, 2)},
		{3900 * time.Millisecond, events.Completed{Figures: *figures}, st(events.PhaseDone, events.StatusCompleted, 2)},
		{10 * time.Minute, events.CleanedUp{Records: 1234}, st(events.PhaseDone, events.StatusCompleted, 2)},
		{11 * time.Minute, events.Dropped{Reason: "resource conv/lunch has no routing document"}, st(events.PhaseDone, events.StatusDropped, 1)},
		{12 * time.Minute, events.Failed{Reason: "3 attempts rolled back"}, st(events.PhaseDone, events.StatusFailed, 3)},
		{13 * time.Minute, events.CancelRequested{Reason: "operator: wrong target"}, st(events.PhaseHistorical, active, 1)},
		{14 * time.Minute, events.ChildStarted{Resource: "conv/a", MigrationID: "m-a"}, nil},
		{15 * time.Minute, events.TenantStarted{Tenant: "acme", Target: "eu-west", Resources: []string{"conv/a", "conv/b"}, Concurrency: 2}, nil},
		{16 * time.Minute, events.TenantProgress{Started: "conv/b", StartedID: "m-b"}, nil},
		{17 * time.Minute, events.TenantProgress{Finished: "conv/a", Outcome: events.StatusCompleted, Started: "conv/c", StartedID: "m-c"}, nil},
		{18 * time.Minute, events.ForceReleased{Resource: "conv/lunch", Approvers: []string{"alice", "bob"}, Reason: "orchestrator lost"}, nil},
		{19 * time.Minute, events.ForceReleased{Resource: "conv/lunch", Approvers: []string{"alice", "bob"}, ApprovalIDs: []string{"ap-1", "ap-2"}, Reason: "stuck"}, nil},
		{20 * time.Minute, events.FenceForceCleared{Resource: "conv/lunch", Region: "us-east", Services: []string{"messages", "reactions"}, Previous: "fenced@41", Repaired: "primary@57",
			Approvers: []string{"alice", "bob"}, ApprovalIDs: []string{"ap-3", "ap-4"}, Reason: "bucket recreated", Failed: "reactions: timeout", Note: "readstate had nothing to repair"}, nil},
		{21 * time.Minute, events.AdminRefused{Command: "fence-clear", Resource: "conv/lunch", Region: "us-east", Approvers: []string{"alice"}, Reason: "r", Code: events.RefusedApprovals, Refusal: "one approver"}, nil},
		{22 * time.Minute, events.Paused{Reason: "peak hours"}, st(events.PhaseHistorical, active, 1)},
		{23 * time.Minute, events.Paused{Reason: "tenant move paused", ByParent: true}, st(events.PhaseDelta, active, 1)},
		{24 * time.Minute, events.Resumed{}, st(events.PhaseHistorical, active, 1)},
		{25 * time.Minute, events.Throttled{Rate: 500}, nil},
		{26 * time.Minute, events.Throttled{Concurrency: 4, Rate: 1000, Auto: true, Reason: "write-lock p99 1.2s over 500ms across the last 5 children"}, nil},
	}
	out := make([]*events.Envelope, len(bodies))
	for i, b := range bodies {
		out[i] = &events.Envelope{ID: fmt.Sprintf("e%02d", i), Type: b.body.Type(), MigrationID: "m-tl", Time: at(b.d), State: b.state, Body: b.body}
		if b.state == nil {
			out[i].Resource = "conv/lunch"
		}
	}
	return out
}

func TestTimelineViews(t *testing.T) {
	tl := timeline()
	var text bytes.Buffer
	fmt.Fprintf(&text, "  %-12s  %9s  %-18s  %-18s  %s\n", "TIME", "ELAPSED", "EVENT", "PHASE", "DETAILS")
	for _, e := range tl {
		fmt.Fprintln(&text, "  "+eventLine(e, tl[0].Time))
		if notable(e.Type) {
			fmt.Fprintf(&text, "    (notable)\n")
		}
	}
	golden(t, "timeline.golden", text.Bytes())
	var b bytes.Buffer
	for i, e := range tl {
		if err := writeJSONLine(&b, toEventJSON(uint64(i+1), e)); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "timeline.jsonl.golden", b.Bytes())
	// Every event type of the log has a description, save the one
	// without a body (converged) and a swap with nothing to say.
	for _, e := range tl {
		if describe(e) == "" && e.Type != events.TypeConverged && e.Type != events.TypeSwapped {
			t.Errorf("%s has no description", e.Type)
		}
	}
	rbs := rollbacksOf(tl)
	if len(rbs) != 1 || rbs[0].Attempt != 1 {
		t.Errorf("rollbacks of the timeline: %+v", rbs)
	}
}

// docs are routing documents in each state printRouting shows.
func docs() []*kvrouting.Document {
	return []*kvrouting.Document{
		{SchemaVersion: 1, Resource: "conv/lunch", Primary: kvrouting.Location{Region: "us-east"}, LastMigrationID: "m-old", UpdatedAt: t0, Revision: 7},
		{SchemaVersion: 1, Resource: "conv/lunch", Revision: 9, UpdatedAt: t0,
			Primary:     kvrouting.Location{Region: "us-east", Lock: kvrouting.Lock{Type: kvrouting.LockWrite, Token: secret, NotBefore: past, Expiry: far}},
			Secondary:   &kvrouting.Location{Region: "eu-west", Lock: kvrouting.Lock{Type: kvrouting.LockSecondary, Token: secret, Expiry: far}},
			MigrationID: "m-1", Target: "eu-west", PreLockExpiry: far, MaxExpiry: far, LastSwap: &kvrouting.SwapRecord{MigrationID: "m-0", Token: secret}},
		{SchemaVersion: 1, Resource: "conv/pre", Revision: 3, UpdatedAt: t0, MigrationID: "m-2", Target: "eu-west", PreLockExpiry: far,
			Primary: kvrouting.Location{Region: "us-east", Lock: kvrouting.Lock{Type: kvrouting.LockPre, Token: secret, NotBefore: far, Expiry: far}}},
		{SchemaVersion: 1, Resource: "conv/stuck", Revision: 11, UpdatedAt: t0, ForceReleasedAt: t0,
			Primary: kvrouting.Location{Region: "eu-west", Lock: kvrouting.Lock{Type: kvrouting.LockHardDelete, Token: "short", Expiry: past}}},
		{SchemaVersion: 1, Resource: "conv/a.b c", Revision: 1, UpdatedAt: t0, Primary: kvrouting.Location{Region: "us-east"}},
	}
}

func TestRoutingViews(t *testing.T) {
	var text, js bytes.Buffer
	for _, d := range docs() {
		fmt.Fprintf(&text, "== %s r%d\n", d.Resource, d.Revision)
		printRouting(&text, d)
		fmt.Fprintf(&text, "held: %q\n", heldLocks(d))
		if err := writeJSON(&js, toRoutingJSON(d)); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "routing.golden", text.Bytes())
	golden(t, "routing.json.golden", js.Bytes())
}

// changes are lock changes as a watch sees them; text shows local
// times, so the fixtures are in the local zone for the text and in UTC
// for the JSON.
func changes(loc *time.Location) []kvrouting.LockChange {
	res := func(s string) kvrouting.Resource {
		r, err := kvrouting.ParseResource(s)
		if err != nil {
			panic(err)
		}
		return r
	}
	tt := func(d time.Duration) time.Time {
		u := at(d)
		return time.Date(u.Year(), u.Month(), u.Day(), u.Hour(), u.Minute(), u.Second(), u.Nanosecond(), loc)
	}
	return []kvrouting.LockChange{
		{Resource: res("conv/lunch"), Revision: 1, Kind: kvrouting.Registered, Time: tt(0), Primary: kvrouting.LockState{Region: "us-east"}},
		{Resource: res("conv/lunch"), Revision: 2, Kind: kvrouting.PreLocked, Time: tt(time.Second),
			Primary: kvrouting.LockState{Region: "us-east", Lock: kvrouting.LockPre, NotBefore: tt(time.Second), Expiry: tt(time.Minute)}, MigrationID: "m-1", Target: "eu-west"},
		{Resource: res("conv/lunch"), Revision: 5, Kind: kvrouting.Escalated, Time: tt(3 * time.Second),
			Primary: kvrouting.LockState{Region: "us-east", Lock: kvrouting.LockWrite, Expiry: tt(13 * time.Second)}, MigrationID: "m-1", Target: "eu-west"},
		{Resource: res("conv/lunch"), Revision: 6, Kind: kvrouting.Swapped, Time: tt(4 * time.Second),
			Primary:   kvrouting.LockState{Region: "eu-west"},
			Secondary: kvrouting.LockState{Region: "us-east", Lock: kvrouting.LockSecondary, Expiry: tt(10 * time.Minute)}},
		{Resource: res("conv/lunch"), Revision: 7, Kind: kvrouting.Released, Time: tt(5 * time.Second),
			Primary: kvrouting.LockState{Region: "eu-west"}, Secondary: kvrouting.LockState{Region: "us-east"}},
		{Resource: res("conv/lunch"), Revision: 8, Kind: kvrouting.Deleted, Time: tt(6 * time.Second)},
	}
}

func TestWatchViews(t *testing.T) {
	var text, js bytes.Buffer
	for _, c := range changes(time.Local) {
		fmt.Fprintln(&text, changeLine(c))
	}
	for _, c := range changes(time.UTC) {
		if err := writeJSONLine(&js, toChangeJSON(c)); err != nil {
			t.Fatal(err)
		}
	}
	golden(t, "watch.golden", text.Bytes())
	golden(t, "watch.jsonl.golden", js.Bytes())
}

// tenantEvents are a fan-out of three resources, one failing, as its
// events' states show it.
func tenantEvents() []*events.Envelope {
	res := []string{"conv/a", "conv/b", "conv/c"}
	f := func(next, completed, failed int, active ...events.TenantChild) *events.State {
		return &events.State{ID: "t-acme", Tenant: "acme", Target: "eu-west", Phase: events.PhaseTenant, Status: events.StatusActive,
			Fanout: &events.TenantState{Tenant: "acme", Target: "eu-west", Resources: res, Concurrency: 2, Next: next, Active: active, Completed: completed, Failed: failed}}
	}
	a, b, c := events.TenantChild{Resource: "conv/a", MigrationID: "m-a"}, events.TenantChild{Resource: "conv/b", MigrationID: "m-b"}, events.TenantChild{Resource: "conv/c", MigrationID: "m-c"}
	evs := []*events.Envelope{
		{Time: at(0), Body: events.TenantStarted{Tenant: "acme", Target: "eu-west", Resources: res, Concurrency: 2}, State: f(0, 0, 0)},
		{Time: at(10 * time.Millisecond), Body: events.TenantProgress{Started: "conv/a", StartedID: "m-a"}, State: f(1, 0, 0, a)},
		{Time: at(20 * time.Millisecond), Body: events.TenantProgress{Started: "conv/b", StartedID: "m-b"}, State: f(2, 0, 0, a, b)},
		{Time: at(4 * time.Second), Body: events.TenantProgress{Finished: "conv/a", Outcome: events.StatusCompleted, Started: "conv/c", StartedID: "m-c"}, State: f(3, 1, 0, b, c)},
		{Time: at(6 * time.Second), Body: events.TenantProgress{Finished: "conv/b", Outcome: events.StatusFailed}, State: f(3, 1, 1, c)},
		{Time: at(9 * time.Second), Body: events.TenantProgress{Finished: "conv/c", Outcome: events.StatusCompleted}, State: f(3, 2, 1)},
	}
	for _, e := range evs {
		e.Type, e.MigrationID = e.Body.Type(), "t-acme"
	}
	evs[len(evs)-1].State.Status = events.StatusCompleted
	return evs
}

// TestTenantProgressViews: the progress of `migrate tenant` as lines (not
// a terminal), as JSON lines, and as the redrawn bar of a terminal.
func TestTenantProgressViews(t *testing.T) {
	for _, mode := range []struct {
		name      string
		tty, json bool
	}{{"tenant_lines.golden", false, false}, {"tenant.jsonl.golden", false, true}, {"tenant_tty.golden", true, false}} {
		var b bytes.Buffer
		p := &progress{out: &b, total: 3, tty: mode.tty, json: mode.json, ids: map[string]string{}}
		for _, e := range tenantEvents() {
			// The bar's ETA reads the clock: a terminal is shown only
			// the events after which it has none (nothing or
			// everything finished).
			if f := e.State.Fanout; mode.tty && f.Finished() != 0 && f.Finished() != 3 {
				if b, ok := e.Body.(events.TenantProgress); ok && b.Started != "" {
					p.ids[b.Started] = b.StartedID
				}
				continue
			}
			p.update(e)
		}
		p.finish()
		fmt.Fprintf(&b, "failed: %q\n", p.failedList())
		golden(t, mode.name, b.Bytes())
	}
}

func TestPlanViews(t *testing.T) {
	ok := Plan{Resource: "conv/lunch", Source: "us-east", Target: "eu-west", OK: true,
		Checks: []PlanCheck{
			{Name: "resource exists", OK: true, Detail: "primary us-east (routing revision 7)"},
			{Name: "not at the target", OK: true, Detail: "primary us-east, target eu-west"},
			{Name: "not locked", OK: true, Detail: "no migration holds it"},
			{Name: "target region healthy", OK: true, Detail: "4 contract services answer in eu-west"},
			{Name: "services answer the contract, with fences", OK: true, Detail: "2 of 2 services at us-east (contract v1: authority, export, import, digests)"},
		},
		Services: []PlanService{{Service: "messages", Records: 1200, Pages: 3}, {Service: "reactions", Records: 34, Pages: 1}}, Records: 1234, Pages: 4,
		Estimate: &PlanEstimate{Basis: 5, WriteLockP50Ms: 41, WriteLockMaxMs: 97, DurationP50Ms: 3900, DurationNote: "from completed migrations of similar size"}}
	bad := Plan{Resource: "conv/lunch", Source: "us-east", Target: "us-east", Checks: []PlanCheck{
		{Name: "resource exists", OK: true, Detail: "primary us-east (routing revision 7)"},
		{Name: "not at the target", OK: false, Detail: "primary us-east, target us-east"},
		{Name: "not locked", OK: false, Detail: "write lock until 2199-01-02T03:04:05Z (migration m-1)"},
	}}
	var text, js bytes.Buffer
	for _, p := range []Plan{ok, bad} {
		err := p.print(&text, false)
		fmt.Fprintf(&text, "error: %v\n", err)
		if (err == nil) != p.OK {
			t.Errorf("plan ok %v: error %v", p.OK, err)
		}
		_ = p.print(&js, true)
	}
	golden(t, "plan.golden", text.Bytes())
	golden(t, "plan.json.golden", js.Bytes())
	var back []Plan
	dec := json.NewDecoder(&js)
	for dec.More() {
		var p Plan
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		back = append(back, p)
	}
	if len(back) != 2 || back[0].Estimate == nil || back[1].Estimate != nil || !strings.Contains(text.String(), "no estimate") {
		t.Errorf("plans read back: %+v", back)
	}
}

package ops

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/cutover/cutover/events"
)

// SteerRequest is `cutover migrate pause`, `resume` and `throttle`: steer
// a running migration or tenant move. The change is an event in the
// migration's own log (Paused, Resumed, Throttled): it survives worker
// crashes and restarts, and any worker honours it.
type SteerRequest struct {
	// NATS is the deployment's URL (several comma separated).
	NATS string
	// ID is the migration or tenant move.
	ID string
	// Action is "pause", "resume" or "throttle".
	Action string
	// Reason says why (pause); it is recorded in the migration's events.
	Reason string
	// Concurrency is a tenant move's new concurrency (throttle; 0:
	// unchanged).
	Concurrency int
	// Rate is the new copy rate (throttle): records a second, "off" for no
	// cap, "" unchanged.
	Rate string
	// Timeout bounds the wait for the orchestrator to record the change.
	Timeout time.Duration
}

// ParseRate parses a --rate value: records a second (> 0), or "off" (also
// "0", "none") for no cap; "" leaves it unchanged (0). The result is
// events.Throttle.Rate.
func ParseRate(s string) (int, error) {
	switch strings.TrimSpace(s) {
	case "":
		return 0, nil
	case "off", "none", "0":
		return events.NoRate, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: --rate %q: want records a second (a positive number) or off", ErrUsage, s)
	}
	return n, nil
}

// Steer sends r's command and waits until the orchestrator has recorded
// it, then says what it did. The pre-flight refuses, with ErrPreflight and
// nothing sent: a migration that does not exist or has ended, a pause of a
// paused migration, a resume of one not paused, a tenant move's
// concurrency asked of a single migration. ErrUsage: a malformed id, an
// unknown action, a throttle that changes nothing. Any goroutine may call
// it.
func Steer(ctx context.Context, r SteerRequest, stdout io.Writer) error {
	if err := parseMigrationID(r.ID); err != nil {
		return err
	}
	var cmd events.Body
	var done func(*events.State) bool
	switch r.Action {
	case "pause":
		cmd, done = events.Pause{MigrationID: r.ID, Reason: r.Reason}, func(st *events.State) bool { return st.Paused }
	case "resume":
		cmd, done = events.Resume{MigrationID: r.ID}, func(st *events.State) bool { return !st.Paused }
	case "throttle":
		rate, err := ParseRate(r.Rate)
		if err != nil {
			return err
		}
		if r.Concurrency < 0 {
			return fmt.Errorf("%w: --concurrency must be >= 1", ErrUsage)
		}
		if r.Concurrency == 0 && rate == 0 {
			return fmt.Errorf("%w: throttle needs --concurrency N or --rate R (records a second, or off)", ErrUsage)
		}
		t := events.Throttle{MigrationID: r.ID, Concurrency: r.Concurrency, Rate: rate}
		cmd, done = t, func(st *events.State) bool { return throttled(st, t) }
	default:
		return fmt.Errorf("%w: unknown steering action %q", ErrUsage, r.Action)
	}
	o, err := dial(ctx, r.NATS)
	if err != nil {
		return err
	}
	defer o.Close()
	st, _, err := awaitMigration(ctx, o, r.ID, 5*time.Second)
	if err != nil {
		return fmt.Errorf("%w: %w (nothing sent)", ErrPreflight, err)
	}
	if why := steerRefusal(st, r, cmd); why != "" {
		return fmt.Errorf("%w: migration %s: %s (nothing sent)", ErrPreflight, r.ID, why)
	}
	if err := o.orch.Send(ctx, cmd); err != nil {
		return fmt.Errorf("%s: %w", r.Action, err)
	}
	wctx, cancel := withTimeout(ctx, r.Timeout)
	defer cancel()
	for {
		cur, _, err := o.orch.State(wctx, r.ID)
		if err == nil && (done(cur) || cur.Status.Terminal()) {
			fmt.Fprintln(stdout, steerLine(cur, r.Action))
			return nil
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("%s of %s sent but not recorded within %s: is an orchestrator running? (it is applied when one runs)", r.Action, r.ID, r.Timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// steerRefusal says why the pre-flight refuses r on st ("" when it does
// not).
func steerRefusal(st *events.State, r SteerRequest, cmd events.Body) string {
	if st.Status.Terminal() {
		return fmt.Sprintf("already ended (%s)", st.Status)
	}
	switch c := cmd.(type) {
	case events.Pause:
		if st.Paused {
			return fmt.Sprintf("already paused since %s", st.PausedAt.Format(time.RFC3339))
		}
	case events.Resume:
		if !st.Paused {
			return "not paused"
		}
	case events.Throttle:
		if c.Concurrency > 0 && st.Fanout == nil {
			return "--concurrency applies to a tenant move; a single migration takes --rate"
		}
	}
	return ""
}

// throttled reports whether st carries t's settings.
func throttled(st *events.State, t events.Throttle) bool {
	rate, conc := st.Rate, 0
	if f := st.Fanout; f != nil {
		rate, conc = f.Rate, f.Concurrency
	}
	if t.Concurrency > 0 && conc != t.Concurrency {
		return false
	}
	switch {
	case t.Rate > 0:
		return rate == t.Rate
	case t.Rate == events.NoRate:
		return rate == 0
	}
	return true
}

// steerLine says what a steering command did.
func steerLine(st *events.State, action string) string {
	if st.Status.Terminal() {
		return fmt.Sprintf("migration %s ended (%s) before the %s took effect", st.ID, st.Status, action)
	}
	switch action {
	case "pause":
		if st.Fanout != nil {
			return fmt.Sprintf("tenant move %s paused: no child starts; children in flight finish their phase and wait (%d running)", st.ID, len(st.Fanout.Active))
		}
		if st.Phase == events.PhaseDelta || st.Phase == events.PhaseValidated {
			return fmt.Sprintf("migration %s pause recorded in %s: it takes effect after the swap or the rollback (the write lock is never held for a pause)", st.ID, st.Phase)
		}
		return fmt.Sprintf("migration %s paused in %s", st.ID, st.Phase)
	case "resume":
		return fmt.Sprintf("migration %s resumed in %s", st.ID, st.Phase)
	}
	return fmt.Sprintf("migration %s throttled: %s", st.ID, throttleText(st))
}

// throttleText is a migration's or tenant move's throttle settings.
func throttleText(st *events.State) string {
	rate := st.Rate
	var b strings.Builder
	if f := st.Fanout; f != nil {
		rate = f.Rate
		fmt.Fprintf(&b, "concurrency %d, ", f.Concurrency)
	}
	if rate > 0 {
		fmt.Fprintf(&b, "rate %d records/s", rate)
	} else {
		b.WriteString("no rate cap")
	}
	return b.String()
}

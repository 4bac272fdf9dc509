package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cutover/cutover/kvrouting"
)

// WatchRequest is `cutover watch`: live lock changes, one line each.
type WatchRequest struct {
	// NATS is the deployment's URL (several comma separated).
	NATS string
	// Resource ("kind/id") or Kind limits the watch; neither: everything.
	Resource, Kind string
	// JSON prints one JSON object a line instead of text.
	JSON bool
	// Count stops after this many changes (0: until ctx ends).
	Count int
	// History starts with the revisions the routing history keeps.
	History bool
	// Ready, if set, is called once the watch is subscribed.
	Ready func()
}

// changeJSON is a lock change as `cutover watch --json` prints it.
type changeJSON struct {
	Time        string         `json:"time"`
	Resource    string         `json:"resource"`
	Revision    uint64         `json:"revision"`
	Kind        string         `json:"kind"`
	Primary     lockStateJSON  `json:"primary"`
	Secondary   *lockStateJSON `json:"secondary,omitempty"`
	MigrationID string         `json:"migration_id,omitempty"`
	Target      string         `json:"target,omitempty"`
}

type lockStateJSON struct {
	Region string `json:"region"`
	Lock   string `json:"lock"`
	Expiry string `json:"expiry,omitempty"`
}

// Watch prints r's lock changes as they happen until ctx ends (or Count).
// Errors: ErrUsage (both Resource and Kind, a malformed one), before
// connecting; any other when the deployment cannot be reached.
func Watch(ctx context.Context, r WatchRequest, stdout io.Writer) error {
	filter := r.Kind
	switch {
	case r.Resource != "" && r.Kind != "":
		return fmt.Errorf("%w: give a resource or --kind, not both", ErrUsage)
	case r.Resource != "":
		res, err := parseResource(r.Resource)
		if err != nil {
			return err
		}
		filter = res.String()
	case r.Kind != "":
		if strings.ContainsAny(r.Kind, "/.*> ") {
			return fmt.Errorf("%w: --kind %q", ErrUsage, r.Kind)
		}
	}
	if r.Count < 0 {
		return fmt.Errorf("%w: --count must be >= 0", ErrUsage)
	}
	o, st, err := dialRouting(ctx, r.NATS)
	if err != nil {
		return err
	}
	defer o.Close()
	var opts []kvrouting.WatchOption
	if r.History {
		opts = append(opts, kvrouting.WithHistory())
	}
	w, err := st.Watch(ctx, filter, opts...)
	if err != nil {
		if errors.Is(err, kvrouting.ErrInvalid) {
			return usageOf(err)
		}
		return err
	}
	defer w.Close()
	if r.Ready != nil {
		r.Ready()
	}
	for n := 0; r.Count == 0 || n < r.Count; n++ {
		c, err := w.Next(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C
			}
			return err
		}
		if r.JSON {
			if err := writeJSONLine(stdout, toChangeJSON(c)); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintln(stdout, changeLine(c))
	}
	return nil
}

func toChangeJSON(c kvrouting.LockChange) changeJSON {
	st := func(s kvrouting.LockState) lockStateJSON {
		return lockStateJSON{Region: s.Region, Lock: s.Lock.String(), Expiry: rfc(s.Expiry)}
	}
	j := changeJSON{Time: rfc(c.Time), Resource: c.Resource.String(), Revision: c.Revision, Kind: c.Kind.String(),
		Primary: st(c.Primary), MigrationID: c.MigrationID, Target: c.Target}
	if c.Secondary.Region != "" {
		s := st(c.Secondary)
		j.Secondary = &s
	}
	return j
}

// changeLine is one human-readable line:
// 03:22:01.123  conv/lunch  r42  escalated       us-east write (until 03:22:11) → eu-west  m1f…
func changeLine(c kvrouting.LockChange) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %-24s r%-6d %-14s %s", c.Time.Local().Format("15:04:05.000"), c.Resource, c.Revision, c.Kind, c.Primary.Region)
	if c.Kind == kvrouting.Deleted {
		return strings.TrimRight(b.String(), " ")
	}
	if c.Primary.Lock != kvrouting.LockNone {
		fmt.Fprintf(&b, " %s lock", c.Primary.Lock)
		if !c.Primary.Expiry.IsZero() {
			fmt.Fprintf(&b, " until %s", c.Primary.Expiry.Local().Format("15:04:05"))
		}
	}
	if c.Target != "" {
		fmt.Fprintf(&b, " → %s", c.Target)
	} else if c.Secondary.Region != "" && c.Secondary.Lock != kvrouting.LockNone {
		fmt.Fprintf(&b, " (%s %s until %s)", c.Secondary.Region, c.Secondary.Lock, c.Secondary.Expiry.Local().Format(time.DateTime))
	}
	if c.MigrationID != "" {
		fmt.Fprintf(&b, "  migration %s", c.MigrationID)
	}
	return b.String()
}

package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/orchestrator"
)

// HistoryRequest is `cutover history`: replay event timelines.
type HistoryRequest struct {
	// NATS is the deployment's URL (several comma separated).
	NATS string
	// Of is a migration id, or a resource ("kind/id", told apart by its
	// slash) for every migration of that resource and its audited
	// force-releases.
	Of string
	// JSON prints JSON.
	JSON bool
}

// History prints the event timeline of one migration, or of every
// migration of a resource, oldest first. It returns an error wrapping
// ErrUsage for a malformed resource or id, before connecting; any other
// error when the deployment cannot be reached or there is no such
// migration. Any goroutine may call it.
func History(ctx context.Context, r HistoryRequest, stdout io.Writer) error {
	var ids []string
	var res kvrouting.Resource
	var err error
	byResource := strings.Contains(r.Of, "/")
	if byResource {
		if res, err = parseResource(r.Of); err != nil {
			return err
		}
	} else if err := parseMigrationID(r.Of); err != nil {
		return err
	}
	o, err := dial(ctx, r.NATS)
	if err != nil {
		return err
	}
	defer o.Close()
	if byResource {
		// The resource index (a subject filter); a deployment older than
		// it is scanned instead.
		ids, err = o.orch.MigrationsOf(ctx, res.String())
		if errors.Is(err, orchestrator.ErrNotFound) {
			lasts, lerr := lastEvents(ctx, o.js)
			if lerr != nil {
				return lerr
			}
			for _, l := range lasts {
				if ofResource(l.Event, res.String()) {
					ids = append(ids, l.Event.MigrationID)
				}
			}
		} else if err != nil {
			return err
		}
		if len(ids) == 0 {
			return fmt.Errorf("no migrations of %s", res)
		}
	} else {
		ids = []string{r.Of}
	}
	type timeline struct {
		id  string
		evs []*events.Envelope
	}
	var tls []timeline
	for _, id := range ids {
		evs, err := o.orch.History(ctx, id)
		if err != nil {
			return noStream(err)
		}
		if len(evs) == 0 {
			if byResource {
				continue // an index entry whose migration was never created
			}
			return fmt.Errorf("migration %s not found", id)
		}
		tls = append(tls, timeline{id, evs})
	}
	if len(tls) == 0 {
		return fmt.Errorf("no migrations of %s", r.Of)
	}
	sort.Slice(tls, func(i, j int) bool { return tls[i].evs[0].Time.Before(tls[j].evs[0].Time) })
	if r.JSON {
		type migJSON struct {
			MigrationID string      `json:"migration_id"`
			State       StateJSON   `json:"state"`
			Events      []eventJSON `json:"events"`
		}
		out := make([]migJSON, 0, len(tls))
		for _, tl := range tls {
			m := migJSON{MigrationID: tl.id, State: toStateJSON(tl.evs[len(tl.evs)-1].State, 0)}
			for _, e := range tl.evs {
				m.Events = append(m.Events, toEventJSON(0, e))
			}
			out = append(out, m)
		}
		return writeJSON(stdout, out)
	}
	for i, tl := range tls {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		last := tl.evs[len(tl.evs)-1].State
		if last == nil {
			last = &events.State{ID: tl.id}
		}
		head := fmt.Sprintf("migration %s  %s  %s  %s", tl.id, last.Resource, route(last), last.Status)
		if last.Fanout != nil {
			head = fmt.Sprintf("tenant migration %s  %s → %s  %s", tl.id, last.Fanout.Tenant, last.Target, last.Status)
		}
		if b, ok := tl.evs[0].Body.(events.ForceReleased); ok && last.Resource == "" {
			head = fmt.Sprintf("force-release audit %s  %s", tl.id, b.Resource)
		}
		if b, ok := tl.evs[0].Body.(events.FenceForceCleared); ok && last.Resource == "" {
			head = fmt.Sprintf("fence-clear audit %s  %s at %s", tl.id, b.Resource, b.Region)
		}
		if b, ok := tl.evs[0].Body.(events.AdminRefused); ok && last.Resource == "" {
			head = fmt.Sprintf("%s refused %s  %s", b.Command, tl.id, b.Resource)
		}
		fmt.Fprintln(stdout, head)
		fmt.Fprintf(stdout, "  %-12s  %9s  %-18s  %-18s  %s\n", "TIME", "ELAPSED", "EVENT", "PHASE", "DETAILS")
		for _, e := range tl.evs {
			fmt.Fprintln(stdout, "  "+eventLine(e, tl.evs[0].Time))
		}
	}
	return nil
}

// ofResource reports whether a migration's last event belongs to res: its
// state's resource, or an audited force-release or fence clear of res, or
// a refused one.
func ofResource(e *events.Envelope, res string) bool {
	if e.MigrationID == "" {
		return false
	}
	if e.State != nil && e.State.Resource == res {
		return true
	}
	if b, ok := e.Body.(events.ForceReleased); ok && b.Resource == res {
		return true
	}
	if b, ok := e.Body.(events.FenceForceCleared); ok && b.Resource == res {
		return true
	}
	if b, ok := e.Body.(events.AdminRefused); ok && b.Resource == res {
		return true
	}
	return false
}

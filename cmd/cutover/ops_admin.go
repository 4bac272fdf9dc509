package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/nats-io/nats.go/jetstream"
)

// Operator commands that inspect and repair: the event history, the
// routing document, the admin force-release.

func init() {
	register("history", "replay the event timeline of a migration or of every migration of a resource", oneLine(runHistory))
	register("routing", "read a resource's routing document from the stream leader (get)", oneLine(runRouting))
	register("lock", "admin lock operations (force-release, with two distinct approvers; audited)", oneLine(runLock))
}

func runHistory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("history", "history RESOURCE|ID [--json] [--nats URL]\n\nRESOURCE (kind/id) shows every migration of the resource, oldest first, including audited force-releases", stdout)
	url := natsFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "RESOURCE or migration ID"); err != nil {
		return err
	}
	var ids []string
	var res kvrouting.Resource
	byResource := strings.Contains(pos[0], "/")
	if byResource {
		if res, err = parseResource(pos[0]); err != nil {
			return err
		}
	} else if err := parseMigrationID(pos[0]); err != nil {
		return err
	}
	o, err := dialOps(ctx, *url)
	if err != nil {
		return err
	}
	defer o.Close()
	if byResource {
		lasts, err := lastEvents(ctx, o.js)
		if err != nil {
			return err
		}
		for _, l := range lasts {
			if ofResource(l.env, res.String()) {
				ids = append(ids, l.env.MigrationID)
			}
		}
		if len(ids) == 0 {
			return fmt.Errorf("no migrations of %s", res)
		}
	} else {
		ids = []string{pos[0]}
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
			return fmt.Errorf("migration %s not found", id)
		}
		tls = append(tls, timeline{id, evs})
	}
	sort.Slice(tls, func(i, j int) bool { return tls[i].evs[0].Time.Before(tls[j].evs[0].Time) })
	if *asJSON {
		type migJSON struct {
			MigrationID string      `json:"migration_id"`
			State       stateJSON   `json:"state"`
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
		fmt.Fprintln(stdout, head)
		fmt.Fprintf(stdout, "  %-12s  %9s  %-18s  %-18s  %s\n", "TIME", "ELAPSED", "EVENT", "PHASE", "DETAILS")
		for _, e := range tl.evs {
			fmt.Fprintln(stdout, "  "+eventLine(e, tl.evs[0].Time))
		}
	}
	return nil
}

// ofResource reports whether a migration's last event belongs to res: its
// state's resource, or an audited force-release of res.
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
	return false
}

func runRouting(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "routing", []subcommand{
		{"get", "get RESOURCE [--json]   the routing document, read from the stream leader, token redacted", routingGet},
	}, args, stdout, stderr)
}

// routingStore binds to the deployment's routing bucket.
func (o *ops) routingStore(ctx context.Context) (*kvrouting.Store, error) {
	return kvrouting.NewStore(ctx, o.nc, o.js, "")
}

// leaderDoc reads res's routing document from the leader.
func (o *ops) leaderDoc(ctx context.Context, res kvrouting.Resource) (*kvrouting.Document, error) {
	st, err := o.routingStore(ctx)
	if err != nil {
		return nil, err
	}
	d, err := st.GetLeader(ctx, res)
	if errors.Is(err, kvrouting.ErrNotFound) {
		return nil, fmt.Errorf("%s has no routing document", res)
	}
	return d, err
}

func routingGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("routing get", "routing get RESOURCE [--json] [--nats URL]", stdout)
	url := natsFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON (the API's routing document shape)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "RESOURCE (kind/id)"); err != nil {
		return err
	}
	res, err := parseResource(pos[0])
	if err != nil {
		return err
	}
	o, err := dialOps(ctx, *url)
	if err != nil {
		return err
	}
	defer o.Close()
	d, err := o.leaderDoc(ctx, res)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, toRoutingJSON(d))
	}
	printRouting(stdout, d)
	return nil
}

func runLock(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "lock", []subcommand{
		{"force-release", "force-release RESOURCE --approver A --approver B [--reason R]   clear a stuck lock without its token (audited)", lockForceRelease},
	}, args, stdout, stderr)
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// distinctApprovers normalises approvers as kvrouting.ForceRelease counts
// them (trimmed, case-insensitive, non-empty).
func distinctApprovers(as []string) []string {
	var out []string
	for _, a := range as {
		a = strings.ToLower(strings.TrimSpace(a))
		if a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

func lockForceRelease(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("lock force-release", "lock force-release RESOURCE --approver A --approver B [--reason R] [--timeout D] [--json] [--nats URL]\n\nAn admin escape hatch for a stuck lock (paper 000 §8). It goes through the orchestrator so that\nthe release is recorded as a force-released event; the migration holding the lock rolls back.", stdout)
	url := natsFlag(fs)
	var approvers stringList
	fs.Var(&approvers, "approver", "an approver (repeat; at least two distinct ones)")
	reason := fs.String("reason", "", "why (recorded in the audit event)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the orchestrator's audit event")
	asJSON := fs.Bool("json", false, "print the audit event and the routing document after it as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "RESOURCE (kind/id)"); err != nil {
		return err
	}
	res, err := parseResource(pos[0])
	if err != nil {
		return err
	}
	if d := distinctApprovers(approvers); len(d) < 2 {
		return fmt.Errorf("%w: force-release needs at least two distinct approvers (got %d)", errUsage, len(d))
	}
	o, err := dialOps(ctx, *url)
	if err != nil {
		return err
	}
	defer o.Close()
	before, err := o.leaderDoc(ctx, res)
	if err != nil {
		return err
	}
	if before.Primary.Lock.IsZero() && (before.Secondary == nil || before.Secondary.Lock.IsZero()) {
		fmt.Fprintf(stdout, "%s holds no lock; nothing to release\n", res)
		return nil
	}
	// Subscribe before sending, so the audit event cannot slip past.
	subject := events.EventPrefix + ">"
	if before.MigrationID != "" {
		subject = events.EventSubject(before.MigrationID)
	}
	it, err := eventIterator(ctx, o.js, subject, jetstream.DeliverNewPolicy)
	if err != nil {
		return err
	}
	defer it.Stop()
	if err := o.orch.ForceRelease(ctx, res.String(), approvers, *reason); err != nil {
		return fmt.Errorf("force-release: %w", err)
	}
	wctx, cancel := withTimeout(ctx, *timeout)
	defer cancel()
	var audit *events.Envelope
	var auditSeq uint64
	err = it.each(wctx, stderr, func(seq uint64, e *events.Envelope) bool {
		if b, ok := e.Body.(events.ForceReleased); ok && b.Resource == res.String() {
			audit, auditSeq = e, seq
			return true
		}
		return false
	})
	after, derr := o.leaderDoc(ctx, res)
	if err != nil {
		if derr == nil && after.Primary.Lock.IsZero() && errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s was released but no audit event appeared within %s (lock held by migration %q, which the orchestrator could not record it on)", res, *timeout, before.MigrationID)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("no force-release of %s within %s; is an orchestrator running?", res, *timeout)
		}
		return err
	}
	if derr != nil {
		return derr
	}
	if *asJSON {
		return writeJSON(stdout, map[string]any{"audit": toEventJSON(auditSeq, audit), "routing": toRoutingJSON(after)})
	}
	fmt.Fprintf(stdout, "released %s (held: %s); audited as %s on %s\n", res, heldLocks(before), audit.Type, audit.MigrationID)
	printRouting(stdout, after)
	return nil
}

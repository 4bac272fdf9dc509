package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Operator commands: they talk to a running deployment over NATS only
// (DESIGN.md "Users and what they run": start one resource, a whole tenant,
// watch, cancel, replay history, force-release with approvals).

func init() {
	register("migrate", "start, follow, list and cancel migrations (start | tenant | status | cancel)", oneLine(runMigrate))
}

// defaultNATS is where operator commands look for the deployment.
const defaultNATS = "nats://127.0.0.1:4222"

type commandFunc = func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// lineError keeps a failure to the one line Run prints.
type lineError struct{ err error }

func (e lineError) Error() string { return strings.Join(strings.Fields(e.err.Error()), " ") }
func (e lineError) Unwrap() error { return e.err }

// oneLine makes run's failures print as one line.
func oneLine(run commandFunc) commandFunc {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		err := run(ctx, args, stdout, stderr)
		if err == nil || errors.Is(err, errHelp) {
			return err
		}
		return lineError{err}
	}
}

type subcommand struct {
	name, synopsis string
	run            commandFunc
}

// dispatch runs the subcommand named by args[0].
func dispatch(ctx context.Context, group string, subs []subcommand, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(stdout, "Usage: cutover %s <subcommand> [flags]   (cutover %s <subcommand> --help for flags)\n\nSubcommands:\n", group, group)
		for _, s := range subs {
			fmt.Fprintf(stdout, "  %s\n", s.synopsis)
		}
		if len(args) == 0 {
			return fmt.Errorf("%w: missing subcommand", errUsage)
		}
		return errHelp
	}
	names := make([]string, 0, len(subs))
	for _, s := range subs {
		if s.name == args[0] {
			return s.run(ctx, args[1:], stdout, stderr)
		}
		names = append(names, s.name)
	}
	return fmt.Errorf("%w: unknown subcommand %q (have: %s)", errUsage, args[0], strings.Join(names, ", "))
}

// parseArgs parses flags that may come before, between or after the
// positional arguments, and returns the positional ones.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// wantArgs checks the number of positional arguments.
func wantArgs(pos []string, min, max int, what string) error {
	if len(pos) < min {
		return fmt.Errorf("%w: missing %s", errUsage, what)
	}
	if len(pos) > max {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, pos[max])
	}
	return nil
}

func natsFlag(fs *flag.FlagSet) *string {
	return fs.String("nats", defaultNATS, "NATS URL(s) of the deployment, comma separated")
}

// parseResource parses a "kind/id" argument; a bad one is a usage error.
func parseResource(s string) (kvrouting.Resource, error) {
	res, err := kvrouting.ParseResource(s)
	if err != nil {
		return res, fmt.Errorf("%w: %w", errUsage, err)
	}
	return res, nil
}

func parseRegion(flagName, s string) error {
	if s == "" {
		return fmt.Errorf("%w: --%s is required", errUsage, flagName)
	}
	if err := cnats.ValidateRegion(s); err != nil || strings.ToLower(s) != s {
		return fmt.Errorf("%w: --%s %q is not a region name", errUsage, flagName, s)
	}
	return nil
}

func parseMigrationID(s string) error {
	if !events.ValidID(s) {
		return fmt.Errorf("%w: %q is not a migration id", errUsage, s)
	}
	return nil
}

// ops is a connection to a deployment.
type ops struct {
	nc   *nats.Conn
	js   jetstream.JetStream
	orch *orchestrator.Client
}

func dialOps(ctx context.Context, url string) (*ops, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nc, js, err := cnats.Connect(cctx, url, nats.Name("cutover-cli"))
	if err != nil {
		return nil, err
	}
	return &ops{nc: nc, js: js, orch: orchestrator.NewClient(nc, js)}, nil
}

func (o *ops) Close() { o.nc.Close() }

// noStream explains a missing migration stream.
func noStream(err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("no %s stream: has an orchestrator ever run against this deployment? (%w)", events.EventStream, err)
	}
	return err
}

// withTimeout bounds ctx by d unless d is 0.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "migrate", []subcommand{
		{"start", "start RESOURCE --to REGION [--wait]       migrate one resource (kind/id); prints the migration id", migrateStart},
		{"tenant", "tenant TENANT --to REGION --resources r1,r2|--resources-file F [--concurrency N]   migrate a tenant's resources, with progress", migrateTenant},
		{"status", "status [ID]                                one migration's state, or the recent migrations", migrateStatus},
		{"cancel", "cancel ID [--reason R] [--wait]           roll a migration back and stop it (no effect after its swap)", migrateCancel},
	}, args, stdout, stderr)
}

func migrateStart(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("migrate start", "migrate start RESOURCE --to REGION [--wait] [--timeout D] [--json] [--nats URL]", stdout)
	url := natsFlag(fs)
	to := fs.String("to", "", "target region (required)")
	wait := fs.Bool("wait", false, "follow the migration to its end, printing its phase transitions")
	timeout := fs.Duration("timeout", time.Hour, "with --wait: give up following after this long (0 = never; the migration goes on)")
	asJSON := fs.Bool("json", false, "print JSON (with --wait: one event per line)")
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
	if err := parseRegion("to", *to); err != nil {
		return err
	}
	o, err := dialOps(ctx, *url)
	if err != nil {
		return err
	}
	defer o.Close()
	id, err := o.orch.Start(ctx, events.Start{Resource: res.String(), Target: *to})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	if !*wait {
		if *asJSON {
			return writeJSON(stdout, map[string]string{"migration_id": id, "resource": res.String(), "target": *to})
		}
		fmt.Fprintln(stdout, id)
		return nil
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "migration %s: %s → %s\n", id, res, *to)
	}
	st, err := followMigration(ctx, o, id, *timeout, *asJSON, stdout, stderr)
	if err != nil {
		return err
	}
	if st.Status == events.StatusFailed {
		return fmt.Errorf("migration %s failed: %s", id, st.Reason)
	}
	return nil
}

// followMigration prints a migration's phase transitions (and its
// failures) until it ends, and returns its final state.
func followMigration(ctx context.Context, o *ops, id string, timeout time.Duration, asJSON bool, stdout, stderr io.Writer) (*events.State, error) {
	ctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	var last *events.State
	var t0 time.Time
	prev := events.Phase("")
	err := followSubject(ctx, o.js, events.EventSubject(id), jetstream.DeliverAllPolicy, stderr, func(seq uint64, e *events.Envelope) bool {
		if e.State == nil {
			return false
		}
		if t0.IsZero() {
			t0 = e.Time
		}
		st := e.State
		if st.Phase != prev || notable(e.Type) {
			if asJSON {
				_ = writeJSONLine(stdout, toEventJSON(seq, e))
			} else {
				fmt.Fprintln(stdout, "  "+eventLine(e, t0))
			}
		}
		prev, last = st.Phase, st
		return st.Status.Terminal()
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && last != nil {
			return nil, fmt.Errorf("migration %s still %s in phase %s after %s; it goes on (cutover migrate status %s)", id, last.Status, last.Phase, timeout, id)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("no events of migration %s within %s; is an orchestrator running?", id, timeout)
		}
		return nil, noStream(err)
	}
	if !asJSON {
		fmt.Fprintln(stdout, summaryLine(last))
	}
	return last, nil
}

// notable event types are printed even when the phase does not change.
func notable(typ string) bool {
	switch typ {
	case events.TypeStepFailed, events.TypeRolledBack, events.TypeRescheduled, events.TypeValidated,
		events.TypeCancelRequested, events.TypeForceReleased, events.TypeChildStarted, events.TypeCleanedUp:
		return true
	}
	return false
}

// followSubject calls fn with every event on subject (from the first with
// DeliverAllPolicy, from now with DeliverNewPolicy) until fn returns true
// or ctx ends. It tells stderr once when nothing arrives for a while (no
// orchestrator running?).
func followSubject(ctx context.Context, js jetstream.JetStream, subject string, policy jetstream.DeliverPolicy, stderr io.Writer, fn func(seq uint64, e *events.Envelope) bool) error {
	it, err := eventIterator(ctx, js, subject, policy)
	if err != nil {
		return err
	}
	defer it.Stop()
	return it.each(ctx, stderr, fn)
}

type eventIter struct{ it jetstream.MessagesContext }

func eventIterator(ctx context.Context, js jetstream.JetStream, subject string, policy jetstream.DeliverPolicy) (*eventIter, error) {
	c, err := js.OrderedConsumer(ctx, events.EventStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}, DeliverPolicy: policy})
	if err != nil {
		return nil, noStream(err)
	}
	it, err := c.Messages()
	if err != nil {
		return nil, err
	}
	return &eventIter{it: it}, nil
}

func (e *eventIter) Stop() { e.it.Stop() }

func (e *eventIter) each(ctx context.Context, stderr io.Writer, fn func(seq uint64, e *events.Envelope) bool) error {
	stop := context.AfterFunc(ctx, e.it.Stop)
	defer stop()
	quiet := time.AfterFunc(10*time.Second, func() {
		fmt.Fprintln(stderr, "cutover: no events for 10s; is an orchestrator running?")
	})
	defer quiet.Stop()
	for {
		msg, err := e.it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		quiet.Stop()
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		env, err := events.Decode(msg.Data())
		if err != nil {
			continue // another schema version; nothing we can show
		}
		if fn(meta.Sequence.Stream, env) {
			return nil
		}
	}
}

func migrateTenant(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("migrate tenant", "migrate tenant TENANT --to REGION (--resources r1,r2,... | --resources-file F) [--concurrency N] [--timeout D] [--json] [--nats URL]", stdout)
	url := natsFlag(fs)
	to := fs.String("to", "", "target region (required)")
	list := fs.String("resources", "", "the tenant's resources (kind/id), comma separated")
	file := fs.String("resources-file", "", "file with one resource (kind/id) per line; blank lines and # comments are skipped")
	conc := fs.Int("concurrency", 0, "migrations in flight at once (0 = the orchestrator's default)")
	timeout := fs.Duration("timeout", 24*time.Hour, "give up following after this long (0 = never; the migration goes on)")
	asJSON := fs.Bool("json", false, "print progress as JSON lines")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "TENANT"); err != nil {
		return err
	}
	tenant := pos[0]
	if strings.TrimSpace(tenant) == "" {
		return fmt.Errorf("%w: empty tenant", errUsage)
	}
	if err := parseRegion("to", *to); err != nil {
		return err
	}
	if *conc < 0 {
		return fmt.Errorf("%w: --concurrency must be >= 0", errUsage)
	}
	resources, err := tenantResources(*list, *file)
	if err != nil {
		return err
	}
	o, err := dialOps(ctx, *url)
	if err != nil {
		return err
	}
	defer o.Close()
	id, err := o.orch.StartTenant(ctx, events.StartTenant{Tenant: tenant, Target: *to, Resources: resources, Concurrency: *conc})
	if err != nil {
		return fmt.Errorf("start tenant: %w", err)
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "tenant migration %s: %s, %d resources → %s\n", id, tenant, len(resources), *to)
	}
	p := &progress{out: stdout, total: len(resources), tty: isTerminal(stdout), json: *asJSON, ids: map[string]string{}}
	fctx, cancel := withTimeout(ctx, *timeout)
	defer cancel()
	var last *events.State
	err = followSubject(fctx, o.js, events.EventSubject(id), jetstream.DeliverAllPolicy, stderr, func(_ uint64, e *events.Envelope) bool {
		if e.State == nil || e.State.Fanout == nil {
			return false
		}
		last = e.State
		p.update(e)
		return e.State.Status.Terminal()
	})
	p.finish()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && last != nil {
			return fmt.Errorf("tenant migration %s still running after %s (%d of %d finished); it goes on", id, *timeout, last.Fanout.Finished(), len(resources))
		}
		return noStream(err)
	}
	f := last.Fanout
	took := last.EndedAt.Sub(last.RequestedAt).Round(time.Millisecond)
	if *asJSON {
		_ = writeJSONLine(stdout, map[string]any{"tenant_migration_id": id, "tenant": tenant, "target": *to, "status": last.Status,
			"total": len(resources), "completed": f.Completed, "failed": f.Failed, "dropped": f.Dropped, "took": took.String()})
	} else {
		fmt.Fprintf(stdout, "tenant %s → %s done in %s: %d completed, %d failed, %d dropped\n", tenant, *to, took, f.Completed, f.Failed, f.Dropped)
	}
	if f.Failed > 0 {
		return fmt.Errorf("tenant %s: %d of %d migrations failed (%s)", tenant, f.Failed, len(resources), strings.Join(p.failedList(), ", "))
	}
	return nil
}

// tenantResources reads and validates the resource list.
func tenantResources(list, file string) ([]string, error) {
	if (list == "") == (file == "") {
		return nil, fmt.Errorf("%w: give exactly one of --resources and --resources-file", errUsage)
	}
	var raw []string
	where := func(i int) string { return fmt.Sprintf("resource %d", i+1) }
	if list != "" {
		raw = splitList(list)
	} else {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		var lines []int
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			raw = append(raw, line)
			lines = append(lines, n)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		where = func(i int) string { return fmt.Sprintf("%s:%d", file, lines[i]) }
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: no resources", errUsage)
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(raw))
	for i, r := range raw {
		res, err := kvrouting.ParseResource(r)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", errUsage, where(i), err)
		}
		if !seen[res.String()] {
			seen[res.String()] = true
			out = append(out, res.String())
		}
	}
	return out, nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress renders a tenant fan-out's progress: a redrawn bar on a
// terminal, one line per finished child otherwise.
type progress struct {
	out    io.Writer
	total  int
	tty    bool
	json   bool
	drawn  bool
	ids    map[string]string // resource → migration id
	failed []string
}

func (p *progress) update(e *events.Envelope) {
	f := e.State.Fanout
	b, _ := e.Body.(events.TenantProgress)
	if b.Started != "" {
		p.ids[b.Started] = b.StartedID
	}
	if b.Finished == "" {
		if p.tty && !p.json {
			p.draw(f)
		}
		return
	}
	if b.Outcome == events.StatusFailed {
		p.failed = append(p.failed, b.Finished)
	}
	switch {
	case p.json:
		_ = writeJSONLine(p.out, map[string]any{"resource": b.Finished, "migration_id": p.ids[b.Finished], "outcome": b.Outcome,
			"finished": f.Finished(), "total": p.total, "completed": f.Completed, "failed": f.Failed, "dropped": f.Dropped, "active": len(f.Active)})
	case p.tty:
		if b.Outcome == events.StatusFailed {
			fmt.Fprintf(p.out, "\r\033[K  %s failed (%s)\n", b.Finished, p.ids[b.Finished])
		}
		p.draw(f)
	default:
		fmt.Fprintf(p.out, "  [%d/%d] %s %s (%s)\n", f.Finished(), p.total, b.Finished, b.Outcome, p.ids[b.Finished])
	}
}

func (p *progress) draw(f *events.TenantState) {
	const width = 30
	n := 0
	if p.total > 0 {
		n = f.Finished() * width / p.total
	}
	fmt.Fprintf(p.out, "\r\033[K[%s%s] %d/%d  completed %d  failed %d  dropped %d  active %d",
		strings.Repeat("#", n), strings.Repeat(".", width-n), f.Finished(), p.total, f.Completed, f.Failed, f.Dropped, len(f.Active))
	p.drawn = true
}

func (p *progress) finish() {
	if p.drawn {
		fmt.Fprintln(p.out)
	}
}

func (p *progress) failedList() []string {
	out := make([]string, 0, len(p.failed))
	for _, r := range p.failed {
		out = append(out, r+" "+p.ids[r])
	}
	return out
}

func migrateStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("migrate status", "migrate status [ID] [--limit N] [--active] [--json] [--nats URL]", stdout)
	url := natsFlag(fs)
	limit := fs.Int("limit", 20, "without ID: how many recent migrations to list (0 = all)")
	active := fs.Bool("active", false, "without ID: only migrations that have not ended")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 1, "ID"); err != nil {
		return err
	}
	if len(pos) == 1 {
		if err := parseMigrationID(pos[0]); err != nil {
			return err
		}
	}
	if *limit < 0 {
		return fmt.Errorf("%w: --limit must be >= 0", errUsage)
	}
	o, err := dialOps(ctx, *url)
	if err != nil {
		return err
	}
	defer o.Close()
	if len(pos) == 1 {
		st, seq, err := awaitMigration(ctx, o, pos[0], 2*time.Second)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(stdout, toStateJSON(st, seq))
		}
		printState(stdout, st)
		return nil
	}
	lasts, err := lastEvents(ctx, o.js)
	if err != nil {
		return err
	}
	var rows []lastEvent
	for _, l := range lasts {
		if l.env.State == nil || l.env.MigrationID == "" || (*active && l.env.State.Status.Terminal()) {
			continue
		}
		rows = append(rows, l)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].env.Time.After(rows[j].env.Time) })
	if *limit > 0 && len(rows) > *limit {
		rows = rows[:*limit]
	}
	if *asJSON {
		out := make([]stateJSON, 0, len(rows))
		for _, r := range rows {
			out = append(out, toStateJSON(r.env.State, r.seq))
		}
		return writeJSON(stdout, out)
	}
	if len(rows) == 0 {
		fmt.Fprintln(stdout, "no migrations")
		return nil
	}
	fmt.Fprintf(stdout, "%-32s  %-28s  %-20s  %-18s  %-9s  %-14s  %s\n", "ID", "RESOURCE", "ROUTE", "PHASE", "STATUS", "UPDATED", "REASON")
	for _, r := range rows {
		st := r.env.State
		what := st.Resource
		if st.Fanout != nil {
			what = fmt.Sprintf("tenant %s (%d/%d)", st.Fanout.Tenant, st.Fanout.Finished(), len(st.Fanout.Resources))
		}
		fmt.Fprintf(stdout, "%-32s  %-28s  %-20s  %-18s  %-9s  %-14s  %s\n", st.ID, what, route(st), st.Phase, st.Status,
			r.env.Time.UTC().Format("01-02 15:04:05"), st.Reason)
	}
	return nil
}

// lastEvent is the last event of one subject of the events stream.
type lastEvent struct {
	seq uint64
	env *events.Envelope
}

// lastEvents reads the last event of every migration (one per subject of
// MIGRATION_EVENTS; each carries its migration's full state).
func lastEvents(ctx context.Context, js jetstream.JetStream) ([]lastEvent, error) {
	ctx, cancel := withTimeout(ctx, time.Minute)
	defer cancel()
	s, err := js.Stream(ctx, events.EventStream)
	if err != nil {
		return nil, noStream(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	n := int(info.State.NumSubjects)
	if n == 0 {
		return nil, nil
	}
	c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.EventPrefix + ">"},
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy})
	if err != nil {
		return nil, err
	}
	out := make([]lastEvent, 0, n)
	seen := map[string]bool{}
	for len(seen) < n {
		batch, err := c.Fetch(min(n-len(seen), 1000), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			meta, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			if seen[m.Subject()] {
				continue // a new event of a subject already read
			}
			seen[m.Subject()] = true
			e, err := events.Decode(m.Data())
			if err != nil {
				continue
			}
			out = append(out, lastEvent{seq: meta.Sequence.Stream, env: e})
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if got == 0 {
			break // fewer subjects than counted (none are ever removed, but be safe)
		}
	}
	return out, nil
}

func migrateCancel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("migrate cancel", "migrate cancel ID [--reason R] [--wait] [--timeout D] [--nats URL]", stdout)
	url := natsFlag(fs)
	reason := fs.String("reason", "", "why (recorded in the migration's events)")
	wait := fs.Bool("wait", false, "follow the migration until it has rolled back")
	timeout := fs.Duration("timeout", 10*time.Minute, "with --wait: give up following after this long")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "ID"); err != nil {
		return err
	}
	id := pos[0]
	if err := parseMigrationID(id); err != nil {
		return err
	}
	o, err := dialOps(ctx, *url)
	if err != nil {
		return err
	}
	defer o.Close()
	// A migration started a moment ago may still be a queued command; a
	// cancel sent before it exists would be dropped, so wait for it.
	st, _, err := awaitMigration(ctx, o, id, 5*time.Second)
	if err != nil {
		return err
	}
	if st.Status.Terminal() {
		return fmt.Errorf("migration %s already ended (%s)", id, st.Status)
	}
	if st.Phase == events.PhaseSwapped || st.Phase == events.PhaseCleanupScheduled {
		return fmt.Errorf("migration %s is past its swap; it can no longer be cancelled", id)
	}
	if err := o.orch.Cancel(ctx, id, *reason); err != nil {
		return fmt.Errorf("cancel: %w", err)
	}
	fmt.Fprintf(stdout, "cancel requested for %s (%s, phase %s)\n", id, st.Resource, st.Phase)
	if !*wait {
		return nil
	}
	end, err := followMigration(ctx, o, id, *timeout, false, stdout, stderr)
	if err != nil {
		return err
	}
	if end.Status == events.StatusCompleted {
		return fmt.Errorf("migration %s completed before the cancel took effect", id)
	}
	return nil
}

// awaitMigration returns a migration's state and last sequence, waiting up
// to wait for it to exist (its start command may not be processed yet).
func awaitMigration(ctx context.Context, o *ops, id string, wait time.Duration) (*events.State, uint64, error) {
	deadline := time.Now().Add(wait)
	for {
		st, seq, err := o.orch.State(ctx, id)
		if err == nil {
			return st, seq, nil
		}
		if !errors.Is(err, orchestrator.ErrNotFound) {
			return nil, 0, err
		}
		if time.Now().After(deadline) {
			return nil, 0, fmt.Errorf("migration %s not found", id)
		}
		select {
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

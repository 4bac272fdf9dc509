package main

import (
	"context"
	"io"
	"time"

	"github.com/cutover/cutover/internal/ops"
)

// Operator commands: they talk to a running deployment over NATS only
// (DESIGN.md "Users and what they run": start one resource, a whole tenant,
// watch, cancel, replay history, force-release with approvals). Each parses
// its flags and calls internal/ops.

func init() {
	register("migrate", "start, follow, steer, list and cancel migrations (start | tenant | status | pause | resume | throttle | cancel)", oneLine(runMigrate))
}

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "migrate", []subcommand{
		{"start", "start RESOURCE --to REGION [--wait]       migrate one resource (kind/id); prints the migration id", migrateStart},
		{"tenant", "tenant TENANT --to REGION --resources r1,r2|--resources-file F [--concurrency N]   migrate a tenant's resources, with progress", migrateTenant},
		{"status", "status [ID]                                one migration's state, or the recent migrations", migrateStatus},
		{"pause", "pause ID [--reason R]                      hold a migration or tenant move where it stands (durable; outside Phase 3)", migrateSteer("pause")},
		{"resume", "resume ID                                  end a pause", migrateSteer("resume")},
		{"throttle", "throttle ID [--concurrency N] [--rate R|off]   change a running tenant move's concurrency or a copy's rate", migrateSteer("throttle")},
		{"cancel", "cancel ID [--reason R] [--wait]           roll a migration back and stop it (no effect after its swap)", migrateCancel},
	}, args, stdout, stderr)
}

func migrateStart(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("migrate start", "migrate start RESOURCE --to REGION [--wait] [--dry-run] [--max-write-block D] [--rate R] [--timeout D] [--json] [--nats URL]", stdout)
	url := natsFlag(fs)
	to := fs.String("to", "", "target region (required)")
	wait := fs.Bool("wait", false, "follow the migration to its end, printing its phase transitions")
	timeout := fs.Duration("timeout", time.Hour, "with --wait: give up following after this long (0 = never; the migration goes on)")
	asJSON := fs.Bool("json", false, "print JSON (with --wait: one event per line)")
	dry := fs.Bool("dry-run", false, "run the pre-flight and print the plan; write nothing")
	budget := fs.Duration("max-write-block", 0, "write-block budget: roll back rather than block the resource's writes longer than this (0 = the write lease)")
	rate := fs.Int("rate", 0, "cap the historical copy at this many records a second (0 = no cap; Phase 3 is never throttled)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "RESOURCE (kind/id)"); err != nil {
		return err
	}
	if *dry {
		return ops.DryRun(ctx, ops.StartRequest{NATS: *url, Resource: pos[0], Target: *to, JSON: *asJSON}, stdout)
	}
	return ops.Start(ctx, ops.StartRequest{NATS: *url, Resource: pos[0], Target: *to, Wait: *wait, Timeout: *timeout, JSON: *asJSON,
		MaxWriteBlock: *budget, Rate: *rate}, stdout, stderr)
}

func migrateTenant(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("migrate tenant", "migrate tenant TENANT --to REGION (--resources r1,r2,... | --resources-file F) [--concurrency N] [--rate R] [--max-write-lock-p99 D] [--max-source-latency D] [--max-write-block D] [--dry-run] [--timeout D] [--json] [--nats URL]", stdout)
	url := natsFlag(fs)
	to := fs.String("to", "", "target region (required)")
	list := fs.String("resources", "", "the tenant's resources (kind/id), comma separated")
	file := fs.String("resources-file", "", "file with one resource (kind/id) per line; blank lines and # comments are skipped")
	conc := fs.Int("concurrency", 0, "migrations in flight at once (0 = the orchestrator's default)")
	timeout := fs.Duration("timeout", 24*time.Hour, "give up following after this long (0 = never; the migration goes on)")
	asJSON := fs.Bool("json", false, "print progress as JSON lines")
	dry := fs.Bool("dry-run", false, "run the pre-flight of every resource and print the plans; write nothing")
	budget := fs.Duration("max-write-block", 0, "every migration's write-block budget: roll back rather than block writes longer (0 = the write lease)")
	rate := fs.Int("rate", 0, "cap the copy of all the migrations together at this many records a second (0 = no cap)")
	brake := fs.Duration("max-write-lock-p99", 0, "brake: halve the concurrency when the finished migrations' write-blocked p99 passes this (0 = no brake)")
	latency := fs.Duration("max-source-latency", 0, "brake: halve the concurrency when a migration's slowest source export page takes longer (0 = no brake)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 1, 1, "TENANT"); err != nil {
		return err
	}
	r := ops.TenantRequest{NATS: *url, Tenant: pos[0], Target: *to, Resources: *list, ResourcesFile: *file,
		Concurrency: *conc, Timeout: *timeout, JSON: *asJSON, MaxWriteBlock: *budget, Rate: *rate, MaxWriteLockP99: *brake, MaxSourceLatency: *latency}
	if *dry {
		return ops.DryRunTenant(ctx, r, stdout)
	}
	return ops.StartTenant(ctx, r, stdout, stderr)
}

func migrateStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("migrate status", "migrate status [ID] [--limit N] [--active] [--json] [--nats URL]\n       migrate status ID --follow [--after SEQ] [--timeout D] [--json] [--nats URL]", stdout)
	url := natsFlag(fs)
	limit := fs.Int("limit", 20, "without ID: how many recent migrations to list (0 = all)")
	active := fs.Bool("active", false, "without ID: only migrations that have not ended")
	asJSON := fs.Bool("json", false, "print JSON (with --follow: one event per line, with its seq)")
	follow := fs.Bool("follow", false, "with ID: print the migration's events as they happen, every one, until it ends (any migration, started by anyone)")
	after := fs.Uint64("after", 0, "with --follow: resume after this event seq (the last one printed)")
	timeout := fs.Duration("timeout", 0, "with --follow: give up following after this long (0 = never; the migration goes on)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 1, "ID"); err != nil {
		return err
	}
	r := ops.StatusRequest{NATS: *url, List: len(pos) == 0, Limit: *limit, Active: *active, JSON: *asJSON,
		Follow: *follow, After: *after, Timeout: *timeout}
	if !r.List {
		r.ID = pos[0]
	}
	return ops.Status(ctx, r, stdout)
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
	return ops.Cancel(ctx, ops.CancelRequest{NATS: *url, ID: pos[0], Reason: *reason, Wait: *wait, Timeout: *timeout}, stdout, stderr)
}

// migrateSteer is `migrate pause`, `resume` and `throttle`.
func migrateSteer(action string) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		usage := map[string]string{
			"pause":    "migrate pause ID [--reason R] [--timeout D] [--nats URL]",
			"resume":   "migrate resume ID [--timeout D] [--nats URL]",
			"throttle": "migrate throttle ID [--concurrency N] [--rate R|off] [--timeout D] [--nats URL]",
		}[action]
		fs := newFlags("migrate "+action, usage, stdout)
		url := natsFlag(fs)
		timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the orchestrator to record it")
		r := ops.SteerRequest{Action: action}
		switch action {
		case "pause":
			fs.StringVar(&r.Reason, "reason", "", "why (recorded in the migration's events)")
		case "throttle":
			fs.IntVar(&r.Concurrency, "concurrency", 0, "a tenant move's migrations in flight at once (0 = unchanged)")
			fs.StringVar(&r.Rate, "rate", "", "copy rate in records a second, or off for no cap (empty = unchanged)")
		}
		pos, err := parseArgs(fs, args)
		if err != nil {
			return err
		}
		if err := wantArgs(pos, 1, 1, "ID"); err != nil {
			return err
		}
		r.NATS, r.ID, r.Timeout = *url, pos[0], *timeout
		return ops.Steer(ctx, r, stdout)
	}
}

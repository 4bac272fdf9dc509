package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cutover/cutover/internal/system"
)

func init() {
	register("participant", "one service's participant (the participant kit over PostgreSQL, or the Pebble store) serving the migration contract for a region", oneLine(runParticipantRole))
}

func runParticipantRole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("participant", "participant --region R --service S (--postgres URL | --pebble DIR) [--kinds K,...] [--test-harness] [--nats URL]\n\nOne service's participant for region R, serving the migration contract over NATS: the participant\nkit (services/participant) over PostgreSQL (services/pgstore; it applies its schema to the\ndatabase), or the Pebble store (services/store) in DIR.\n--test-harness also serves the test harness that `cutover conformance` drives (test mode only:\nit writes through the user path for whoever may publish on the contract's subjects).", stdout)
	rf := addRoleFlags(fs)
	rf.addInsecure(fs)
	region := fs.String("region", "", "the region served (required)")
	service := fs.String("service", "", "the service's name (required)")
	pg := fs.String("postgres", "", "PostgreSQL URL of the service's database")
	pebble := fs.String("pebble", "", "directory of the service's Pebble store (instead of --postgres)")
	kinds := fs.String("kinds", "", "the service's record kinds, comma separated (empty: any)")
	harness := fs.Bool("test-harness", false, "TEST MODE ONLY: serve the test harness for `cutover conformance`")
	ckey := addContractKey(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if err := parseRegion("region", *region); err != nil {
		return err
	}
	if *service == "" || (*pg == "") == (*pebble == "") {
		return fmt.Errorf("%w: --service, and one of --postgres and --pebble, are required", errUsage)
	}
	if *pg != "" && !isPostgresURL(*pg) {
		return fmt.Errorf("%w: --postgres %q: want a postgres:// or postgresql:// URL", errUsage, *pg)
	}
	sec, err := rf.security("service")
	if err != nil {
		return err
	}
	if err := checkContract(ckey, "participant", "its region's contract key", rf.isInsecure()); err != nil {
		return err
	}
	if rf.isInsecure() {
		insecureWarning(stderr, "participant")
	}
	if *harness {
		fmt.Fprintln(stderr, "cutover participant: WARNING: --test-harness: the user path is open to the contract's callers; test mode only")
	}
	if *rf.checkConfig {
		return configChecked(stdout, "participant")
	}
	if err := rf.loadPassword(&sec); err != nil {
		return err
	}
	var keyed system.Config
	if err := applyContractKey(ckey, &keyed); err != nil {
		return err
	}
	cfg := system.ParticipantConfig{NATS: *rf.nats, Security: sec, Region: *region, Service: *service, Postgres: *pg, Pebble: *pebble,
		Key: keyed.ContractKey, TestHarness: *harness}
	if *kinds != "" {
		cfg.Kinds = strings.Split(*kinds, ",")
	}
	return system.RunParticipant(ctx, cfg, func() {
		where := "PostgreSQL"
		if *pebble != "" {
			where = "Pebble (" + *pebble + ")"
		}
		fmt.Fprintf(stdout, "cutover participant: %s in region %s on %s, serving the migration contract\n", *service, *region, where)
		if *harness {
			fmt.Fprintln(stdout, "  test harness  on")
		}
		fmt.Fprintln(stdout, "Ctrl-C to stop.")
	})
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cutover/cutover/internal/demo"
	"github.com/cutover/cutover/internal/ops"
	"github.com/cutover/cutover/internal/system"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/services/httproute"
)

// errHelp is returned when --help was asked for; the usage is already printed.
var errHelp = errors.New("help requested")

// newFlags returns a FlagSet that prints its usage to stdout on --help and
// reports parse errors as usage errors.
func newFlags(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: cutover %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args; --help gives errHelp, a bad flag a usage error.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return nil
}

// defaultNATS is where the operator commands look for the deployment.
const defaultNATS = "nats://127.0.0.1:4222"

func natsFlag(fs *flag.FlagSet) *string {
	return fs.String("nats", defaultNATS, "NATS URL(s) of the deployment, comma separated; a secured deployment's user from $"+ops.EnvNATSUser+
		" with $"+ops.EnvNATSPassword+" or $"+ops.EnvNATSPasswordFile+", its CA from $"+ops.EnvNATSCA)
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

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// parseRegion returns a usage error unless s, the value of --flagName, is a
// region name (the roles' flags).
func parseRegion(flagName, s string) error { return ops.CheckRegion(flagName, s) }

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string { return ops.SplitList(s) }

// queueFlags are the API's write queue flags (gateway, dev, demo).
type queueFlags struct {
	writes *time.Duration
	max    *int
}

func addQueueFlags(fs *flag.FlagSet) queueFlags {
	return queueFlags{
		writes: fs.Duration("queue-writes", system.DefaultQueueWrites, "how long the API parks a write that meets a write lock or fence, until the routing changes, before answering 423 (0 = no queueing)"),
		max:    fs.Int("queue-max", httproute.DefaultQueueMax, "writes parked at once (each resource gets at most 64 of them)"),
	}
}

// apply checks the flags and sets them on c (--queue-writes 0 is
// system.Config's "no queueing", a negative QueueWrites).
func (q queueFlags) apply(c *system.Config) error {
	if *q.writes < 0 || *q.max < 1 {
		return fmt.Errorf("%w: --queue-writes must be >= 0 and --queue-max >= 1", errUsage)
	}
	c.QueueWrites, c.QueueMax = *q.writes, *q.max
	if *q.writes == 0 {
		c.QueueWrites = -1
	}
	return nil
}

// wanFlags adds --supercluster and --wan (dev, demo, chaos, bench) and
// returns a function that checks them after parsing.
func wanFlags(fs *flag.FlagSet, supercluster *bool, wan *cnats.WAN) func() error {
	fs.BoolVar(supercluster, "supercluster", false, "one embedded NATS cluster per region (--cluster nodes each), joined by gateways through WAN proxies")
	spec := fs.String("wan", "", "shape every gateway link, e.g. rtt=80ms,mbps=200 (needs --supercluster)")
	return func() error {
		w, err := cnats.ParseWAN(*spec)
		if err != nil {
			return fmt.Errorf("%w: --wan: %w", errUsage, err)
		}
		if w != (cnats.WAN{}) && !*supercluster {
			return fmt.Errorf("%w: --wan needs --supercluster", errUsage)
		}
		*wan = w
		return nil
	}
}

// postgresFlag is --postgres [URL]: given alone it asks for a private
// PostgreSQL server (demo.PrivatePostgres); with a URL (--postgres=URL, or
// --postgres URL: joinPostgresURL) it names a database.
type postgresFlag struct{ v *string }

func (f postgresFlag) String() string {
	if f.v == nil {
		return ""
	}
	return *f.v
}

func (f postgresFlag) Set(s string) error {
	if s == "true" {
		s = demo.PrivatePostgres
	}
	if s != demo.PrivatePostgres && !isPostgresURL(s) {
		return fmt.Errorf("--postgres %q: want a postgres:// or postgresql:// URL, or nothing for a private server", s)
	}
	*f.v = s
	return nil
}

func (postgresFlag) IsBoolFlag() bool { return true }

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// joinPostgresURL turns "--postgres URL" into "--postgres=URL", so that
// the flag's optional value may follow it as a separate argument.
func joinPostgresURL(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if (a == "--postgres" || a == "-postgres") && i+1 < len(args) && isPostgresURL(args[i+1]) {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
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

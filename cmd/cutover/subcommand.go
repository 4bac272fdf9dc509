package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// A command of subcommands (migrate, routing, lock), and the one-line
// errors of the commands that talk to a deployment.

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

// Command cutover moves live resources between regions without a lock
// service: the lock lives in the routing document every request reads.
//
// Usage: cutover <command> [flags]. Run `cutover help` for the list.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/cutover/cutover/internal/ops"
	"github.com/cutover/cutover/internal/system"
)

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	commands[name] = command{summary: summary, run: run}
}

// errUsage marks an error that is a usage problem (exit code 2). It is
// internal/ops's sentinel, so that the operator commands' usage errors
// exit 2 as well.
var errUsage = ops.ErrUsage

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Run executes one command line and returns the process exit code: 0 on
// success, 1 on failure, 2 on a usage error or a start its pre-flight
// refused (nothing written). Failures print one line.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "cutover: unknown command %q (run `cutover help`)\n", args[0])
		return 2
	}
	if err := cmd.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, errHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "cutover %s: %v\n", args[0], err)
		if errors.Is(err, errUsage) || errors.Is(err, system.ErrConfig) || errors.Is(err, ops.ErrPreflight) {
			return 2
		}
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "cutover — live cross-region migration without a lock service")
	fmt.Fprintln(w, "\nUsage: cutover <command> [flags]   (cutover <command> --help for flags)\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

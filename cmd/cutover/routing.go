package main

import (
	"context"
	"io"

	"github.com/cutover/cutover/internal/ops"
)

func init() {
	register("routing", "read a resource's routing document from the stream leader (get)", oneLine(runRouting))
}

func runRouting(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "routing", []subcommand{
		{"get", "get RESOURCE [--json]   the routing document, read from the stream leader, token redacted", routingGet},
	}, args, stdout, stderr)
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
	return ops.GetRouting(ctx, ops.RoutingRequest{NATS: *url, Resource: pos[0], JSON: *asJSON}, stdout)
}

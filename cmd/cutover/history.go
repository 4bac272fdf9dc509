package main

import (
	"context"
	"io"

	"github.com/cutover/cutover/internal/ops"
)

func init() {
	register("history", "replay the event timeline of a migration or of every migration of a resource", oneLine(runHistory))
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
	return ops.History(ctx, ops.HistoryRequest{NATS: *url, Of: pos[0], JSON: *asJSON}, stdout)
}

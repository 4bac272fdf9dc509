package main

import (
	"context"
	"io"

	"github.com/cutover/cutover/internal/ops"
)

func init() {
	register("watch", "live lock changes of the routing documents, one line each", runWatch)
}

// runWatch is `cutover watch [RESOURCE|--kind K] [--json]`
// (ops.Watch; kvrouting.Store.Watch).
func runWatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("watch", "watch [RESOURCE | --kind K] [--json] [--history] [--count N] [--nats URL]\n\nPrints every change of the routing documents as it happens — pre-locked, escalated, renewed,\nswapped, released, force-released — one line each (JSON lines with --json), until Ctrl-C.\nRESOURCE is kind/id (one resource); --kind watches every resource of a kind.", stdout)
	r := ops.WatchRequest{}
	nats := natsFlag(fs)
	fs.StringVar(&r.Kind, "kind", "", "watch every resource of this kind (e.g. conv)")
	fs.BoolVar(&r.JSON, "json", false, "one JSON object a line")
	fs.BoolVar(&r.History, "history", false, "start with the revisions the routing history keeps")
	fs.IntVar(&r.Count, "count", 0, "stop after N changes (0: until Ctrl-C)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := wantArgs(pos, 0, 1, "resource"); err != nil {
		return err
	}
	if len(pos) == 1 {
		r.Resource = pos[0]
	}
	r.NATS = *nats
	return ops.Watch(ctx, r, stdout)
}

package ops

import (
	"context"
	"io"
)

// RoutingRequest is `cutover routing get`: read a routing document.
type RoutingRequest struct {
	// NATS is the deployment's URL (several comma separated).
	NATS string
	// Resource is the resource, "kind/id".
	Resource string
	// JSON prints the document in the shape of the API's GET /v1/routing.
	JSON bool
}

// GetRouting prints r.Resource's routing document, read from the stream
// leader, its lock tokens redacted. It returns an error wrapping ErrUsage
// for a malformed resource, before connecting; any other error when the
// deployment cannot be reached or the resource has no routing document.
// Any goroutine may call it.
func GetRouting(ctx context.Context, r RoutingRequest, stdout io.Writer) error {
	res, err := parseResource(r.Resource)
	if err != nil {
		return err
	}
	o, err := dial(ctx, r.NATS)
	if err != nil {
		return err
	}
	defer o.Close()
	d, err := o.leaderDoc(ctx, res)
	if err != nil {
		return err
	}
	if r.JSON {
		return writeJSON(stdout, toRoutingJSON(d))
	}
	printRouting(stdout, d)
	return nil
}

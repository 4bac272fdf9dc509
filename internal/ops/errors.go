package ops

import (
	"errors"
	"fmt"

	"github.com/cutover/cutover/events"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrUsage is wrapped by the errors for a request the command line got
// wrong: a missing or malformed argument, a bad flag value. They are
// returned before any connection is made; cmd/cutover exits 2 on them.
//
// Its text is the bare "usage", not "ops: usage", because the command line
// prints it as the head of every usage error ("usage: --to is required").
var ErrUsage = errors.New("usage")

// noStream explains a missing migration stream.
func noStream(err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("no %s stream: has an orchestrator ever run against this deployment? (%w)", events.EventStream, err)
	}
	return err
}

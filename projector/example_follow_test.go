package projector_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/projector"
)

var errSeen = errors.New("seen enough")

// ExampleProjector_Follow reads a migration's changes from the event
// stream at the subscriber's own pace — nothing dropped — and resumes after
// the last sequence it handled, as a subscriber does after a restart.
func ExampleProjector_Follow() {
	ctx := context.Background()
	sys, err := system.Start(ctx, system.Config{InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	defer sys.Close()
	if _, err := sys.Locker.Register(ctx, kvrouting.Resource{Kind: "conv", ID: "lunch"}, sys.Source); err != nil {
		log.Fatal(err)
	}
	id, err := sys.Orch.Start(ctx, events.Start{Resource: "conv/lunch", Target: sys.Target})
	if err != nil {
		log.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()

	// The first three changes, then "a restart".
	seen := map[uint64]bool{}
	var last uint64
	err = sys.Projector.Follow(fctx, 0, func(c projector.Change) error {
		if c.MigrationID != id {
			return nil
		}
		seen[c.Seq], last = true, c.Seq
		if len(seen) == 3 {
			return errSeen
		}
		return nil
	})
	fmt.Println("first three, then stopped:", errors.Is(err, errSeen))

	// Resume after the last one handled: the rest, none twice.
	twice, end := false, events.Status("")
	err = sys.Projector.Follow(fctx, last+1, func(c projector.Change) error {
		if c.MigrationID != id {
			return nil
		}
		twice = twice || seen[c.Seq]
		seen[c.Seq] = true
		if c.Status.Terminal() {
			end = c.Status
			return errSeen
		}
		return nil
	})
	fmt.Println("resumed to the end:", errors.Is(err, errSeen), end)
	fmt.Println("a change twice:", twice)
	// Output:
	// first three, then stopped: true
	// resumed to the end: true completed
	// a change twice: false
}

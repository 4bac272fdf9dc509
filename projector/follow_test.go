package projector_test

import (
	"testing"

	"context"
	"errors"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/projector"
)

var errSeen = errors.New("seen enough")

// TestFollowResumes: the first three changes, a stop, then the rest from
// the next sequence, none twice.
func TestFollowResumes(t *testing.T) {
	ctx := context.Background()
	sys, err := system.Start(ctx, system.Config{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close()
	if _, err := sys.Locker.Register(ctx, kvrouting.Resource{Kind: "conv", ID: "lunch"}, sys.Source); err != nil {
		t.Fatal(err)
	}
	id, err := sys.Orch.Start(ctx, events.Start{Resource: "conv/lunch", Target: sys.Target})
	if err != nil {
		t.Fatal(err)
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
	if !errors.Is(err, errSeen) || len(seen) != 3 {
		t.Fatalf("first three: %v, %d seen", err, len(seen))
	}

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
	if !errors.Is(err, errSeen) || end != events.StatusCompleted || twice {
		t.Fatalf("resumed: %v, end %s, a change twice %v", err, end, twice)
	}
}

package orchestrator

import (
	"context"
	"fmt"

	"github.com/cutover/cutover/events"
	"github.com/nats-io/nats.go/jetstream"
)

// StreamConfig configures Provision.
type StreamConfig struct {
	// Replicas of each stream (0 means 1). Use 3 in a cluster
	// (DESIGN.md "Durability and hazards").
	Replicas int
	// Memory stores the streams in memory (tests only).
	Memory bool
}

// Provision creates or updates the three migration streams; it is
// idempotent. MIGRATION_EVENTS never discards an acknowledged event (no
// limits, no deletes, no purges) and takes a step's events as one atomic
// batch; the two others are work queues.
// Errors: the JetStream API's.
func Provision(ctx context.Context, js jetstream.JetStream, cfg StreamConfig) error {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	r := max(cfg.Replicas, 1)
	storage := jetstream.FileStorage
	if cfg.Memory {
		storage = jetstream.MemoryStorage
	}
	for _, sc := range []jetstream.StreamConfig{
		{Name: events.CommandStream, Description: "cutover migration commands (work queue; docs/wire-format.md)",
			Subjects: []string{events.CommandPrefix + ">"}, Retention: jetstream.WorkQueuePolicy, Storage: storage, Replicas: r},
		{Name: events.EventStream, Description: "cutover migration events, one subject per migration (docs/wire-format.md)",
			Subjects: []string{events.EventPrefix + ">"}, Retention: jetstream.LimitsPolicy,
			Storage: storage, Replicas: r, Discard: jetstream.DiscardNew, DenyDelete: true, DenyPurge: true,
			AllowAtomicPublish: true}, // a step's events: one atomic batch (eventlog.Log.AppendBatch)
		{Name: events.WorkStream, Description: "cutover migrations to drive, one message per active migration (work queue)",
			Subjects: []string{events.WorkPrefix + ">"}, Retention: jetstream.WorkQueuePolicy, Storage: storage, Replicas: r},
		{Name: events.IndexStream, Description: "cutover resource → migrations index, one message per migration (subject cutover.idx.<routing key>.<migration id>)",
			Subjects: []string{events.IndexPrefix + ">"}, Retention: jetstream.LimitsPolicy, Storage: storage, Replicas: r,
			Discard: jetstream.DiscardNew, DenyDelete: true, DenyPurge: true},
	} {
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("orchestrator: provision %s: %w", sc.Name, err)
		}
	}
	return nil
}

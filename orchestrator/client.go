package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cutover/cutover/eventlog"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Client publishes commands to MIGRATION_CMDS and reads migration state.
// Safe for concurrent use.
type Client struct {
	nc *nats.Conn
	js jetstream.JetStream
}

// NewClient returns a Client over a connection and its JetStream context.
func NewClient(nc *nats.Conn, js jetstream.JetStream) *Client { return &Client{nc: nc, js: js} }

// Start asks for a migration of resource ("kind/id") to target and returns
// the migration id. Two Start commands for one resource create two
// migrations; the routing pre-lock admits only one of them (the other ends
// Failed "locked" or Dropped). Errors: ErrInvalid, publish errors.
func (c *Client) Start(ctx context.Context, cmd events.Start) (string, error) {
	if _, err := kvrouting.ParseResource(cmd.Resource); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if cmd.Target == "" {
		return "", fmt.Errorf("%w: empty target", ErrInvalid)
	}
	cmdID := newID()
	if cmd.MigrationID == "" {
		cmd.MigrationID = startID(cmdID, cmd)
	}
	if !events.ValidID(cmd.MigrationID) {
		return "", fmt.Errorf("%w: migration id %q", ErrInvalid, cmd.MigrationID)
	}
	return cmd.MigrationID, c.send(ctx, cmdID, cmd)
}

// StartTenant fans a tenant's resources out and returns the tenant
// migration's id. Errors: ErrInvalid, publish errors.
func (c *Client) StartTenant(ctx context.Context, cmd events.StartTenant) (string, error) {
	if cmd.Tenant == "" || cmd.Target == "" {
		return "", fmt.Errorf("%w: tenant and target are required", ErrInvalid)
	}
	cmdID := newID()
	if cmd.MigrationID == "" {
		cmd.MigrationID = DeriveID("tenant", cmdID)
	}
	return cmd.MigrationID, c.send(ctx, cmdID, cmd)
}

// Cancel asks a migration to roll back and stop (no effect after its swap).
func (c *Client) Cancel(ctx context.Context, migrationID, reason string) error {
	return c.send(ctx, newID(), events.Cancel{MigrationID: migrationID, Reason: reason})
}

// Send sends a steering command: events.Pause, events.Resume or
// events.Throttle (recorded as Paused, Resumed, Throttled). Errors:
// ErrInvalid for any other body; publish errors.
func (c *Client) Send(ctx context.Context, cmd events.Body) error {
	now := time.Now().UTC() // orders an operator's commands (events.Pause.Sent)
	switch b := cmd.(type) {
	case events.Pause:
		b.Sent = cmp.Or(b.Sent, now)
		return c.send(ctx, newID(), b)
	case events.Resume:
		b.Sent = cmp.Or(b.Sent, now)
		return c.send(ctx, newID(), b)
	case events.Throttle:
		b.Sent = cmp.Or(b.Sent, now)
		return c.send(ctx, newID(), b)
	}
	return fmt.Errorf("%w: %s is not a steering command", ErrInvalid, cmd.Type())
}

// ForceRelease asks for an admin force-release of cmd.Resource's lock and
// returns the admin aggregate (AuditID) whose first event will be its
// outcome: events.ForceReleased, or events.AdminRefused naming why nothing
// was done. The worker verifies the approvals (admin.go). Errors: publish
// errors.
func (c *Client) ForceRelease(ctx context.Context, cmd events.ForceRelease) (string, error) {
	id := newID()
	return AuditID(events.TypeForceRelease, id), c.send(ctx, id, cmd)
}

// ClearFence asks for the repair of cmd.Resource's stranded authority
// records at cmd.Region (`cutover fence clear`) and returns the admin
// aggregate (AuditID) whose first event will be its outcome:
// events.FenceForceCleared, or events.AdminRefused. Errors: publish
// errors.
func (c *Client) ClearFence(ctx context.Context, cmd events.FenceClear) (string, error) {
	id := newID()
	return AuditID(events.TypeFenceClear, id), c.send(ctx, id, cmd)
}

// State returns a migration's current state and the sequence of its last
// event. Errors: as Load.
func (c *Client) State(ctx context.Context, migrationID string) (*events.State, uint64, error) {
	return Load(ctx, c.nc, migrationID)
}

// History returns a migration's events, oldest first.
func (c *Client) History(ctx context.Context, migrationID string) ([]*events.Envelope, error) {
	return eventlog.New(c.nc, c.js).History(ctx, migrationID)
}

func (c *Client) send(ctx context.Context, id string, body events.Body) error {
	return sendCommand(ctx, c.js, id, "", body)
}

func sendCommand(ctx context.Context, js jetstream.JetStream, id, cause string, body events.Body) error {
	data, err := events.Encode(&events.Envelope{ID: id, CausationID: cause, Body: body})
	if err != nil {
		return err
	}
	msg := nats.NewMsg(events.CommandSubject(body.Type()))
	msg.Data = data
	_, err = publishRetry(ctx, js, msg, jetstream.WithMsgID(id))
	return err
}

// startID is the migration id of a start command: from the parent when
// there is one (a replayed child start maps onto the same migration), else
// from the command id.
func startID(cmdID string, s events.Start) string {
	if s.Parent != "" {
		return DeriveID("child", s.Parent, s.Resource, s.Target)
	}
	return DeriveID("start", cmdID)
}

// MigrationsOf returns the ids of every migration of resource ("kind/id"),
// and of every audited operator action on it (force-release, fence clear),
// oldest first, from the resource index (MIGRATION_INDEX: a subject filter,
// not a read of every migration's events). Errors: ErrInvalid for a
// malformed resource; the stream's errors (ErrNotFound wrapped when the
// index stream does not exist: a deployment older than the index).
func (c *Client) MigrationsOf(ctx context.Context, resource string) ([]string, error) {
	res, err := kvrouting.ParseResource(resource)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	cons, err := c.js.OrderedConsumer(ctx, events.IndexStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{events.IndexFilter(res.Key())}, DeliverPolicy: jetstream.DeliverAllPolicy})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotFound, events.IndexStream, err)
	}
	if err != nil {
		return nil, err
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	seen := map[string]bool{}
	for left := int(info.NumPending); left > 0; {
		batch, err := cons.Fetch(min(left, 256), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			if id := string(m.Data()); !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		left -= n
	}
	return ids, nil
}

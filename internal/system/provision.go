package system

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ProvisionConfig says what Provision creates.
type ProvisionConfig struct {
	// Nodes is the deployment's JetStream node count (replicas follow it:
	// cnats.DefaultReplicas).
	Nodes int
	// Routing creates the ROUTING bucket (with RoutingHistory, 0 = its
	// default), Pages the PAGES stream, Migration the orchestrator's
	// streams, Mirrors a ROUTING mirror per named region.
	Routing        bool
	RoutingHistory uint8
	Pages          bool
	Migration      bool
	Mirrors        []string
	// Home places ROUTING in this cluster and each mirror in its region's
	// cluster (a supercluster); PagesRegion places PAGES. "" leaves
	// placement to JetStream (the connected cluster), as do the migration
	// streams always: they belong where the orchestrators connect.
	Home        string
	PagesRegion string
	// Attempts per item (0 = 10), each bounded by PerAttempt (0 = 5 s).
	Attempts   int
	PerAttempt time.Duration
	Logger     *slog.Logger
}

// Provision creates (or confirms) the buckets and streams of a deployment,
// each with a bounded attempt and retries. Creation is idempotent, and a
// just-formed cluster needs retries: roles starting together create the
// same R3 streams concurrently and such a create can go unanswered (two
// concurrent CreateOrUpdateKeyValue calls on a fresh 3-node cluster both
// hung until their deadline in 2 of 4 runs, and an immediate retry
// answered at once), a placement can be refused while peers report in
// ("no suitable peers", 10005), or the system is briefly unavailable
// (10008). Errors: the last attempt's, wrapped with what was provisioned.
func Provision(ctx context.Context, js jetstream.JetStream, c ProvisionConfig) error {
	replicas := cnats.DefaultReplicas(c.Nodes)
	log := c.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	attempts, per := c.Attempts, c.PerAttempt
	if attempts <= 0 {
		attempts = 10
	}
	if per <= 0 {
		per = 5 * time.Second
	}
	type step struct {
		what string
		do   func(context.Context) error
	}
	var steps []step
	if c.Routing {
		steps = append(steps, step{"routing bucket", func(ctx context.Context) error {
			_, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{Nodes: c.Nodes, History: c.RoutingHistory, Cluster: c.Home})
			return err
		}}, step{"routing history", func(ctx context.Context) error {
			_, err := cnats.ProvisionRoutingHistory(ctx, js, replicas, 0)
			return err
		}})
	}
	for _, r := range c.Mirrors {
		steps = append(steps, step{"mirror " + r, func(ctx context.Context) error {
			var opts []cnats.MirrorOption
			if c.Home != "" {
				opts = append(opts, cnats.MirrorInCluster(r))
			}
			_, err := cnats.ProvisionMirror(ctx, js, r, 1, opts...)
			return err
		}})
	}
	if c.Pages {
		steps = append(steps, step{"pages stream", func(ctx context.Context) error {
			if c.PagesRegion == "" {
				_, err := contractnats.ProvisionPages(ctx, js, replicas)
				return err
			}
			sc := contractnats.PagesConfig(replicas)
			sc.Placement = cnats.InRegion(c.PagesRegion)
			_, err := js.CreateOrUpdateStream(ctx, sc)
			return err
		}})
	}
	if c.Migration {
		steps = append(steps, step{"migration streams", func(ctx context.Context) error {
			return orchestrator.Provision(ctx, js, orchestrator.StreamConfig{Replicas: replicas})
		}})
	}
	for _, s := range steps {
		var err error
		for n := 1; n <= attempts; n++ {
			actx, cancel := context.WithTimeout(ctx, per)
			err = s.do(actx)
			cancel()
			if err == nil || ctx.Err() != nil || !cnats.Transient(err) {
				break
			}
			unanswered := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders)
			log.Warn("provisioning unanswered; retrying", "what", s.what, "attempt", n, "err", err)
			if !unanswered { // answered at once: give the cluster time to form
				select {
				case <-ctx.Done():
				case <-time.After(500 * time.Millisecond):
				}
			}
		}
		if err != nil {
			return fmt.Errorf("provision %s: %w", s.what, err)
		}
	}
	return nil
}

package system

import (
	"context"
	"fmt"
	"time"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/conformance"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/cutover/cutover/services/participant"
	"github.com/cutover/cutover/services/pgstore"
	"github.com/cutover/cutover/services/store"

	cnats "github.com/cutover/cutover/nats"
)

// ParticipantConfig is `cutover participant`: one service's participant,
// the participant kit over PostgreSQL or the Pebble store, serving the
// migration contract for one region.
type ParticipantConfig struct {
	NATS     string
	Security cnats.ClientSecurity
	Region   string
	Service  string
	// Postgres is the database's URL (pgstore.Open); or Pebble, a
	// directory for the Pebble store (services/store), instead.
	Postgres string
	Pebble   string
	// Kinds are the service's record kinds (participant.Options.Kinds;
	// empty: any).
	Kinds []string
	// Key is the region's contract key (nil: unsigned, development).
	Key []byte
	// TestHarness serves the test harness (contractnats.HarnessOps) for
	// `cutover conformance`: test mode only.
	TestHarness bool
}

// RunParticipant opens the store (applying its schema), connects, serves
// the contract until ctx ends, and calls ready once serving. The
// deployment provisions the PAGES stream (a participant's identity may not
// create streams).
func RunParticipant(ctx context.Context, cfg ParticipantConfig, ready func()) error {
	if cfg.Region == "" || cfg.Service == "" || (cfg.Postgres == "") == (cfg.Pebble == "") {
		return fmt.Errorf("%w: a participant needs a region, a service, and a PostgreSQL URL or a Pebble directory (one of them)", ErrConfig)
	}
	if err := contractnats.ValidateService(cfg.Service); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var p contract.Participant
	var user conformance.UserPath
	if cfg.Postgres != "" {
		st, err := pgstore.Open(octx, cfg.Postgres, pgstore.Options{Service: cfg.Service})
		if err != nil {
			return err
		}
		defer st.Close()
		kit := participant.New(cfg.Service, st, participant.Options{Kinds: cfg.Kinds})
		p, user = kit, conformance.KitUser(kit)
	} else {
		st, err := store.Open(store.Options{Dir: cfg.Pebble})
		if err != nil {
			return err
		}
		defer st.Close()
		p, user = services.NewStoreParticipant(cfg.Service, st, services.StoreParticipantOptions{}), conformance.StoreUser(st)
	}
	opts, err := cfg.Security.Options()
	if err != nil {
		return err
	}
	nc, js, err := cnats.Connect(octx, cfg.NATS, opts...)
	if err != nil {
		return err
	}
	defer nc.Close()
	epoch, err := cnats.ServedEpoch(octx, js)
	if err != nil {
		return err
	}
	so := contractnats.ServeOptions{Key: cfg.Key, Description: "cutover participant", RoutingEpoch: epoch}
	if cfg.TestHarness {
		so.Harness = &user
	}
	srv, err := contractnats.Serve(ctx, nc, js, cfg.Region, p, so)
	if err != nil {
		return err
	}
	if ready != nil {
		ready()
	}
	<-ctx.Done()
	return srv.Stop()
}

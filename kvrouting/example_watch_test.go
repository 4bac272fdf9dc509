package kvrouting_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
)

// ExampleStore_Watch subscribes to one conversation's lock changes, the
// way an event-driven service reacts to migrations (pause a consumer at
// the write lock, resume at the new primary after the swap): typed
// changes, never a token, nothing dropped.
func ExampleStore_Watch() {
	ctx := context.Background()
	srv, err := cnats.StartServer(cnats.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown()
	nc, js, err := cnats.Connect(ctx, srv.ClientURL())
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	if _, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{}); err != nil {
		log.Fatal(err)
	}
	// Every revision, for days: ROUTING keeps only a few per resource.
	if _, err := cnats.ProvisionRoutingHistory(ctx, js, 1, 0); err != nil {
		log.Fatal(err)
	}
	store, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		log.Fatal(err)
	}
	locker, err := kvrouting.NewLocker(store, kvrouting.LockConfig{FenceConvergence: true, ClockSkew: 10 * time.Millisecond})
	if err != nil {
		log.Fatal(err)
	}

	// Watch from the first revision the stream keeps.
	w, err := store.Watch(ctx, "conv/lunch", kvrouting.WithHistory())
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()

	res := kvrouting.Resource{Kind: "conv", ID: "lunch"}
	if _, err := locker.Register(ctx, res, "us-east"); err != nil {
		log.Fatal(err)
	}
	g, err := locker.PreLock(ctx, res, "eu-west", "m1")
	if err != nil {
		log.Fatal(err)
	}
	time.Sleep(locker.Config().ClockSkew) // the pre-lock's not-before, plus the skew margin
	d, err := locker.EscalateHardDelete(ctx, res, g.Token, g.Doc)
	if err != nil {
		log.Fatal(err)
	}
	if d, err = locker.EscalateWrite(ctx, res, g.Token, d); err != nil {
		log.Fatal(err)
	}
	if _, err := locker.Swap(ctx, res, g.Token, d); err != nil {
		log.Fatal(err)
	}

	for range 5 {
		c, err := w.Next(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%-11s %s at %s (%s lock), migration %q\n", c.Kind, c.Resource, c.Primary.Region, c.Primary.Lock, c.MigrationID)
	}
	// Output:
	// registered  conv/lunch at us-east (none lock), migration ""
	// pre-locked  conv/lunch at us-east (pre lock), migration "m1"
	// escalated   conv/lunch at us-east (hard-delete lock), migration "m1"
	// escalated   conv/lunch at us-east (write lock), migration "m1"
	// swapped     conv/lunch at eu-west (none lock), migration "m1"
}

package kvrouting_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
)

// ExampleLocker migrates one conversation from us-east to eu-west through
// the whole lock lifecycle of paper 000 §4: pre-lock, hard-delete lock,
// write lock and the atomic swap. After each step it prints the routing
// document's locations and what a delete arriving at the source region is
// turned into (paper 001 Table 4). The clock is moved by hand so that the
// convergence delay passes without waiting.
func ExampleLocker() {
	ctx := context.Background()

	// An embedded nats-server with JetStream and the ROUTING bucket.
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
	store, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		log.Fatal(err)
	}

	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	locker, err := kvrouting.NewLocker(store, kvrouting.LockConfig{
		ConvergenceDelay: 30 * time.Second, // every cache tier has dropped older copies by then
		Clock:            func() time.Time { return now },
	})
	if err != nil {
		log.Fatal(err)
	}
	skew := locker.Config().ClockSkew
	show := func(step string, d *kvrouting.Document) {
		loc := fmt.Sprintf("%s %s", d.Primary.Region, d.Primary.Lock.Type)
		if d.Secondary != nil {
			loc += fmt.Sprintf(", %s %s", d.Secondary.Region, d.Secondary.Lock.Type)
		}
		del := kvrouting.Decide(d, "us-east", kvrouting.OpDelete, now, skew)
		fmt.Printf("%-12s %-38s  delete at us-east: %s\n", step+":", loc, del.Outcome)
	}

	res := kvrouting.Resource{Kind: "conv", ID: "c1"}
	doc, err := locker.Register(ctx, res, "us-east")
	if err != nil {
		log.Fatal(err)
	}
	show("registered", doc)

	// The pre-lock records the target as a locked secondary and returns the
	// token every later step presents.
	grant, err := locker.PreLock(ctx, res, "eu-west", "m1")
	if err != nil {
		log.Fatal(err)
	}
	show("pre-lock", grant.Doc)
	fmt.Println("stronger locks from now +", grant.NotBefore.Sub(now))

	// Escalating before every cache has converged is refused.
	_, err = locker.EscalateHardDelete(ctx, res, grant.Token, grant.Doc)
	fmt.Println("escalate at once:", errors.Is(err, kvrouting.ErrNotConverged))

	// Holders wait out the clock-skew margin too.
	now = grant.NotBefore.Add(skew)
	doc, err = locker.EscalateHardDelete(ctx, res, grant.Token, grant.Doc)
	if err != nil {
		log.Fatal(err)
	}
	show("hard-delete", doc)

	// (The historical copy runs here; then the write lock fences the tail.)
	doc, err = locker.EscalateWrite(ctx, res, grant.Token, doc)
	if err != nil {
		log.Fatal(err)
	}
	show("write", doc)

	// One conditional write makes the target primary and locks the old
	// location as secondary.
	doc, err = locker.Swap(ctx, res, grant.Token, doc)
	if err != nil {
		log.Fatal(err)
	}
	show("swap", doc)
	fmt.Println("last migration:", doc.LastMigrationID)

	// Output:
	// registered:  us-east none                            delete at us-east: allow
	// pre-lock:    us-east pre, eu-west secondary          delete at us-east: allow
	// stronger locks from now + 30s
	// escalate at once: true
	// hard-delete: us-east hard-delete, eu-west secondary  delete at us-east: tombstone
	// write:       us-east write, eu-west secondary        delete at us-east: reject
	// swap:        eu-west none, us-east secondary         delete at us-east: reject
	// last migration: m1
}

// ExampleLocker_Release rolls a migration back. While the first migration
// holds the pre-lock a second one is refused with ErrLocked (the paper's
// 423); after Release, one conditional write back to the unlocked source,
// the second one gets the lock.
func ExampleLocker_Release() {
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
	store, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		log.Fatal(err)
	}
	locker, err := kvrouting.NewLocker(store, kvrouting.LockConfig{})
	if err != nil {
		log.Fatal(err)
	}

	res := kvrouting.Resource{Kind: "conv", ID: "c2"}
	if _, err := locker.Register(ctx, res, "us-east"); err != nil {
		log.Fatal(err)
	}
	first, err := locker.PreLock(ctx, res, "eu-west", "m1")
	if err != nil {
		log.Fatal(err)
	}
	_, err = locker.PreLock(ctx, res, "ap-south", "m2")
	fmt.Println("second migration:", errors.Is(err, kvrouting.ErrLocked))

	doc, err := locker.Release(ctx, res, first.Token, first.Doc)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("released:", doc.Primary.Region, doc.Primary.Lock.Type, doc.Secondary == nil)

	second, err := locker.PreLock(ctx, res, "ap-south", "m2")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("second migration:", second.Doc.MigrationID, "to", second.Doc.Target)

	// Output:
	// second migration: true
	// released: us-east none true
	// second migration: m2 to ap-south
}

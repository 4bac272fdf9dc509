package client_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http/httptest"
	"time"

	"github.com/cutover/cutover/app/api"
	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
)

// ExampleClient is a conversation between alice and bob through the real
// API (what `cutover dev` serves; see startDevAPI).
func ExampleClient() {
	ctx := context.Background()
	baseURL, _, stop := startDevAPI()
	defer stop()

	// Dev tokens name the user; production uses signed tokens.
	alice, err := client.New(baseURL, "user:alice")
	if err != nil {
		log.Fatal(err)
	}
	bob, err := client.New(baseURL, "user:bob")
	if err != nil {
		log.Fatal(err)
	}

	conv, err := alice.CreateConversation(ctx, client.NewConversation{ID: "c1", Title: "lunch", Members: []string{"bob"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(conv.ID, conv.Members, "at", conv.Region)

	// The message id is the idempotency key: choose it once, reuse it on
	// every re-post of the same message.
	if _, err := alice.PostMessage(ctx, "c1", client.NewMessage{ID: client.NewMessageID(), Text: "noon?"}); err != nil {
		log.Fatal(err)
	}
	for m, err := range bob.AllMessages(ctx, "c1", client.ListOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %s\n", m.Author, m.Text)
	}

	doc, err := bob.Routing(ctx, chat.KindConversation, "c1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(doc.Resource, "primary", doc.Primary.Region, "lock", doc.Primary.Lock.Type)

	// Output:
	// c1 [alice bob] at us-east
	// alice: noon?
	// conv/c1 primary us-east lock none
}

// ExampleClient_PostMessage shows a post that meets a migration's write
// lock. The server answers 423; the client retries in the background and
// the call returns once the lock is gone, so the user sees a delay, not an
// error (paper 001 §4.4). Here the migration rolls back; a swap ends the
// lock window the same way.
func ExampleClient_PostMessage() {
	ctx := context.Background()
	baseURL, locker, stop := startDevAPI()
	defer stop()
	alice, err := client.New(baseURL, "user:alice")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := alice.CreateConversation(ctx, client.NewConversation{ID: "c1", Title: "lunch"}); err != nil {
		log.Fatal(err)
	}

	// A migration of conv/c1 reaches its write lock (paper 000 §4).
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: "c1"}
	grant, err := locker.PreLock(ctx, res, "eu-west", "m1")
	if err != nil {
		log.Fatal(err)
	}
	time.Sleep(2 * locker.Config().ClockSkew) // the convergence delay is zero here
	doc, err := locker.EscalateHardDelete(ctx, res, grant.Token, grant.Doc)
	if err != nil {
		log.Fatal(err)
	}
	doc, err = locker.EscalateWrite(ctx, res, grant.Token, doc)
	if err != nil {
		log.Fatal(err)
	}

	// The migration ends once the client has been refused.
	released := make(chan error, 1)
	go func() {
		for alice.Stats().Rejected423 == 0 {
			time.Sleep(time.Millisecond)
		}
		_, err := locker.Release(ctx, res, grant.Token, doc)
		released <- err
	}()

	m, err := alice.PostMessage(ctx, "c1", client.NewMessage{ID: client.NewMessageID(), Text: "still there?"})
	if err != nil {
		log.Fatal(err)
	}
	if err := <-released; err != nil {
		log.Fatal(err)
	}
	st := alice.Stats()
	fmt.Println("posted:", m.Text)
	fmt.Println("fenced:", st.Fenced, "recovered:", st.Recovered, "unrecovered:", st.Unrecovered)

	// Output:
	// posted: still there?
	// fenced: 1 recovered: 1 unrecovered: 0
}

// startDevAPI stands up, in process, what `cutover dev` runs for one
// region: an embedded nats-server with the ROUTING bucket, the chat
// services of region us-east on in-memory stores, and the API over HTTP
// with development auth. It returns the API's base URL, the routing locker
// (a migration's side of the routing documents) and a stop function.
func startDevAPI() (baseURL string, locker *kvrouting.Locker, stop func()) {
	ctx := context.Background()
	srv, err := cnats.StartServer(cnats.Options{})
	if err != nil {
		log.Fatal(err)
	}
	nc, js, err := cnats.Connect(ctx, srv.ClientURL())
	if err != nil {
		log.Fatal(err)
	}
	if _, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{}); err != nil {
		log.Fatal(err)
	}
	store, err := kvrouting.NewStore(ctx, nc, js, "")
	if err != nil {
		log.Fatal(err)
	}
	// A millisecond of clock skew: one process, one clock. The chat
	// region's stores hold fences (FenceConvergence): the pre-lock waits
	// for no routing cache. Without them, leave it unset and the locker
	// waits out the resolver's convergence delay.
	locker, err = kvrouting.NewLocker(store, kvrouting.LockConfig{ClockSkew: time.Millisecond, FenceConvergence: true})
	if err != nil {
		log.Fatal(err)
	}
	// No routing cache to speak of (1 ns), so a lock shows at once.
	resolver, err := kvrouting.NewResolver(store, kvrouting.ResolverConfig{
		Tiers: []*kvrouting.Tier{kvrouting.NewTier("none", time.Nanosecond, 0)}, ClockSkew: time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	region, err := chat.OpenRegion(chat.RegionOptions{Name: "us-east", InMemory: true})
	if err != nil {
		log.Fatal(err)
	}
	h, err := api.New(api.Config{
		Regions: map[string]*chat.Region{"us-east": region}, Resolver: resolver, Locker: locker,
		Auth: api.DevAuth{}, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	hs := httptest.NewServer(h)
	return hs.URL, locker, func() {
		hs.Close()
		_ = region.Close()
		nc.Close()
		srv.Shutdown()
	}
}

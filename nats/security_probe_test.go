package cnats_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"golang.org/x/crypto/bcrypt"

	"github.com/cutover/cutover/events"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
)

// The probe suite: a secured server with one user per identity (and a
// service user of another region), the deployment's streams provisioned
// by the admin and filled with data, then every attack of an attacker
// holding a valid but unprivileged identity. Each attack must be refused
// (the server reports a permission violation naming its subject, and no
// answer comes back) and, at the end, every stream, consumer and routing
// document must read back exactly as before.

// probeUsers are the suite's users: name → identity and regions.
var probeUsers = []struct {
	name    string
	id      cnats.Identity
	regions []string
}{
	{"admin", cnats.IdentityAdmin, nil},
	{"gw", cnats.IdentityRouting, []string{"us-east"}},
	{"orch", cnats.IdentityOrchestrator, nil},
	{"svc-us", cnats.IdentityService, []string{"us-east"}},
	{"svc-eu", cnats.IdentityService, []string{"eu-west"}},
	{"reader", cnats.IdentityReader, nil},
}

// probeConn is one user's connection; it records the permission
// violations the server reports.
type probeConn struct {
	user string
	nc   *nats.Conn
	js   jetstream.JetStream
	mu   sync.Mutex
	errs []string
}

// violations counts the reported violations naming subject (any subject
// for "").
func (c *probeConn) violations(subject string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, e := range c.errs {
		if strings.Contains(strings.ToLower(e), "permissions violation") && (subject == "" || strings.Contains(e, `"`+subject+`"`)) {
			n++
		}
	}
	return n
}

type probeEnv struct {
	url   string
	pki   cnats.PKI
	conns map[string]*probeConn
}

func (e *probeEnv) connect(t *testing.T, user string) *probeConn {
	t.Helper()
	c := &probeConn{user: user}
	opts, err := cnats.ClientSecurity{User: user, Password: "pw-" + user, CAFile: e.pki.CA}.Options()
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		c.mu.Lock()
		c.errs = append(c.errs, err.Error())
		c.mu.Unlock()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c.nc, c.js, err = cnats.Connect(ctx, e.url, opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", user, err)
	}
	t.Cleanup(c.nc.Close)
	return c
}

// refusedPublish sends a request to subject and fails the test unless the
// server reports a permission violation for it before any answer.
func refusedPublish(t *testing.T, c *probeConn, subject string, body []byte) {
	t.Helper()
	before := c.violations(subject)
	inbox := c.nc.NewInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := c.nc.PublishRequest(subject, inbox, body); err != nil {
		t.Fatal(err)
	}
	_ = c.nc.Flush()
	deadline := time.Now().Add(15 * time.Second)
	for c.violations(subject) == before {
		if m, err := sub.NextMsg(5 * time.Millisecond); err == nil {
			t.Errorf("%s: publish to %s answered: %q", c.user, subject, m.Data)
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: publish to %s: no permission violation reported", c.user, subject)
			return
		}
	}
}

// refusedSubscribe subscribes to subject (in queue group q when not "")
// and fails the test unless the server refuses the subscription.
func refusedSubscribe(t *testing.T, c *probeConn, subject, q string) {
	t.Helper()
	before := c.violations(subject)
	got := make(chan *nats.Msg, 16)
	handler := func(m *nats.Msg) {
		select {
		case got <- m:
		default:
		}
	}
	var sub *nats.Subscription
	var err error
	if q == "" {
		sub, err = c.nc.Subscribe(subject, handler)
	} else {
		sub, err = c.nc.QueueSubscribe(subject, q, handler)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = c.nc.Flush()
	deadline := time.Now().Add(15 * time.Second)
	for c.violations(subject) == before {
		if time.Now().After(deadline) {
			t.Errorf("%s: subscription to %s (queue %q): not refused", c.user, subject, q)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case m := <-got:
		t.Errorf("%s: refused subscription to %s received %s", c.user, subject, m.Subject)
	default:
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// snapshot is what the attacks must leave unchanged.
type snapshot struct {
	streams   map[string]string // config and state, as JSON
	consumers map[string]string // delivered, ack floor, pending, config
	routing   string            // value and revision of conv.c1
}

func takeSnapshot(ctx context.Context, t *testing.T, js jetstream.JetStream, streams []string) snapshot {
	t.Helper()
	s := snapshot{streams: map[string]string{}, consumers: map[string]string{}}
	for _, name := range streams {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		info := st.CachedInfo()
		state := info.State
		s.streams[name] = string(mustJSON(t, struct {
			Config                   jetstream.StreamConfig
			Msgs, Bytes, First, Last uint64
			Consumers                int
		}{info.Config, state.Msgs, state.Bytes, state.FirstSeq, state.LastSeq, state.Consumers}))
	}
	for stream, name := range map[string]string{events.CommandStream: orchestrator.CommandConsumer, events.WorkStream: orchestrator.WorkConsumer} {
		c, err := js.Consumer(ctx, stream, name)
		if err != nil {
			t.Fatalf("consumer %s/%s: %v", stream, name, err)
		}
		ci := c.CachedInfo()
		s.consumers[stream+"/"+name] = string(mustJSON(t, struct {
			Config                  jetstream.ConsumerConfig
			Delivered, AckFloor     jetstream.SequenceInfo
			Pending, AckPending, Rd uint64
		}{ci.Config, ci.Delivered, ci.AckFloor, ci.NumPending, uint64(ci.NumAckPending), uint64(ci.NumRedelivered)}))
	}
	kv, err := js.KeyValue(ctx, cnats.RoutingBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "conv.c1")
	if err != nil {
		t.Fatal(err)
	}
	s.routing = fmt.Sprintf("%s@%d", e.Value(), e.Revision())
	return s
}

// probeStreams are every stream of the deployment.
var probeStreams = []string{cnats.RoutingStream, cnats.RoutingHistoryStream, cnats.MirrorStream("eu-west"),
	events.EventStream, events.CommandStream, events.WorkStream, events.IndexStream, contractnats.PagesStream}

func startProbeEnv(t *testing.T) *probeEnv {
	t.Helper()
	pki, err := cnats.WriteTestPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := cnats.ServerTLS(pki.CA, pki.ServerCert, pki.ServerKey, false)
	if err != nil {
		t.Fatal(err)
	}
	var users []cnats.User
	for _, u := range probeUsers {
		h, err := cnats.HashPassword("pw-"+u.name, bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		users = append(users, cnats.User{Name: u.name, Password: h, Identity: u.id, Regions: u.regions})
	}
	s, err := cnats.StartSecureServer(cnats.SecureOptions{Users: users, TLS: tc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	env := &probeEnv{url: s.ClientURL(), pki: pki, conns: map[string]*probeConn{}}
	for _, u := range probeUsers {
		env.conns[u.name] = env.connect(t, u.name)
	}
	return env
}

// provisionAndFill provisions everything as the admin and writes data as
// the identities whose job it is.
func provisionAndFill(ctx context.Context, t *testing.T, env *probeEnv) {
	t.Helper()
	admin, orch, svc := env.conns["admin"].js, env.conns["orch"].js, env.conns["svc-us"].js
	if _, err := cnats.ProvisionRouting(ctx, admin, cnats.RoutingConfig{Nodes: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := cnats.ProvisionRoutingHistory(ctx, admin, 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := cnats.ProvisionMirror(ctx, admin, "eu-west", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := contractnats.ProvisionPages(ctx, admin, 1); err != nil {
		t.Fatal(err)
	}
	if err := orchestrator.Provision(ctx, admin, orchestrator.StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	// The workers bind their own consumers (the orchestrator identity may
	// create exactly these two).
	for stream, name := range map[string]string{events.CommandStream: orchestrator.CommandConsumer, events.WorkStream: orchestrator.WorkConsumer} {
		if _, err := orch.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: -1}); err != nil {
			t.Fatalf("orchestrator binds %s: %v", name, err)
		}
	}
	kv, err := orch.KeyValue(ctx, cnats.RoutingBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "conv.c1", []byte("primary=us-east")); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := orch.Publish(ctx, events.EventSubject("m1"), fmt.Appendf(nil, "event %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for subj, data := range map[string]string{events.CommandSubject("start"): "start conv/c1", events.WorkSubject("m1"): "drive m1",
		events.IndexSubject("conv.c1", "m1"): "m1"} {
		if _, err := orch.Publish(ctx, subj, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := contractnats.PublishPage(ctx, svc, "m1", contract.Page{Service: "messages"}); err != nil {
		t.Fatalf("service publishes a page: %v", err)
	}
	// The mirrors have caught up before the snapshot.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err1 := admin.Stream(ctx, cnats.MirrorStream("eu-west"))
		hs, err2 := admin.Stream(ctx, cnats.RoutingHistoryStream)
		if err1 == nil && err2 == nil && st.CachedInfo().State.LastSeq == 1 && hs.CachedInfo().State.LastSeq == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("mirrors did not catch up")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSecurityProbes tries every attack against every identity it must
// not work for.
func TestSecurityProbes(t *testing.T) {
	env := startProbeEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	provisionAndFill(ctx, t, env)
	before := takeSnapshot(ctx, t, env.conns["admin"].js, probeStreams)

	// A legitimate responder on the contract: the us-east service.
	legit, err := env.conns["svc-us"].nc.QueueSubscribe("cutover.contract.us-east.messages.>", "q", func(m *nats.Msg) {
		_ = m.Respond([]byte("legit"))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer legit.Unsubscribe()
	_ = env.conns["svc-us"].nc.Flush()

	all := func(except ...string) []string {
		var out []string
		for _, u := range probeUsers {
			if !slices.Contains(except, u.name) {
				out = append(out, u.name)
			}
		}
		return out
	}
	type attack struct {
		name    string
		users   []string // refused for these
		subject string
		body    []byte
		queue   string
		sub     bool
	}
	streamCfg := func(c jetstream.StreamConfig) []byte { return mustJSON(t, c) }
	attacks := []attack{
		{name: "forge a routing document", users: all("admin", "gw", "orch"), subject: "$KV.ROUTING.conv.c1", body: []byte("primary=eu-west")},
		{name: "forge a migration event", users: all("orch"), subject: events.EventSubject("m1"), body: []byte("forged")},
		{name: "forge a command", users: all("orch", "admin"), subject: events.CommandSubject("force"), body: []byte("forged")},
		{name: "send a force-release", users: all("orch", "admin"), subject: events.CommandSubject(events.TypeForceRelease), body: []byte("forged")},
		{name: "send a fence clear", users: all("orch", "admin"), subject: events.CommandSubject(events.TypeFenceClear), body: []byte("forged")},
		{name: "forge an audit event", users: all("orch"), subject: events.EventSubject("maudit"), body: []byte("forged fence-force-cleared")},
		{name: "mark an approval used", users: all("orch"), subject: events.IndexSubject("conv.c1", "approval-0123"), body: []byte("m2")},
		{name: "forge work", users: all("orch"), subject: events.WorkSubject("m2"), body: []byte("forged")},
		{name: "forge an index entry", users: all("orch"), subject: events.IndexSubject("conv.c1", "m2"), body: []byte("forged")},
		{name: "forge a page", users: all("gw", "svc-us", "svc-eu"), subject: contractnats.PageSubject("m1", "messages"), body: []byte("forged")},
		{name: "stream republishing into ROUTING", users: all("admin"), subject: "$JS.API.STREAM.CREATE.EVIL1", body: streamCfg(jetstream.StreamConfig{
			Name: "EVIL1", Subjects: []string{"evil1.>"}, RePublish: &jetstream.RePublish{Source: "evil1.>", Destination: "$KV.ROUTING.conv.{{wildcard(1)}}"}})},
		{name: "stream republishing into commands", users: all("admin"), subject: "$JS.API.STREAM.CREATE.EVIL2", body: streamCfg(jetstream.StreamConfig{
			Name: "EVIL2", Subjects: []string{"evil2.>"}, RePublish: &jetstream.RePublish{Source: "evil2.>", Destination: "cutover.cmd.{{wildcard(1)}}"}})},
		{name: "stream sourcing ROUTING into events", users: all("admin"), subject: "$JS.API.STREAM.CREATE.EVIL3", body: streamCfg(jetstream.StreamConfig{
			Name: "EVIL3", Sources: []*jetstream.StreamSource{{Name: cnats.RoutingStream}}, RePublish: &jetstream.RePublish{Source: ">", Destination: "cutover.evt.m1"}})},
		{name: "stream mirroring the commands", users: all("admin"), subject: "$JS.API.STREAM.CREATE.EVIL4", body: streamCfg(jetstream.StreamConfig{
			Name: "EVIL4", Mirror: &jetstream.StreamSource{Name: events.CommandStream}})},
		{name: "delete the workers' command consumer", users: all("admin"), subject: "$JS.API.CONSUMER.DELETE." + events.CommandStream + "." + orchestrator.CommandConsumer},
		{name: "delete the workers' work consumer", users: all("admin"), subject: "$JS.API.CONSUMER.DELETE." + events.WorkStream + "." + orchestrator.WorkConsumer},
		{name: "pull a command", users: all("orch"), subject: "$JS.API.CONSUMER.MSG.NEXT." + events.CommandStream + "." + orchestrator.CommandConsumer, body: []byte(`{"batch":1,"no_wait":true}`)},
		{name: "pull work", users: all("orch"), subject: "$JS.API.CONSUMER.MSG.NEXT." + events.WorkStream + "." + orchestrator.WorkConsumer, body: []byte(`{"batch":1,"no_wait":true}`)},
		{name: "ack a command", users: all("orch"), subject: "$JS.ACK." + events.CommandStream + "." + orchestrator.CommandConsumer + ".1.1.1.1700000000000000000.0", body: []byte("+ACK")},
		{name: "ack work", users: all("orch"), subject: "$JS.ACK." + events.WorkStream + "." + orchestrator.WorkConsumer + ".1.1.1.1700000000000000000.0", body: []byte("+ACK")},
		{name: "retarget the workers' consumer", users: all("orch"), subject: "$JS.API.CONSUMER.CREATE." + events.CommandStream + "." + orchestrator.CommandConsumer,
			body: mustJSON(t, map[string]any{"stream_name": events.CommandStream, "config": jetstream.ConsumerConfig{Durable: orchestrator.CommandConsumer, AckPolicy: jetstream.AckNonePolicy}})},
		{name: "a consumer of one's own on the commands", users: all(), subject: "$JS.API.CONSUMER.CREATE." + events.CommandStream + ".thief",
			body: mustJSON(t, map[string]any{"stream_name": events.CommandStream, "config": jetstream.ConsumerConfig{Name: "thief", AckPolicy: jetstream.AckExplicitPolicy}})},
		{name: "a consumer of one's own on the work", users: all(), subject: "$JS.API.CONSUMER.CREATE." + events.WorkStream + ".thief",
			body: mustJSON(t, map[string]any{"stream_name": events.WorkStream, "config": jetstream.ConsumerConfig{Name: "thief", AckPolicy: jetstream.AckExplicitPolicy}})},
		{name: "join a contract queue group", users: all("gw", "svc-us"), subject: "cutover.contract.us-east.messages.>", queue: "q", sub: true},
		{name: "listen to one contract op", users: all("gw", "svc-us"), subject: "cutover.contract.us-east.messages.import", sub: true},
		{name: "listen to every region's contract", users: all(), subject: "cutover.contract.>", sub: true},
		{name: "answer discovery", users: all("gw", "svc-us", "svc-eu"), subject: "$SRV.INFO.cutover-contract", sub: true},
		{name: "read the orchestrator's inbox", users: all("orch"), subject: cnats.InboxPrefix("orch") + ".>", sub: true},
		{name: "read every inbox", users: all(), subject: "_INBOX.>", sub: true},
		{name: "read everything", users: all(), subject: ">", sub: true},
		{name: "answer the orchestrator's request", users: all("orch"), subject: cnats.InboxPrefix("orch") + ".nuid.1", body: []byte("forged reply")},
		{name: "send a contract import", users: all("orch"), subject: "cutover.contract.us-east.messages.import", body: []byte("x")},
		{name: "send a contract authority change", users: all("orch"), subject: "cutover.contract.us-east.messages.authority", body: []byte("x")},
		{name: "send a contract cleanup", users: all("orch"), subject: "cutover.contract.us-east.messages.cleanup", body: []byte("x")},
		{name: "send a contract repair", users: all("orch"), subject: "cutover.contract.us-east.messages.repair", body: []byte("x")},
		{name: "read a service's digests", users: all("orch", "admin"), subject: "cutover.contract.us-east.messages.digests", body: []byte("x")},
		{name: "send a contract export", users: all("orch"), subject: "cutover.contract.us-east.messages.export", body: []byte("x")},
		{name: "read export pages", users: all("gw", "svc-us", "svc-eu", "admin"), subject: "$JS.API.STREAM.MSG.GET." + contractnats.PagesStream, body: []byte(`{"seq":1}`)},
		{name: "read the commands", users: all("admin"), subject: "$JS.API.STREAM.MSG.GET." + events.CommandStream, body: []byte(`{"seq":1}`)},
	}
	for _, s := range probeStreams {
		attacks = append(attacks,
			attack{name: "shrink " + s, users: all("admin"), subject: "$JS.API.STREAM.UPDATE." + s,
				body: streamCfg(jetstream.StreamConfig{Name: s, MaxMsgs: 1, MaxAge: time.Second})},
			attack{name: "purge " + s, users: all("admin"), subject: "$JS.API.STREAM.PURGE." + s},
			attack{name: "delete " + s, users: all("admin"), subject: "$JS.API.STREAM.DELETE." + s},
			attack{name: "delete a message of " + s, users: all("admin"), subject: "$JS.API.STREAM.MSG.DELETE." + s, body: []byte(`{"seq":1,"no_erase":true}`)},
		)
	}
	tried := 0
	for _, u := range probeUsers {
		t.Run(u.name, func(t *testing.T) {
			c := env.conns[u.name]
			for _, a := range attacks {
				if !slices.Contains(a.users, u.name) {
					continue
				}
				tried++
				if a.sub {
					refusedSubscribe(t, c, a.subject, a.queue)
				} else {
					refusedPublish(t, c, a.subject, a.body)
				}
				if t.Failed() {
					t.Fatalf("attack %q by %s was not refused", a.name, u.name)
				}
			}
		})
	}
	t.Logf("%d attacks refused", tried)

	// The contract still reaches its one legitimate server only.
	orch := env.conns["orch"].nc
	for i := range 20 {
		m, err := orch.Request("cutover.contract.us-east.messages.authority", fmt.Appendf(nil, "%d", i), 10*time.Second)
		if err != nil {
			t.Fatalf("contract request %d: %v", i, err)
		}
		if string(m.Data) != "legit" {
			t.Fatalf("contract request %d answered %q", i, m.Data)
		}
	}
	after := takeSnapshot(ctx, t, env.conns["admin"].js, probeStreams)
	for name, want := range before.streams {
		if after.streams[name] != want {
			t.Errorf("stream %s changed:\nbefore %s\nafter  %s", name, want, after.streams[name])
		}
	}
	for name, want := range before.consumers {
		if after.consumers[name] != want {
			t.Errorf("consumer %s changed:\nbefore %s\nafter  %s", name, want, after.consumers[name])
		}
	}
	if after.routing != before.routing {
		t.Errorf("routing document changed: %s, was %s", after.routing, before.routing)
	}
	names := env.conns["admin"].js.StreamNames(ctx)
	var got []string
	for n := range names.Name() {
		got = append(got, n)
	}
	slices.Sort(got)
	want := slices.Clone(probeStreams)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("streams after the attacks: %v, want %v", got, want)
	}
}

// TestSecurityLegitimateUse: what each identity's job needs still works
// under the allowlists (the roles end to end: cmd/cutover TestSecureRoles).
func TestSecurityLegitimateUse(t *testing.T) {
	env := startProbeEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	provisionAndFill(ctx, t, env)
	for _, user := range []string{"gw", "orch", "svc-us", "reader"} {
		js := env.conns[user].js
		kv, err := js.KeyValue(ctx, cnats.RoutingBucket)
		if err != nil {
			t.Fatalf("%s: bind ROUTING: %v", user, err)
		}
		if e, err := kv.Get(ctx, "conv.c1"); err != nil || string(e.Value()) != "primary=us-east" {
			t.Fatalf("%s: read routing: %v", user, err)
		}
		if _, _, err := cnats.LeaderGetLast(ctx, env.conns[user].nc, cnats.RoutingStream, cnats.RoutingSubject("conv.c1")); err != nil {
			t.Fatalf("%s: leader get: %v", user, err)
		}
		if _, _, err := cnats.DirectGetLast(ctx, env.conns[user].nc, cnats.MirrorStream("eu-west"), cnats.RoutingSubject("conv.c1")); err != nil {
			t.Fatalf("%s: mirror get: %v", user, err)
		}
		w, err := kv.WatchAll(ctx)
		if err != nil {
			t.Fatalf("%s: watch: %v", user, err)
		}
		select {
		case e := <-w.Updates():
			if e == nil || e.Key() != "conv.c1" {
				t.Fatalf("%s: watch: %v", user, e)
			}
		case <-ctx.Done():
			t.Fatalf("%s: watch: nothing", user)
		}
		_ = w.Stop()
	}
	for _, user := range []string{"orch", "reader"} {
		c, err := env.conns[user].js.OrderedConsumer(ctx, events.EventStream, jetstream.OrderedConsumerConfig{})
		if err != nil {
			t.Fatalf("%s: events consumer: %v", user, err)
		}
		b, err := c.Fetch(5, jetstream.FetchMaxWait(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for range b.Messages() {
			n++
		}
		if n != 5 {
			t.Fatalf("%s read %d events, want 5", user, n)
		}
	}
	// The workers take and ack a command.
	c, err := env.conns["orch"].js.Consumer(ctx, events.CommandStream, orchestrator.CommandConsumer)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.DoubleAck(ctx); err != nil {
		t.Fatalf("orchestrator ack: %v", err)
	}
	// The gateway writes routing; the admin reads pages.
	kv, err := env.conns["gw"].js.KeyValue(ctx, cnats.RoutingBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, "conv.c2", []byte("primary=us-east")); err != nil {
		t.Fatalf("gateway creates a routing document: %v", err)
	}
	if _, err := contractnats.FetchPage(ctx, env.conns["svc-us"].js, "m1", "messages", 1); err != nil {
		t.Fatalf("service reads a page: %v", err)
	}
	// Contract servers of us-east register as the us-east service, sharing
	// one connection as a role's do, and the orchestrator and the reader
	// discover every one of them (each answers on the shared connection).
	for _, name := range []string{"messages", "reactions", "readstate"} {
		svc, err := micro.AddService(env.conns["svc-us"].nc, micro.Config{Name: contractnats.ServiceName, Version: "1.0.0",
			Metadata: map[string]string{contractnats.MetadataRegion: "us-east", contractnats.MetadataService: name}})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.AddGroup("cutover.contract.us-east."+name).AddEndpoint("digests", micro.HandlerFunc(func(r micro.Request) { _ = r.Respond([]byte("{}")) })); err != nil {
			t.Fatal(err)
		}
		defer svc.Stop()
	}
	if err := env.conns["svc-us"].nc.Flush(); err != nil { // the server has the subscriptions
		t.Fatal(err)
	}
	for _, user := range []string{"orch", "reader"} {
		eps, err := contractnats.Discover(ctx, env.conns[user].nc)
		if err != nil || len(eps) != 3 {
			t.Fatalf("%s: discover: %v %v", user, eps, err)
		}
	}
	for _, user := range []string{"gw", "orch", "svc-us", "reader"} {
		if n := env.conns[user].violations(""); n != 0 {
			t.Errorf("%s: %d permission violations: %v", user, n, env.conns[user].errs)
		}
	}
}

// TestContractOpsInStep keeps the names in the permissions in step with
// their owners: the workers' consumers, and the contract's operations (the
// admin's operations are mutations denied to the reader by name, every
// mutating operation the services serve is in that list, and no read-only
// one is).
func TestContractOpsInStep(t *testing.T) {
	op, err := cnats.Permissions(cnats.IdentityOrchestrator)
	if err != nil {
		t.Fatal(err)
	}
	for stream, name := range map[string]string{events.CommandStream: orchestrator.CommandConsumer, events.WorkStream: orchestrator.WorkConsumer} {
		if !slices.Contains(op.Publish.Allow, "$JS.API.CONSUMER.MSG.NEXT."+stream+"."+name) {
			t.Errorf("the orchestrator may not pull from %s/%s", stream, name)
		}
	}
	p, err := cnats.Permissions(cnats.IdentityReader)
	if err != nil {
		t.Fatal(err)
	}
	denied := func(op string) bool { return slices.Contains(p.Publish.Deny, contractnats.SubjectPrefix+".*.*."+op) }
	for _, op := range cnats.ContractAdminOps {
		if !denied(op) && op != contractnats.OpDigests {
			t.Errorf("admin op %q is neither a mutation denied to the reader nor the read-only digests", op)
		}
	}
	mutating := []string{contractnats.OpAuthority, contractnats.OpImport, contractnats.OpCleanup, contractnats.OpCheckpoint, contractnats.OpRepair}
	for _, op := range mutating {
		if !denied(op) {
			t.Errorf("mutating contract op %q is not denied to the reader", op)
		}
	}
	for _, op := range []string{contractnats.OpExport, contractnats.OpDigests, contractnats.OpSlice} {
		if denied(op) {
			t.Errorf("read-only contract op %q is listed as a mutation", op)
		}
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/app/client"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/internal/proctest"
	"github.com/cutover/cutover/internal/workload"
	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/services/contractnats"
	"github.com/nats-io/nats.go/jetstream"
)

// TestSuperclusterProcesses is the supercluster variant of the cluster
// test (issue 16; make cluster-test): one `cutover nats` process per
// region, gateways configured by flags, every gateway link through a
// WAN-shaping proxy in this test process. From each region's own cluster
// it provisions ROUTING in the home region and a mirror in the other, writes
// through the away region and reads the write back from its mirror, then
// cuts the away region off and heals it.
func TestSuperclusterProcesses(t *testing.T) {
	if os.Getenv(clusterEnv) == "" {
		t.Skipf("set %s=1 (make cluster-test) to run the multi-process supercluster test", clusterEnv)
	}
	const home, away = "us-east", "eu-west"
	dir := t.TempDir()
	bin := proctest.Binary(t, dir)
	// Every region's server takes the same users and TLS on client
	// connections (`cutover certs`); the roles connect with credentials.
	files := writeSecureFiles(t, filepath.Join(dir, "certs"))
	ports := proctest.FreePorts(t, 6) // client, route, gateway per region
	regions := []string{home, away}
	// proxies[i] carries the gateway link that the other region solicits
	// to region i.
	var proxies []*cnats.Proxy
	for i := range regions {
		p, err := cnats.StartProxy(fmt.Sprintf("127.0.0.1:%d", ports[3*i+2]))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		p.SetWAN(cnats.WAN{RTT: 40 * time.Millisecond, Mbps: 200})
		proxies = append(proxies, p)
	}
	var procs []*proctest.Proc
	for i, r := range regions {
		client, route, gw := ports[3*i], ports[3*i+1], ports[3*i+2]
		other := 1 - i
		args := []string{"nats", "--name", r + "-n0", "--port", fmt.Sprint(client), "--store", filepath.Join(dir, r),
			"--cluster-name", r, "--cluster-port", fmt.Sprint(route), "--routes", fmt.Sprintf("nats-route://127.0.0.1:%d", route),
			"--gateway-port", fmt.Sprint(gw), "--gateway", regions[other] + "=nats://" + proxies[other].Addr(),
			"--gateway-advertise", "127.0.0.1:1"}
		args = append(args, files.natsFlags()[:6]...) // users and client TLS (no route TLS: one node per region)
		procs = append(procs, proctest.Start(t, bin, "nats-"+r, args...))
	}
	for _, p := range procs {
		p.Await(t, `gateway\s+\S+ on (\S+)`, 60*time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The test provisions as the admin (the only identity that may).
	adminOpts, err := files.security(t, "admin").Options()
	if err != nil {
		t.Fatal(err)
	}
	connect := func(i int) (jetstream.JetStream, func()) {
		nc, js, err := cnats.Connect(ctx, fmt.Sprintf("nats://127.0.0.1:%d", ports[3*i]), adminOpts...)
		if err != nil {
			t.Fatal(err)
		}
		return js, nc.Close
	}
	jsHome, closeHome := connect(0)
	defer closeHome()
	jsAway, closeAway := connect(1)
	defer closeAway()

	// The meta group spans both processes once the gateways are up;
	// provisioning retries until then.
	var kv jetstream.KeyValue
	for {
		var err error
		if kv, err = cnats.ProvisionRouting(ctx, jsAway, cnats.RoutingConfig{Cluster: home}); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("provision ROUTING from the away region: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := cnats.ProvisionMirror(ctx, jsHome, away, 1, cnats.MirrorInCluster(away)); err != nil {
		t.Fatal(err)
	}
	for stream, want := range map[string]string{cnats.RoutingStream: home, cnats.MirrorStream(away): away} {
		st, err := jsHome.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		if c := st.CachedInfo().Cluster; c == nil || c.Name != want {
			t.Fatalf("stream %s placed in %+v, want %s", stream, c, want)
		}
	}
	mirrored := func(rev uint64) {
		t.Helper()
		for {
			st, err := jsAway.Stream(ctx, cnats.MirrorStream(away))
			if err == nil && st.CachedInfo().State.LastSeq >= rev {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("mirror never reached revision %d: %v", rev, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	rev, err := kv.Create(ctx, "doc", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	mirrored(rev)

	// Cut the away region off, then heal: the mirror catches up.
	for _, p := range proxies {
		p.SetMode(cnats.ProxyDrop)
	}
	homeKV, err := jsHome.KeyValue(ctx, cnats.RoutingBucket)
	if err != nil {
		t.Fatal(err)
	}
	if rev, err = homeKV.Put(ctx, "doc", []byte("v2")); err != nil {
		t.Fatalf("write in the home region during the partition: %v", err)
	}
	for _, p := range proxies {
		p.SetMode(cnats.ProxyOpen)
	}
	mirrored(rev)

	// A migration across the two clusters, every role its own process: the
	// gateway (the API, both regions' services, eu-west's on eu-west's own
	// cluster) and an orchestrator, both in us-east, with the placement of
	// the in-process supercluster (PAGES in eu-west, the importing region).
	placement := "home=" + home + ",pages=" + away
	homeURL, awayURL := fmt.Sprintf("nats://127.0.0.1:%d", ports[0]), fmt.Sprintf("nats://127.0.0.1:%d", ports[3])
	prov := proctest.Start(t, bin, "provision", append([]string{"provision", "--nats", homeURL, "--regions", home + "," + away, "--placement", placement},
		files.creds("admin")...)...)
	prov.Await(t, `(cutover provision: .* provisioned)`, 90*time.Second)
	gw := proctest.Start(t, bin, "gateway", append(append([]string{"gateway", "--nats", homeURL, "--regions", home + "," + away, "--placement", placement,
		"--region-nats", away + "=" + awayURL, "--http", "127.0.0.1:0", "--data", filepath.Join(dir, "gateway")}, files.creds("gateway")...), files.secrets()...)...)
	api := "http://" + gw.Await(t, `HTTP API\s+http://(\S+)`, 90*time.Second)
	orch := proctest.Start(t, bin, "orchestrator", append([]string{"orchestrator", "--nats", homeURL, "--placement", placement, "--workers", "2", "--operators-file", files.path(certsOperators)},
		files.creds("orchestrator")...)...)
	orch.Await(t, `(cutover orchestrator)`, 90*time.Second)
	for stream, want := range map[string]string{contractnats.PagesStream: away, events.EventStream: home} {
		st, err := jsHome.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		if c := st.CachedInfo().Cluster; c == nil || c.Name != want {
			t.Fatalf("stream %s placed in %+v, want %s", stream, c, want)
		}
	}
	const conv, n = "sc-1", 12
	seeder := files.client(t, api, "seed")
	if err := (workload.Seeder{Client: seeder, Users: []string{"u0", "u1"}}).All(ctx, []workload.Conv{{ID: conv, Size: n}}, nil); err != nil {
		t.Fatalf("seed: %v", err)
	}
	orchOpts, err := files.security(t, "orchestrator").Options()
	if err != nil {
		t.Fatal(err)
	}
	ncHome, jsh, err := cnats.Connect(ctx, homeURL, orchOpts...)
	if err != nil {
		t.Fatal(err)
	}
	defer ncHome.Close()
	st := migrateAndWait(ctx, t, orchestrator.NewClient(ncHome, jsh), "conv/"+conv, away)
	rs, err := kvrouting.NewStore(ctx, ncHome, jsh, "")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := rs.GetLeader(ctx, kvrouting.Resource{Kind: chat.KindConversation, ID: conv})
	if err != nil || doc.Primary.Region != away {
		t.Fatalf("routing after the move: %+v %v", doc, err)
	}
	page, err := seeder.ListMessages(ctx, conv, client.ListOptions{Limit: 100})
	if err != nil || len(page.Messages) != n {
		t.Fatalf("messages read back after the move: %d, %v; want %d", len(page.Messages), err, n)
	}
	t.Logf("migrated %s from %s to %s across the gateway: write lock %d ms", conv, home, away, st.Figures.WriteLockMs)
}

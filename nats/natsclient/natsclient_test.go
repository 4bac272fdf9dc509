package natsclient_test

// natsclient against a real embedded server (natstest). This is an
// external test package: natstest imports package cnats, which imports
// natsclient, so an internal test importing natstest would be a cycle.

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natsclient"
	"github.com/cutover/cutover/nats/natstest"
)

// testCtx is a generous deadline for one test: a loaded 2-core machine
// must pass.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not after 30 s: %s", what, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestConnect: the defaults (name, reconnect for ever), a caller's option
// overriding them, and a working JetStream handle.
func TestConnect(t *testing.T) {
	s := natstest.RunServer(t)
	ctx := testCtx(t)

	nc, js, err := natsclient.Connect(ctx, s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	o := nc.Opts
	if o.Name != natsclient.DefaultClientName || o.MaxReconnect != -1 || o.ReconnectWait != natsclient.DefaultReconnectWait || !o.AllowReconnect {
		t.Errorf("defaults: name %q, max reconnects %d, wait %s, reconnect %v", o.Name, o.MaxReconnect, o.ReconnectWait, o.AllowReconnect)
	}
	if o.Timeout <= 0 || o.Timeout > 2*time.Second {
		t.Errorf("dial timeout %s, want within (0, 2s]", o.Timeout)
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatalf("jetstream handle: %v", err)
	}

	nc2, _, err := natsclient.Connect(context.Background(), s.ClientURL(), nats.Name("cutover-cli"), nats.MaxReconnects(3))
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	if nc2.Opts.Name != "cutover-cli" || nc2.Opts.MaxReconnect != 3 {
		t.Errorf("options after the defaults do not override them: name %q, max reconnects %d", nc2.Opts.Name, nc2.Opts.MaxReconnect)
	}

	// A list of URLs, the first dead.
	nc3, _, err := natsclient.Connect(ctx, "nats://127.0.0.1:1,"+s.ClientURL())
	if err != nil {
		t.Fatalf("a list with one dead URL: %v", err)
	}
	nc3.Close()
}

// TestConnectFails: no server, or one that never answers, is an error
// naming the URL, bounded by the caller's context.
func TestConnectFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, _, err := natsclient.Connect(ctx, "nats://127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("no server: %v", err)
	}

	// A listener that accepts and never sends INFO.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	url := "nats://" + ln.Addr().String()
	nc, _, err := natsclient.Connect(short, url)
	if err == nil {
		nc.Close()
		t.Fatal("connected to a server that never answers")
	}
	if !strings.Contains(err.Error(), url) {
		t.Errorf("error %q does not name %s", err, url)
	}
}

// TestProvisionRoutingEpoch: a new bucket gets a 32-hex epoch in its
// metadata, kept by later provisions (with another config too) and read
// back by RoutingEpoch; ROUTING is created with the documented defaults.
func TestProvisionRoutingEpoch(t *testing.T) {
	s := natstest.RunServer(t)
	_, js := natstest.MustConnect(t, s.ClientURL())
	ctx := testCtx(t)

	if _, err := natsclient.RoutingEpoch(ctx, js); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("epoch without a bucket: %v, want ErrBucketNotFound", err)
	}
	kv, err := natsclient.ProvisionRouting(ctx, js, natsclient.RoutingConfig{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	epoch := st.Metadata()[natsclient.RoutingEpochKey]
	if b, err := hex.DecodeString(epoch); err != nil || len(b) != 16 {
		t.Fatalf("new bucket's epoch %q is not 32 hex digits (metadata %v)", epoch, st.Metadata())
	}
	if st.Bucket() != natsclient.RoutingBucket || st.History() != int64(natsclient.DefaultRoutingHistory) || st.BackingStore() != "JetStream" {
		t.Errorf("bucket %s history %d store %s", st.Bucket(), st.History(), st.BackingStore())
	}
	info := st.(*jetstream.KeyValueBucketStatus).StreamInfo()
	if info.Config.Name != natsclient.RoutingStream || info.Config.Storage != jetstream.FileStorage || info.Config.Replicas != 1 {
		t.Errorf("stream %s storage %v replicas %d", info.Config.Name, info.Config.Storage, info.Config.Replicas)
	}
	if got, err := natsclient.RoutingEpoch(ctx, js); err != nil || got != epoch {
		t.Fatalf("RoutingEpoch = %q %v, want %q", got, err, epoch)
	}

	// Later provisions, the same config and another, keep it.
	for _, cfg := range []natsclient.RoutingConfig{{}, {History: 5}, {History: 5}} {
		kv, err := natsclient.ProvisionRouting(ctx, js, cfg)
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Metadata()[natsclient.RoutingEpochKey]; got != epoch {
			t.Fatalf("provision %+v changed the epoch to %q, want %q", cfg, got, epoch)
		}
		if cfg.History != 0 && st.History() != int64(cfg.History) {
			t.Errorf("provision %+v: history %d", cfg, st.History())
		}
	}
	if got, _ := natsclient.RoutingEpoch(ctx, js); got != epoch {
		t.Fatalf("RoutingEpoch after provisions = %q, want %q", got, epoch)
	}

	// Changing the storage of an existing bucket is refused, and the
	// epoch stays.
	if _, err := natsclient.ProvisionRouting(ctx, js, natsclient.RoutingConfig{Storage: jetstream.MemoryStorage}); err == nil {
		t.Error("changing the bucket's storage was accepted")
	}
	if got, _ := natsclient.RoutingEpoch(ctx, js); got != epoch {
		t.Fatalf("RoutingEpoch after a refused provision = %q, want %q", got, epoch)
	}

	for _, bad := range []natsclient.RoutingConfig{{Replicas: 6}, {History: 65}, {Storage: 9}} {
		if _, err := natsclient.ProvisionRouting(ctx, js, bad); !errors.Is(err, natsclient.ErrInvalidOptions) {
			t.Errorf("%+v: %v, want ErrInvalidOptions", bad, err)
		}
	}
}

// TestProvisionRoutingRace: provisioners racing to create the bucket all
// succeed and agree on one epoch (the loser of the create retries as an
// update that keeps the winner's).
func TestProvisionRoutingRace(t *testing.T) {
	s := natstest.RunServer(t)
	ctx := testCtx(t)
	const n = 6
	epochs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		// One connection each, so the creates really race.
		_, js := natstest.MustConnect(t, s.ClientURL())
		wg.Go(func() {
			<-start
			kv, err := natsclient.ProvisionRouting(ctx, js, natsclient.RoutingConfig{})
			if err != nil {
				errs[i] = err
				return
			}
			st, err := kv.Status(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			epochs[i] = st.Metadata()[natsclient.RoutingEpochKey]
		})
	}
	close(start)
	wg.Wait()
	_, js := natstest.MustConnect(t, s.ClientURL())
	final, err := natsclient.RoutingEpoch(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if errs[i] != nil {
			t.Errorf("provisioner %d: %v", i, errs[i])
		} else if epochs[i] != final {
			t.Errorf("provisioner %d saw epoch %q, the bucket has %q", i, epochs[i], final)
		}
	}
}

// TestRoutingEpochLegacy: a bucket made before epochs has one derived from
// its stream's creation time, which the next provision pins.
func TestRoutingEpochLegacy(t *testing.T) {
	s := natstest.RunServer(t)
	_, js := natstest.MustConnect(t, s.ClientURL())
	ctx := testCtx(t)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: natsclient.RoutingBucket, History: 4}); err != nil {
		t.Fatal(err)
	}
	legacy, err := natsclient.RoutingEpoch(ctx, js)
	if err != nil || !strings.HasPrefix(legacy, "created-") {
		t.Fatalf("legacy epoch %q %v", legacy, err)
	}
	if again, _ := natsclient.RoutingEpoch(ctx, js); again != legacy {
		t.Fatalf("legacy epoch not stable: %q then %q", legacy, again)
	}
	kv, err := natsclient.ProvisionRouting(ctx, js, natsclient.RoutingConfig{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Metadata()[natsclient.RoutingEpochKey]; got != legacy {
		t.Fatalf("provision pinned %q, want the legacy epoch %q", got, legacy)
	}
	if st.History() != int64(natsclient.DefaultRoutingHistory) {
		t.Errorf("provision did not update the history: %d", st.History())
	}
}

// TestGets: the leader and the direct get on a KV stream: the latest
// value and its revision, a missing key, delete and purge markers, a
// missing stream, bad arguments.
func TestGets(t *testing.T) {
	s := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, s.ClientURL())
	ctx := testCtx(t)
	kv, err := natsclient.ProvisionRouting(ctx, js, natsclient.RoutingConfig{})
	if err != nil {
		t.Fatal(err)
	}
	type getFn func(ctx context.Context, nc *nats.Conn, stream, subject string) ([]byte, uint64, error)
	for name, get := range map[string]getFn{"leader": natsclient.LeaderGetLast, "direct": natsclient.DirectGetLast} {
		t.Run(name, func(t *testing.T) {
			key := "conv." + name
			subj := natsclient.RoutingSubject(key)
			if _, _, err := get(ctx, nc, natsclient.RoutingStream, subj); !errors.Is(err, natsclient.ErrNotFound) {
				t.Fatalf("missing key: %v, want ErrNotFound", err)
			}
			if _, err := kv.Put(ctx, key, []byte("one")); err != nil {
				t.Fatal(err)
			}
			rev, err := kv.Put(ctx, key, []byte("two"))
			if err != nil {
				t.Fatal(err)
			}
			data, seq, err := get(ctx, nc, natsclient.RoutingStream, subj)
			if err != nil || string(data) != "two" || seq != rev {
				t.Fatalf("latest: %q at %d, %v; want two at %d", data, seq, err, rev)
			}
			// Without a deadline of the caller's: DefaultTimeout applies.
			if data, _, err := get(context.Background(), nc, natsclient.RoutingStream, subj); err != nil || string(data) != "two" {
				t.Fatalf("without a deadline: %q %v", data, err)
			}

			if err := kv.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
			_, delSeq, err := get(ctx, nc, natsclient.RoutingStream, subj)
			if !errors.Is(err, natsclient.ErrDeleted) || delSeq <= rev {
				t.Fatalf("deleted: seq %d %v, want ErrDeleted after %d", delSeq, err, rev)
			}
			if _, err := kv.Put(ctx, key, []byte("three")); err != nil {
				t.Fatal(err)
			}
			if err := kv.Purge(ctx, key); err != nil {
				t.Fatal(err)
			}
			_, purgeSeq, err := get(ctx, nc, natsclient.RoutingStream, subj)
			if !errors.Is(err, natsclient.ErrDeleted) || purgeSeq <= delSeq {
				t.Fatalf("purged: seq %d %v, want ErrDeleted after %d", purgeSeq, err, delSeq)
			}

			if _, _, err := get(ctx, nc, "KV_ROUTING", "$KV.ROUTING.*"); !errors.Is(err, natsclient.ErrInvalidName) {
				t.Errorf("wildcard subject: %v", err)
			}
			if _, _, err := get(ctx, nc, "KV.ROUTING", subj); !errors.Is(err, natsclient.ErrInvalidName) {
				t.Errorf("bad stream: %v", err)
			}
		})
	}

	// A stream that does not exist: the leader get's API answers "stream
	// not found"; nobody answers a direct get.
	if _, _, err := natsclient.LeaderGetLast(ctx, nc, "NOPE", "a.b"); !errors.Is(err, natsclient.ErrStreamNotFound) {
		t.Errorf("leader get of a missing stream: %v, want ErrStreamNotFound", err)
	} else if ae := new(natsclient.APIError); !errors.As(err, &ae) || ae.ErrCode != natsclient.CodeStreamNotFound {
		t.Errorf("leader get of a missing stream carries no API error: %v", err)
	}
	if _, _, err := natsclient.DirectGetLast(ctx, nc, "NOPE", "a.b"); !errors.Is(err, natsclient.ErrUnavailable) {
		t.Errorf("direct get of a missing stream: %v, want ErrUnavailable", err)
	}
	// A stream that does not allow direct gets answers nobody either.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PLAIN", Subjects: []string{"plain.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	ack, err := js.Publish(ctx, "plain.x", []byte("p"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := natsclient.DirectGetLast(ctx, nc, "PLAIN", "plain.x"); !errors.Is(err, natsclient.ErrUnavailable) {
		t.Errorf("direct get without AllowDirect: %v, want ErrUnavailable", err)
	}
	if data, seq, err := natsclient.LeaderGetLast(ctx, nc, "PLAIN", "plain.x"); err != nil || string(data) != "p" || seq != ack.Sequence {
		t.Errorf("leader get of a plain stream: %q %d %v", data, seq, err)
	}

	// A closed connection is not mistaken for a missing key.
	nc2, _ := natstest.MustConnect(t, s.ClientURL())
	nc2.Close()
	if _, _, err := natsclient.LeaderGetLast(ctx, nc2, natsclient.RoutingStream, natsclient.RoutingSubject("x")); err == nil || errors.Is(err, natsclient.ErrNotFound) {
		t.Errorf("leader get on a closed connection: %v", err)
	}
}

// TestReadMirrorHealth: a bad region, a missing mirror, a stream of the
// mirror's name that is not a mirror, and a live mirror that catches up.
func TestReadMirrorHealth(t *testing.T) {
	s := natstest.RunServer(t)
	_, js := natstest.MustConnect(t, s.ClientURL())
	ctx := testCtx(t)

	if _, err := natsclient.ReadMirrorHealth(ctx, js, "eu.west"); !errors.Is(err, natsclient.ErrInvalidName) {
		t.Errorf("bad region: %v, want ErrInvalidName", err)
	}
	if _, err := natsclient.ReadMirrorHealth(ctx, js, "eu-west"); !errors.Is(err, natsclient.ErrStreamNotFound) {
		t.Errorf("no mirror: %v, want ErrStreamNotFound", err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: natsclient.MirrorStream("ap-south"), Subjects: []string{"fake.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := natsclient.ReadMirrorHealth(ctx, js, "ap-south"); !errors.Is(err, natsclient.ErrNotMirror) {
		t.Errorf("not a mirror: %v, want ErrNotMirror", err)
	}

	kv, err := natsclient.ProvisionRouting(ctx, js, natsclient.RoutingConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"conv.a", "conv.b", "conv.c"} {
		if _, err := kv.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cnats.ProvisionMirror(ctx, js, "eu-west", 1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the mirror catches up", func() (bool, string) {
		h, err := natsclient.ReadMirrorHealth(ctx, js, "eu-west")
		if err != nil {
			return false, err.Error()
		}
		st, err := js.Stream(ctx, natsclient.MirrorStream("eu-west"))
		if err != nil {
			return false, err.Error()
		}
		n := st.CachedInfo().State.Msgs
		return h.Err == "" && h.Active >= 0 && h.Lag == 0 && n == 3 && h.Fresh(0, time.Minute),
			fmt.Sprintf("health %+v, %d messages", h, n)
	})
	// Its own stream name reads the mirror's copy.
	nc, _ := natstest.MustConnect(t, s.ClientURL())
	if data, _, err := natsclient.DirectGetLast(ctx, nc, natsclient.MirrorStream("eu-west"), natsclient.RoutingSubject("conv.b")); err != nil || string(data) != "conv.b" {
		t.Errorf("direct get from the mirror: %q %v", data, err)
	}
}

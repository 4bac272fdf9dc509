package cnats_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// eventually polls f every 20ms until it returns nil or the deadline passes,
// then fails the test with f's last error.
func eventually(tb testing.TB, within time.Duration, f func() error) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("condition not met within %v: %v", within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testCtx bounds a whole test's operations. TestCluster shares one across
// its subtests in order (kill, failover, restart, catch-up): on a loaded
// 2-core box 20 s ran out before its last ones; the waits themselves are
// bounded by eventually.
func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

func TestServer(t *testing.T) {
	t.Run("starts with JetStream and sync always by default", func(t *testing.T) {
		s := natstest.RunServer(t)
		if !s.Running() {
			t.Fatal("not running")
		}
		if !strings.HasPrefix(s.ClientURL(), "nats://127.0.0.1:") || strings.HasSuffix(s.ClientURL(), ":0") {
			t.Fatalf("ClientURL = %q", s.ClientURL())
		}
		if !strings.HasPrefix(s.Name(), "cutover-") {
			t.Fatalf("Name = %q", s.Name())
		}
		if !s.Inner().JetStreamEnabled() {
			t.Fatal("JetStream not enabled")
		}
		if jc := s.Inner().JetStreamConfig(); jc == nil || !jc.SyncAlways {
			t.Fatalf("JetStreamConfig.SyncAlways not set: %+v", jc)
		}
		if jc := s.Inner().JetStreamConfig(); jc.MaxMemory != cnats.DefaultMaxMemory || jc.MaxStore != cnats.DefaultMaxStore {
			t.Fatalf("limits = %d/%d", jc.MaxMemory, jc.MaxStore)
		}
		_, js := natstest.MustConnect(t, s.ClientURL())
		if _, err := js.AccountInfo(testCtx(t)); err != nil {
			t.Fatalf("AccountInfo: %v", err)
		}
	})

	t.Run("sync always can be turned off", func(t *testing.T) {
		s, err := cnats.StartServer(cnats.Options{SyncAlways: cnats.Bool(false), SyncInterval: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Shutdown()
		jc := s.Inner().JetStreamConfig()
		if jc.SyncAlways || jc.SyncInterval != 5*time.Second {
			t.Fatalf("SyncAlways=%v SyncInterval=%v", jc.SyncAlways, jc.SyncInterval)
		}
	})

	t.Run("restart keeps a KV value and the URL", func(t *testing.T) {
		s := natstest.RunServer(t)
		url := s.ClientURL()
		nc, js := natstest.MustConnect(t, url)
		ctx := testCtx(t)
		kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "T"})
		if err != nil {
			t.Fatal(err)
		}
		rev, err := kv.Put(ctx, "k", []byte("before"))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Restart(); err != nil {
			t.Fatalf("Restart: %v", err)
		}
		if got := s.ClientURL(); got != url {
			t.Fatalf("URL changed: %q -> %q", url, got)
		}
		if !s.Running() {
			t.Fatal("not running after Restart")
		}

		// A fresh connection to the same URL sees the value.
		_, js2 := natstest.MustConnect(t, url)
		kv2, err := js2.KeyValue(ctx, "T")
		if err != nil {
			t.Fatal(err)
		}
		e, err := kv2.Get(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if string(e.Value()) != "before" || e.Revision() != rev {
			t.Fatalf("got %q rev %d, want %q rev %d", e.Value(), e.Revision(), "before", rev)
		}
		// The old connection reconnects by itself.
		eventually(t, 10*time.Second, func() error {
			if !nc.IsConnected() {
				return errors.New("old connection not reconnected")
			}
			_, err := kv.Get(ctx, "k")
			return err
		})
	})

	t.Run("stop then restart", func(t *testing.T) {
		s := natstest.RunServer(t)
		s.Stop()
		s.Stop() // idempotent
		if s.Running() {
			t.Fatal("running after Stop")
		}
		if _, err := os.Stat(s.StoreDir()); err != nil {
			t.Fatalf("Stop removed the temp store: %v", err)
		}
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		if !s.Running() {
			t.Fatal("not running after Restart")
		}
	})

	t.Run("shutdown removes a temp store, keeps a given one", func(t *testing.T) {
		tmp, err := cnats.StartServer(cnats.Options{})
		if err != nil {
			t.Fatal(err)
		}
		tmp.Shutdown()
		tmp.Shutdown() // idempotent
		if _, err := os.Stat(tmp.StoreDir()); !os.IsNotExist(err) {
			t.Fatalf("temp store still there: %v", err)
		}
		if err := tmp.Restart(); !errors.Is(err, cnats.ErrClosed) {
			t.Fatalf("Restart after Shutdown = %v, want ErrClosed", err)
		}

		dir := filepath.Join(t.TempDir(), "store")
		given, err := cnats.StartServer(cnats.Options{StoreDir: dir, Name: "given"})
		if err != nil {
			t.Fatal(err)
		}
		given.Shutdown()
		if _, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil {
			t.Fatalf("given store removed: %v", err)
		}
		if err := given.Restart(); err != nil {
			t.Fatalf("Restart of a given store after Shutdown: %v", err)
		}
		given.Shutdown()
	})

	t.Run("port in use fails fast", func(t *testing.T) {
		s := natstest.RunServer(t)
		port, err := strconv.Atoi(s.ClientURL()[strings.LastIndex(s.ClientURL(), ":")+1:])
		if err != nil {
			t.Fatal(err)
		}
		_, err = cnats.StartServer(cnats.Options{Port: port})
		if !errors.Is(err, cnats.ErrStartFailed) {
			t.Fatalf("err = %v, want ErrStartFailed", err)
		}
		t.Logf("%v", err)
	})

	t.Run("rejects bad options", func(t *testing.T) {
		for _, o := range []cnats.Options{
			{Host: "0.0.0.0"},
			{Host: "10.1.2.3"},
			{Port: -2},
			{Routes: []string{"nats-route://127.0.0.1:1"}},
			{Name: "has space"},
			{ClusterName: "c", Routes: []string{"::bad"}},
		} {
			if _, err := cnats.StartServer(o); !errors.Is(err, cnats.ErrInvalidOptions) {
				t.Errorf("StartServer(%+v) = %v, want ErrInvalidOptions", o, err)
			}
		}
	})
}

func TestConnect(t *testing.T) {
	s := natstest.RunServer(t)

	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, _, err := cnats.Connect(ctx, s.ClientURL()); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})

	t.Run("nobody listening", func(t *testing.T) {
		ports, err := cnats.FreePorts(cnats.DefaultHost, 1)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		if _, _, err := cnats.Connect(ctx, "nats://127.0.0.1:"+strconv.Itoa(ports[0])); err == nil {
			t.Fatal("connected to nothing")
		}
	})
}

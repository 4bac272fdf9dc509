package cnats_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

func TestMirror(t *testing.T) {
	s := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, s.ClientURL())
	ctx := testCtx(t)

	t.Run("needs the origin", func(t *testing.T) {
		if _, err := cnats.ProvisionMirror(ctx, js, "eu-west", 0); !errors.Is(err, cnats.ErrStreamNotFound) {
			t.Fatalf("err = %v, want ErrStreamNotFound", err)
		}
	})

	kv, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rev1, err := kv.Put(ctx, "early", []byte("before the mirror"))
	if err != nil {
		t.Fatal(err)
	}
	const region = "eu-west"
	st, err := cnats.ProvisionMirror(ctx, js, region, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cnats.ProvisionMirror(ctx, js, region, 0); err != nil {
		t.Fatalf("second provision: %v", err)
	}
	mirror := cnats.MirrorStream(region)

	t.Run("config", func(t *testing.T) {
		if cnats.MirrorBucket(region) != "ROUTING_MIRROR_eu-west" || mirror != "KV_ROUTING_MIRROR_eu-west" {
			t.Fatalf("names %q %q", cnats.MirrorBucket(region), mirror)
		}
		c := st.CachedInfo().Config
		if c.Name != mirror || c.Mirror == nil || c.Mirror.Name != cnats.RoutingStream ||
			!c.AllowDirect || c.Replicas != 1 || c.MaxMsgsPerSubject != int64(cnats.DefaultRoutingHistory) {
			t.Fatalf("mirror config: %+v mirror %+v", c, c.Mirror)
		}
		// ProvisionMirror asks for MirrorDirect false; nats-server 2.15
		// replaces it with the origin's AllowDirect (true for KV) because the
		// origin is visible. This pins the documented surprise: if a server
		// upgrade starts honouring false, this fails and the ProvisionMirror
		// doc must change.
		if !c.MirrorDirect {
			t.Fatalf("MirrorDirect = false: the server now honours it; update ProvisionMirror's doc")
		}
		// And the mirror really joins the origin's direct-get queue group:
		// two queue subscriptions (origin and mirror) on its subject.
		eventually(t, 10*time.Second, func() error {
			sz, err := s.Inner().Subsz(&server.SubszOptions{
				Subscriptions: true,
				Test:          "$JS.API.DIRECT.GET." + cnats.RoutingStream + "." + cnats.RoutingSubject("early"),
			})
			if err != nil {
				return err
			}
			n := 0
			for _, sub := range sz.Subs {
				if sub.Queue != "" && strings.HasPrefix(sub.Subject, "$JS.API.DIRECT.GET."+cnats.RoutingStream+".") {
					n++
				}
			}
			if n != 2 {
				return fmt.Errorf("%d direct-get queue subscriptions on the origin, want 2", n)
			}
			return nil
		})
	})

	t.Run("receives writes, readable by direct get", func(t *testing.T) {
		// Written before the mirror existed.
		eventually(t, 10*time.Second, func() error {
			data, seq, err := cnats.DirectGetLast(ctx, nc, mirror, cnats.RoutingSubject("early"))
			if err != nil {
				return err
			}
			if string(data) != "before the mirror" || seq != rev1 {
				return fmt.Errorf("got %q seq %d", data, seq)
			}
			return nil
		})
		rev, err := kv.Put(ctx, "doc", []byte("v1"))
		if err != nil {
			t.Fatal(err)
		}
		rev, err = kv.Update(ctx, "doc", []byte("v2"), rev)
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, func() error {
			data, seq, err := cnats.DirectGetLast(ctx, nc, mirror, cnats.RoutingSubject("doc"))
			if err != nil {
				return err
			}
			if string(data) != "v2" || seq != rev {
				return fmt.Errorf("got %q seq %d, want v2 seq %d", data, seq, rev)
			}
			return nil
		})
		if _, _, err := cnats.DirectGetLast(ctx, nc, mirror, cnats.RoutingSubject("never")); !errors.Is(err, cnats.ErrNotFound) {
			t.Fatalf("missing key on mirror: %v", err)
		}
		// The mirror keeps the origin's sequence numbers, so the leader get
		// on the mirror agrees too.
		if data, seq, err := cnats.LeaderGetLast(ctx, nc, mirror, cnats.RoutingSubject("doc")); err != nil || string(data) != "v2" || seq != rev {
			t.Fatalf("leader get on mirror: %q %d %v", data, seq, err)
		}

		if err := kv.Delete(ctx, "doc"); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, func() error {
			_, _, err := cnats.DirectGetLast(ctx, nc, mirror, cnats.RoutingSubject("doc"))
			if !errors.Is(err, cnats.ErrDeleted) {
				return fmt.Errorf("err = %v, want ErrDeleted", err)
			}
			return nil
		})
		if err := kv.Purge(ctx, "early"); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, func() error {
			_, _, err := cnats.DirectGetLast(ctx, nc, mirror, cnats.RoutingSubject("early"))
			if !errors.Is(err, cnats.ErrDeleted) {
				return fmt.Errorf("err = %v, want ErrDeleted", err)
			}
			return nil
		})
	})

	t.Run("health", func(t *testing.T) {
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mirror == nil || info.Mirror.Name != cnats.RoutingStream {
			t.Fatalf("stream info has no mirror info: %+v", info.Mirror)
		}
		eventually(t, 10*time.Second, func() error {
			h, err := cnats.ReadMirrorHealth(ctx, js, region)
			if err != nil {
				return err
			}
			if h.Err != "" || h.Lag != 0 || h.Active < 0 || !h.Fresh(0, 5*time.Second) {
				return fmt.Errorf("health %+v", h)
			}
			return nil
		})
	})

	t.Run("health errors", func(t *testing.T) {
		if _, err := cnats.ReadMirrorHealth(ctx, js, "nowhere"); !errors.Is(err, cnats.ErrStreamNotFound) {
			t.Fatalf("missing mirror: %v", err)
		}
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: cnats.MirrorStream("plain"), Subjects: []string{"plain"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := cnats.ReadMirrorHealth(ctx, js, "plain"); !errors.Is(err, cnats.ErrNotMirror) {
			t.Fatalf("plain stream: %v", err)
		}
	})

	t.Run("invalid regions", func(t *testing.T) {
		for _, r := range []string{"", "eu.west", "eu west", "eu*", "eu>", "ü", string(make([]byte, 65))} {
			if _, err := cnats.ProvisionMirror(ctx, js, r, 0); !errors.Is(err, cnats.ErrInvalidName) {
				t.Errorf("ProvisionMirror(%q) = %v", r, err)
			}
			if _, err := cnats.ReadMirrorHealth(ctx, js, r); !errors.Is(err, cnats.ErrInvalidName) {
				t.Errorf("ReadMirrorHealth(%q) = %v", r, err)
			}
		}
	})
}

func TestMirrorHealthFresh(t *testing.T) {
	for _, c := range []struct {
		h    cnats.MirrorHealth
		want bool
	}{
		{cnats.MirrorHealth{Lag: 0, Active: time.Second}, true},
		{cnats.MirrorHealth{Lag: 3, Active: time.Second}, false},
		{cnats.MirrorHealth{Lag: 0, Active: -1}, false},
		{cnats.MirrorHealth{Lag: 0, Active: 10 * time.Second}, false},
		{cnats.MirrorHealth{Lag: 0, Active: time.Second, Err: "boom"}, false},
	} {
		if got := c.h.Fresh(2, 5*time.Second); got != c.want {
			t.Errorf("%+v.Fresh = %v, want %v", c.h, got, c.want)
		}
	}
}

// TestMirrorPersistMode: a new one-replica mirror persists asynchronously
// (a cache of ROUTING: ProvisionMirror); after a restart that lost what it
// held it mirrors ROUTING again from the start; an existing synced mirror
// keeps its mode; more replicas of an asynchronous mirror are refused and
// change nothing.
func TestMirrorPersistMode(t *testing.T) {
	s, err := cnats.StartServer(cnats.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	nc, js := natstest.MustConnect(t, s.ClientURL())
	ctx := testCtx(t)
	kv, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{})
	if err != nil {
		t.Fatal(err)
	}
	const region = "eu-west"
	st, err := cnats.ProvisionMirror(ctx, js, region, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.CachedInfo().Config.PersistMode; m != jetstream.AsyncPersistMode {
		t.Fatalf("persist mode %v, want async", m)
	}
	if _, err := cnats.ProvisionMirror(ctx, js, region, 3); !errors.Is(err, cnats.ErrInvalidOptions) {
		t.Fatalf("three replicas of an asynchronous mirror: %v", err)
	}
	if info, err := js.Stream(ctx, cnats.MirrorStream(region)); err != nil || info.CachedInfo().Config.Replicas != 1 {
		t.Fatalf("after the refused provision: %v", err)
	}
	rev, err := kv.Put(ctx, "doc", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	caughtUp := func(want string, wantRev uint64) {
		t.Helper()
		eventually(t, 20*time.Second, func() error {
			data, seq, err := cnats.DirectGetLast(ctx, nc, cnats.MirrorStream(region), cnats.RoutingSubject("doc"))
			if err != nil {
				return err
			}
			if string(data) != want || seq != wantRev {
				return fmt.Errorf("mirror has %q at %d, want %q at %d", data, seq, want, wantRev)
			}
			return nil
		})
	}
	caughtUp("v1", rev)

	// The worst an unsynced mirror can lose: everything it held.
	s.Stop()
	blocks := filepath.Join(s.StoreDir(), "jetstream", "$G", "streams", cnats.MirrorStream(region), "msgs")
	if _, err := os.Stat(blocks); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(blocks); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	caughtUp("v1", rev)
	rev, err = kv.Update(ctx, "doc", []byte("v2"), rev)
	if err != nil {
		t.Fatal(err)
	}
	caughtUp("v2", rev)

	// A mirror provisioned before mirrors were asynchronous keeps its mode.
	const synced = "ap-south"
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: cnats.MirrorStream(synced), Mirror: &jetstream.StreamSource{Name: cnats.RoutingStream},
		MaxMsgsPerSubject: int64(cnats.DefaultRoutingHistory), AllowDirect: true, AllowRollup: true, DenyDelete: true,
	}); err != nil {
		t.Fatal(err)
	}
	st, err = cnats.ProvisionMirror(ctx, js, synced, 1)
	if err != nil {
		t.Fatalf("provisioning an existing synced mirror: %v", err)
	}
	if m := st.CachedInfo().Config.PersistMode; m != jetstream.DefaultPersistMode {
		t.Fatalf("persist mode of an existing synced mirror %v, want default", m)
	}
}

package cnats_test

import (
	"errors"
	"strings"
	"testing"

	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

func TestProvisionRouting(t *testing.T) {
	s := natstest.RunServer(t)
	_, js := natstest.MustConnect(t, s.ClientURL())
	ctx := testCtx(t)

	kv, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if kv.Bucket() != cnats.RoutingBucket {
		t.Fatalf("bucket %q", kv.Bucket())
	}
	rev, err := kv.Create(ctx, "doc", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("idempotent", func(t *testing.T) {
		for range 2 {
			kv2, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{})
			if err != nil {
				t.Fatalf("second provision: %v", err)
			}
			e, err := kv2.Get(ctx, "doc")
			if err != nil || e.Revision() != rev {
				t.Fatalf("existing key after re-provision: %v %v", e, err)
			}
		}
		st, err := js.Stream(ctx, cnats.RoutingStream)
		if err != nil {
			t.Fatal(err)
		}
		c := st.CachedInfo().Config
		if c.Replicas != 1 || c.MaxMsgsPerSubject != int64(cnats.DefaultRoutingHistory) || c.Storage != jetstream.FileStorage || !c.AllowDirect {
			t.Fatalf("config: replicas %d history %d storage %v direct %v", c.Replicas, c.MaxMsgsPerSubject, c.Storage, c.AllowDirect)
		}
	})

	t.Run("compare and swap on the provisioned bucket", func(t *testing.T) {
		if _, err := kv.Update(ctx, "doc", []byte("stale"), rev+100); !errors.Is(err, jetstream.ErrKeyExists) {
			t.Fatalf("stale Update = %v, want ErrKeyExists", err)
		}
		if _, err := kv.Update(ctx, "doc", []byte("v2"), rev); err != nil {
			t.Fatalf("Update: %v", err)
		}
	})

	t.Run("rejects bad config", func(t *testing.T) {
		for _, cfg := range []cnats.RoutingConfig{{Replicas: 6}, {Replicas: -1}, {History: 65}, {Storage: 7}} {
			if _, err := cnats.ProvisionRouting(ctx, js, cfg); !errors.Is(err, cnats.ErrInvalidOptions) {
				t.Errorf("ProvisionRouting(%+v) = %v, want ErrInvalidOptions", cfg, err)
			}
		}
	})
}

func TestDefaultReplicas(t *testing.T) {
	for nodes, want := range map[int]int{-1: 1, 0: 1, 1: 1, 2: 2, 3: 3, 5: 3} {
		if got := cnats.DefaultReplicas(nodes); got != want {
			t.Errorf("DefaultReplicas(%d) = %d, want %d", nodes, got, want)
		}
	}
}

// TestRoutingEpoch: a new ROUTING bucket gets an epoch that every later
// provision keeps; a bucket provisioned before epochs existed gets one
// from its stream's creation time, pinned by the next provision; a bucket
// deleted and created again (revisions restart) has another.
func TestRoutingEpoch(t *testing.T) {
	s := natstest.RunServer(t)
	_, js := natstest.MustConnect(t, s.ClientURL())
	ctx := testCtx(t)
	// Deleting an account's last stream makes nats-server remove the
	// account's empty streams directory in a goroutine of its own (2.15.2
	// stream.go, stop with deleteFlag), which races with the next stream's
	// mkdir: "error creating store for stream" (10049), about one run in a
	// hundred on a loaded box. Another stream keeps the directory.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cnats.RoutingEpoch(ctx, js); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("epoch of no bucket: %v", err)
	}
	if e, err := cnats.ServedEpoch(ctx, js); err != nil || e != "" {
		t.Fatalf("served epoch of no bucket: %q %v", e, err)
	}
	if _, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{}); err != nil {
		t.Fatal(err)
	}
	first, err := cnats.RoutingEpoch(ctx, js)
	if err != nil || len(first) != 32 {
		t.Fatalf("epoch %q, %v", first, err)
	}
	if _, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{History: 10}); err != nil {
		t.Fatal(err)
	}
	if e, _ := cnats.RoutingEpoch(ctx, js); e != first {
		t.Fatalf("epoch after a second provision %q, want %q", e, first)
	}

	if err := js.DeleteKeyValue(ctx, cnats.RoutingBucket); err != nil {
		t.Fatal(err)
	}
	if _, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{}); err != nil {
		t.Fatal(err)
	}
	if e, _ := cnats.RoutingEpoch(ctx, js); e == first || e == "" {
		t.Fatalf("epoch of a bucket created again %q, the old one %q", e, first)
	}

	// Provisioned before epochs: no metadata.
	if err := js.DeleteKeyValue(ctx, cnats.RoutingBucket); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: cnats.RoutingBucket}); err != nil {
		t.Fatal(err)
	}
	legacy, err := cnats.RoutingEpoch(ctx, js)
	if err != nil || !strings.HasPrefix(legacy, "created-") {
		t.Fatalf("epoch of a bucket without one %q, %v", legacy, err)
	}
	kv, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.Metadata()[cnats.RoutingEpochKey] != legacy {
		t.Fatalf("provisioning a bucket without an epoch pinned %v (%v), want %q", st.Metadata(), err, legacy)
	}
}

package cnats_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natstest"
)

func TestGetLast(t *testing.T) {
	s := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, s.ClientURL())
	ctx := testCtx(t)
	kv, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{})
	if err != nil {
		t.Fatal(err)
	}

	gets := map[string]func(stream, subject string) ([]byte, uint64, error){
		"leader": func(stream, subject string) ([]byte, uint64, error) {
			return cnats.LeaderGetLast(ctx, nc, stream, subject)
		},
		"direct": func(stream, subject string) ([]byte, uint64, error) {
			return cnats.DirectGetLast(ctx, nc, stream, subject)
		},
	}
	for name, get := range gets {
		t.Run(name, func(t *testing.T) {
			key := "res-" + name
			subj := cnats.RoutingSubject(key)

			if _, _, err := get(cnats.RoutingStream, subj); !errors.Is(err, cnats.ErrNotFound) {
				t.Fatalf("missing key: err = %v, want ErrNotFound", err)
			}

			if _, err := kv.Put(ctx, key, []byte("one")); err != nil {
				t.Fatal(err)
			}
			rev2, err := kv.Put(ctx, key, []byte("two"))
			if err != nil {
				t.Fatal(err)
			}
			data, seq, err := get(cnats.RoutingStream, subj)
			if err != nil || string(data) != "two" || seq != rev2 {
				t.Fatalf("latest: %q seq %d err %v, want %q seq %d", data, seq, err, "two", rev2)
			}

			if err := kv.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
			e, err := kv.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, seq, err = get(cnats.RoutingStream, subj)
			if !errors.Is(err, cnats.ErrDeleted) || seq <= rev2 {
				t.Fatalf("after delete: seq %d err %v, want ErrDeleted after %d (bucket %v)", seq, err, rev2, e.Bucket())
			}

			rev3, err := kv.Put(ctx, key, []byte("three"))
			if err != nil {
				t.Fatal(err)
			}
			if data, seq, err := get(cnats.RoutingStream, subj); err != nil || string(data) != "three" || seq != rev3 {
				t.Fatalf("after re-put: %q seq %d err %v", data, seq, err)
			}
			if err := kv.Purge(ctx, key); err != nil {
				t.Fatal(err)
			}
			if _, _, err := get(cnats.RoutingStream, subj); !errors.Is(err, cnats.ErrDeleted) {
				t.Fatalf("after purge: err = %v, want ErrDeleted", err)
			}
		})
	}

	t.Run("missing stream", func(t *testing.T) {
		if _, _, err := cnats.LeaderGetLast(ctx, nc, "NOPE", "x"); !errors.Is(err, cnats.ErrStreamNotFound) {
			t.Fatalf("leader get: err = %v, want ErrStreamNotFound", err)
		}
		if _, _, err := cnats.DirectGetLast(ctx, nc, "NOPE", "x"); !errors.Is(err, cnats.ErrUnavailable) {
			t.Fatalf("direct get: err = %v, want ErrUnavailable", err)
		}
	})

	t.Run("invalid names", func(t *testing.T) {
		for _, c := range [][2]string{{"", "a"}, {"a.b", "a"}, {"S", ""}, {"S", "a.*"}, {"S", "a.>"}, {"S", "a b"}, {"S", "a..b"}} {
			if _, _, err := cnats.LeaderGetLast(ctx, nc, c[0], c[1]); !errors.Is(err, cnats.ErrInvalidName) {
				t.Errorf("LeaderGetLast(%q, %q) = %v", c[0], c[1], err)
			}
			if _, _, err := cnats.DirectGetLast(ctx, nc, c[0], c[1]); !errors.Is(err, cnats.ErrInvalidName) {
				t.Errorf("DirectGetLast(%q, %q) = %v", c[0], c[1], err)
			}
		}
	})
}

// LeaderGetNext walks one key's revisions, skipping other keys' messages
// between them, and says where the key has no more.
func TestLeaderGetNext(t *testing.T) {
	s := natstest.RunServer(t)
	nc, js := natstest.MustConnect(t, s.ClientURL())
	ctx := testCtx(t)
	kv, err := cnats.ProvisionRouting(ctx, js, cnats.RoutingConfig{})
	if err != nil {
		t.Fatal(err)
	}
	subj := cnats.RoutingSubject("walk")
	r1, err := kv.Put(ctx, "walk", []byte("one"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "other", []byte("x")); err != nil {
		t.Fatal(err)
	}
	r2, err := kv.Put(ctx, "walk", []byte("two"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for seq := uint64(1); ; {
		data, at, stored, err := cnats.LeaderGetNext(ctx, nc, cnats.RoutingStream, subj, seq)
		if errors.Is(err, cnats.ErrNotFound) {
			break
		}
		if err != nil || stored.IsZero() {
			t.Fatalf("from %d: at %d stored %v err %v", seq, at, stored, err)
		}
		got = append(got, fmt.Sprintf("%d=%s", at, data))
		seq = at + 1
	}
	if want := []string{fmt.Sprintf("%d=one", r1), fmt.Sprintf("%d=two", r2)}; !slices.Equal(got, want) {
		t.Fatalf("walk: %v, want %v", got, want)
	}
	if err := kv.Delete(ctx, "walk"); err != nil {
		t.Fatal(err)
	}
	if _, at, _, err := cnats.LeaderGetNext(ctx, nc, cnats.RoutingStream, subj, r2+1); !errors.Is(err, cnats.ErrDeleted) || at <= r2 {
		t.Fatalf("the delete marker: at %d err %v, want ErrDeleted after %d", at, err, r2)
	}
	if _, _, _, err := cnats.LeaderGetNext(ctx, nc, "NOPE", "x", 1); !errors.Is(err, cnats.ErrStreamNotFound) {
		t.Fatalf("missing stream: %v", err)
	}
}

package store_test

import (
	"context"
	"testing"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contracttest"
	"github.com/cutover/cutover/services/participant"
	"github.com/cutover/cutover/services/store"
)

// TestKitOverPebble runs the conformance kit against the participant kit
// over the Pebble store (participant.Storage).
func TestKitOverPebble(t *testing.T) {
	contracttest.Run(t, func(t *testing.T) contracttest.Harness {
		mk := func() *participant.Participant {
			st, err := store.Open(store.Options{FS: vfs.NewMem()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return participant.New("kit", st, participant.Options{})
		}
		src, dst := mk(), mk()
		return contracttest.Harness{Source: src, SourceUser: contracttest.KitUser(src), Target: dst, TargetUser: contracttest.KitUser(dst)}
	})
}

// Prefetch answers each id as a point read would: present ones with their
// record, absent ones (before, between and after the stored keys, named
// twice) as absent, and what the transaction wrote before stays its own.
func TestPrefetchReadsAsGet(t *testing.T) {
	st, err := store.Open(store.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	const res = "conv/prefetch"
	put := func(tx participant.Tx, id string, seq uint64) {
		t.Helper()
		if err := tx.Put(contract.Record{ID: id, Kind: "note", Version: 1, Seq: seq, CreatedAt: 1, Data: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Update(ctx, res, func(tx participant.Tx) error {
		put(tx, "b", 1)
		put(tx, "d", 2)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	err = st.Update(ctx, res, func(tx participant.Tx) error {
		put(tx, "c", 3) // written by this txn before the prefetch
		pf, ok := tx.(participant.Prefetcher)
		if !ok {
			t.Fatal("the Pebble store's Tx is no Prefetcher")
		}
		if err := pf.Prefetch([]string{"e", "d", "a", "b", "c", "d", "zz"}); err != nil {
			return err
		}
		for id, want := range map[string]bool{"a": false, "b": true, "c": true, "d": true, "e": false, "zz": false} {
			rec, found, err := tx.Get(id)
			if err != nil {
				return err
			}
			if found != want || (found && string(rec.Data) != id) {
				t.Errorf("%s: found %v (%q), want %v", id, found, rec.Data, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A resource with no record: every id absent.
	if err := st.Update(ctx, "conv/empty", func(tx participant.Tx) error {
		if err := tx.(participant.Prefetcher).Prefetch([]string{"x", "y"}); err != nil {
			return err
		}
		if _, found, err := tx.Get("x"); found || err != nil {
			t.Errorf("x in an empty resource: %v, %v", found, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

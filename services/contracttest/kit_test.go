package contracttest_test

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contracttest"
	"github.com/cutover/cutover/services/store"
)

// openStore opens a store on an in-memory filesystem, closed with the test.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(store.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// storeHarness runs the kit against StoreParticipant itself: the user path
// is the store's Put, Delete and Get.
func storeHarness(t *testing.T) contracttest.Harness {
	src, dst := openStore(t), openStore(t)
	routing := contracttest.NewRouting()
	return contracttest.Harness{
		SourceRegion: "src", TargetRegion: "dst", Route: routing.Route,
		Source: services.NewStoreParticipant("kit", src, services.StoreParticipantOptions{KeepOnCleanup: services.RoutingCleanupGuard(routing, "src")}),
		Target: services.NewStoreParticipant("kit", dst, services.StoreParticipantOptions{KeepOnCleanup: services.RoutingCleanupGuard(routing, "dst")}),
		Write: func(resource, id string, data []byte, refs []string) (contract.Record, error) {
			rec := store.Record{ID: id, Kind: "note", Data: data, Refs: refs}
			got, err := src.Put(resource, rec, true)
			if errors.Is(err, store.ErrExists) {
				got, err = src.Put(resource, rec, false)
			}
			return got, err
		},
		Delete: func(resource, id string) error {
			_, err := src.Delete(resource, id)
			return err
		},
		Read: func(resource, id string) (contract.Record, bool, error) {
			rec, err := dst.Get(resource, id)
			if errors.Is(err, store.ErrNotFound) {
				return contract.Record{}, false, nil
			}
			return rec, err == nil, err
		},
	}
}

func TestStoreParticipant(t *testing.T) {
	contracttest.Run(t, storeHarness)
}

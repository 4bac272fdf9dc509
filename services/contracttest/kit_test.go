package contracttest_test

import (
	"testing"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/cutover/cutover/services"
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

// storeHarness runs the kit against StoreParticipant itself.
func storeHarness(t *testing.T) contracttest.Harness {
	src, dst := openStore(t), openStore(t)
	return contracttest.Harness{
		Source: services.NewStoreParticipant("kit", src, services.StoreParticipantOptions{}), SourceUser: contracttest.StoreUser(src),
		Target: services.NewStoreParticipant("kit", dst, services.StoreParticipantOptions{}), TargetUser: contracttest.StoreUser(dst),
	}
}

func TestStoreParticipant(t *testing.T) {
	contracttest.Run(t, storeHarness)
}

package store_test

import (
	"testing"

	"github.com/cockroachdb/pebble/vfs"

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

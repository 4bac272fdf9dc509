// Package kittest adapts the chat services to the contract conformance kit
// (services/contracttest). It is imported by tests only.
package kittest

import (
	"context"
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/chat/internal/core"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contracttest"
	"github.com/cutover/cutover/services/store"
)

// Keep is a cleanup guard (services.StoreParticipantOptions.KeepOnCleanup).
type Keep = func(ctx context.Context, resource string) (bool, error)

// Factory returns a contracttest.Factory for a chat service: build makes
// the service over a store, its Cleanup guarded by keep (the kit's routing
// through services.RoutingCleanupGuard), and returns its contract and its
// core. The kit's
// opaque records are written as records of kind through the core's user
// path (the decision-applying Create, Update and Delete every operation of
// the service goes through) with an Allow decision, so the store's fence is
// what restricts them; Read reads the target's user read path.
func Factory(kind string, build func(st *store.Store, keep Keep) (contract.Participant, *core.Core)) contracttest.Factory {
	return func(t *testing.T) contracttest.Harness {
		open := func() *store.Store {
			st, err := store.Open(store.Options{FS: vfs.NewMem()})
			if err != nil {
				t.Fatalf("store.Open: %v", err)
			}
			t.Cleanup(func() {
				if err := st.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
					t.Errorf("store.Close: %v", err)
				}
			})
			return st
		}
		routing := contracttest.NewRouting()
		src, srcCore := build(open(), services.RoutingCleanupGuard(routing, "source"))
		tgt, tgtCore := build(open(), services.RoutingCleanupGuard(routing, "target"))
		var allow kvrouting.Decision
		ctx := context.Background()
		return contracttest.Harness{
			SourceRegion: "source", TargetRegion: "target", Route: routing.Route,
			Source: src,
			Target: tgt,
			Write: func(res, id string, data []byte, refs []string) (contract.Record, error) {
				r, err := srcCore.Upsert(ctx, allow, res, store.Record{ID: id, Kind: kind, Data: data, Refs: refs})
				if err != nil {
					return contract.Record{}, services.ToError(err)
				}
				return r, nil
			},
			Delete: func(res, id string) error {
				_, err := srcCore.Delete(ctx, allow, res, id)
				return err
			},
			Read: func(res, id string) (contract.Record, bool, error) {
				r, err := tgtCore.Get(ctx, res, id)
				if err != nil {
					if services.ToError(err).Code == contract.CodeNotFound {
						return contract.Record{}, false, nil
					}
					return contract.Record{}, false, err
				}
				return r, true, nil
			},
		}
	}
}

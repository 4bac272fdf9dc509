// Package kittest adapts the chat services to the contract conformance kit
// (services/contracttest). It is imported by tests only.
package kittest

import (
	"context"
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/cutover/cutover/app/chat/internal/core"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contracttest"
	"github.com/cutover/cutover/services/store"
)

// Factory returns a contracttest.Factory for a chat service: build makes
// the service over a store and returns its contract and its core. The
// kit's opaque records are written as records of kind through the core's
// user path (the decision-applying Create, Update and Delete every
// operation of the service goes through) with an Allow decision carrying
// the kit's authority, so the store's admission is what restricts them;
// Read reads the core's user read path, routed the same way.
func Factory(kind string, build func(st *store.Store) (contract.Participant, *core.Core)) contracttest.Factory {
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
		src, srcCore := build(open())
		tgt, tgtCore := build(open())
		return contracttest.Harness{Source: src, SourceUser: userPath(kind, srcCore), Target: tgt, TargetUser: userPath(kind, tgtCore)}
	}
}

// FactoryOf is Factory for a service whose storage build opens itself (a
// participant kit over a database): called twice per harness, for the
// source and the target.
func FactoryOf(kind string, build func(t *testing.T) (contract.Participant, *core.Core)) contracttest.Factory {
	return func(t *testing.T) contracttest.Harness {
		src, srcCore := build(t)
		tgt, tgtCore := build(t)
		return contracttest.Harness{Source: src, SourceUser: userPath(kind, srcCore), Target: tgt, TargetUser: userPath(kind, tgtCore)}
	}
}

// userPath is c's user path for records of kind.
func userPath(kind string, c *core.Core) contracttest.UserPath {
	allow := func(a contract.Authority) kvrouting.Decision { return kvrouting.Decision{Authority: a} }
	return contracttest.UserPath{
		Write: func(res, id string, data []byte, refs []string, a contract.Authority) (contract.Record, error) {
			r, err := c.Upsert(context.Background(), allow(a), res, store.Record{ID: id, Kind: kind, Data: data, Refs: refs})
			if err != nil {
				return contract.Record{}, services.ToError(err)
			}
			return r, nil
		},
		Delete: func(res, id string, a contract.Authority) (bool, error) {
			r, err := c.Delete(context.Background(), allow(a), res, id)
			return r.Tombstoned, err
		},
		Read: func(res, id string, a contract.Authority) (contract.Record, bool, error) {
			ctx, _ := services.WithRouted(context.Background())
			services.SetRouted(ctx, res, a)
			r, err := c.Get(ctx, res, id)
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

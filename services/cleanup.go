package services

import (
	"context"
	"errors"

	"github.com/cutover/cutover/kvrouting"
)

// RoutingReader reads a resource's routing document from the leader
// (*kvrouting.Locker is one). Errors: kvrouting.ErrNotFound, and any other
// read error.
type RoutingReader interface {
	Get(ctx context.Context, res kvrouting.Resource) (*kvrouting.Document, error)
}

var _ RoutingReader = (*kvrouting.Locker)(nil)

// RoutingCleanupGuard returns a StoreParticipantOptions.KeepOnCleanup that
// keeps a resource's records at region while its routing document, read
// from the leader, names region as the primary or as a migration's target:
// the contract's rule for Cleanup (contract.Participant.Cleanup). The
// resource came back here, or is coming back, or never left: the source
// cleanup of an earlier migration, or a rollback's target cleanup, then
// deletes nothing, however late its request arrives. A resource without a
// routing document is not kept; a read error fails the cleanup (the
// orchestrator retries it). The revision it read becomes the store's
// routing watermark when the records go (store.DeleteAllUnlessRouted).
func RoutingCleanupGuard(lk RoutingReader, region string) func(ctx context.Context, resource string) (bool, error) {
	return func(ctx context.Context, resource string) (bool, error) {
		res, err := kvrouting.ParseResource(resource)
		if err != nil {
			return false, err
		}
		doc, err := lk.Get(ctx, res)
		if errors.Is(err, kvrouting.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if rev, ok := ctx.Value(guardRevisionKey{}).(*uint64); ok {
			*rev = doc.Revision
		}
		return doc.Primary.Region == region || doc.Target == region, nil
	}
}

// guardRevisionKey carries, in a cleanup's context, where the guard puts
// the routing revision it decided on (StoreParticipant.Cleanup).
type guardRevisionKey struct{}

func withGuardRevision(ctx context.Context) (context.Context, *uint64) {
	rev := new(uint64)
	return context.WithValue(ctx, guardRevisionKey{}, rev), rev
}

package services

import (
	"context"
	"errors"

	"github.com/cutover/cutover/kvrouting"
)

// RoutingCleanupGuard returns a StoreParticipantOptions.KeepOnCleanup that
// keeps a resource's records at region while its routing document, read
// from the leader, names region as the primary or as a migration's target:
// the resource came back here, or is coming back. The source cleanup of an
// earlier migration then deletes nothing, however late its request
// arrives. A resource without a routing document is not kept; a read error
// fails the cleanup (the orchestrator retries it).
func RoutingCleanupGuard(lk *kvrouting.Locker, region string) func(ctx context.Context, resource string) (bool, error) {
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
		return doc.Primary.Region == region || doc.Target == region, nil
	}
}

package orchestrator

import (
	"context"
	"fmt"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// Import grants (issue 14 #1, contract.ImportGate): the target applies a
// page of this attempt only while the attempt's grant is in force in its
// store, decided under the store's resource lock with the write.
//
//   - Every import grants (or renews) at the target in the request that
//     carries the page (PageInfo.GrantUntil), until now + the hard-delete
//     lease; the attempt's first historical run grants on its own before
//     it resets the target. A copy step is the only writer of imports, and
//     a grant outliving a stalled attempt is replaced by the next
//     attempt's (the routing lock lets one migration of a resource be in
//     flight) or revoked by its rollback.
//   - The cutover seals every service at the target before it validates
//     (contract.ApplyImport): the grant is revoked in the request that
//     imports the last delta page, or in one of its own, and the reply
//     carries the target's digests. No import of this attempt lands
//     between validation and the swap, or after it, and the target is
//     reached once in Phase 3, not three times (import, revoke, digests;
//     issue 16).
//   - A rollback revokes before it cleans the target: no import lands in a
//     region the resource did not move to.
//
// A revoked token is retired at the store. What a redelivered step does:
// a copy step redelivered after a rollback's revoke (a second worker on an
// old state) has its grant refused with CodeConflict and imports nothing
// (outside Phase 3 it fails; in Phase 3 it seals, and the validation
// against a cleaned target fails); a delta step redelivered after its own
// seal (its Swapped event lost) has its imports refused, seals again with
// Refused, and validates what the first seal left: the same digests as the
// fenced source's, so it swaps; a cutover or rollback step redelivered
// seals or revokes again (idempotent).

// grantImport grants st's token at tgt and reports whether the pages are
// to be imported under it. An endpoint without grants (a participant that
// predates them) imports ungated.
func (w *Worker) grantImport(ctx context.Context, st *events.State, tgt Endpoint) (granted bool, err error) {
	g, ok := tgt.(contract.ImportGate)
	if !ok || st.Token == "" {
		return false, nil
	}
	expiry := w.cfg.Clock().Add(w.cfg.Locker.Config().HardDeleteLease)
	if err := g.GrantImport(ctx, st.Resource, st.Token, expiry); err != nil {
		return false, fmt.Errorf("grant import at %s: %w", tgt.Region(), err)
	}
	return true, nil
}

// revokeImports revokes st's import grant at every endpoint of the target.
func (w *Worker) revokeImports(ctx context.Context, st *events.State) error {
	if st.Target == "" || st.Token == "" {
		return nil
	}
	res, _ := kvrouting.ParseResource(st.Resource)
	eps, err := w.cfg.Directory.Endpoints(ctx, st.Target, res.Kind)
	if err != nil {
		return err
	}
	return onEach(eps, func(ep Endpoint) error {
		if g, ok := ep.(contract.ImportGate); ok {
			if err := g.RevokeImport(ctx, st.Resource, st.Token); err != nil {
				return fmt.Errorf("revoke import at %s/%s: %w", st.Target, ep.Service(), err)
			}
		}
		return nil
	})
}

// sealAt seals st's copy of one service at tgt without a page: its grant
// revoked, its token retired, the target's digests in the reply.
func (w *Worker) sealAt(ctx context.Context, st *events.State, tgt Endpoint) (*sealed, error) {
	pi := PageInfo{Service: tgt.Service(), Resource: st.Resource, Seal: true}
	if _, ok := tgt.(contract.ImportGate); ok {
		pi.Grant = st.Token
	}
	r, err := tgt.Import(ctx, st.ID, pi)
	if err != nil {
		return nil, fmt.Errorf("seal %s at %s: %w", tgt.Service(), tgt.Region(), err)
	}
	return w.sealedBy(ctx, st, tgt, r)
}

// sealedBy is the seal that import reply r reports. A transport that
// predates seals answers without Sealed: the grant is then revoked and the
// digests read in requests of their own, as before seals.
func (w *Worker) sealedBy(ctx context.Context, st *events.State, tgt Endpoint, r contract.ImportResult) (*sealed, error) {
	if r.Sealed {
		if r.Refused {
			w.log.Info("seal found the grant retired: validation decides", "migration", st.ID, "service", tgt.Service())
		}
		return &sealed{digests: r.Digests, refused: r.Refused}, nil
	}
	if g, ok := tgt.(contract.ImportGate); ok && st.Token != "" {
		if err := g.RevokeImport(ctx, st.Resource, st.Token); err != nil {
			return nil, fmt.Errorf("revoke import at %s/%s: %w", tgt.Region(), tgt.Service(), err)
		}
	}
	d, err := tgt.Digests(ctx, st.Resource)
	if err != nil {
		return nil, fmt.Errorf("digests at %s/%s: %w", tgt.Region(), tgt.Service(), err)
	}
	return &sealed{digests: d}, nil
}

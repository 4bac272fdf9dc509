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
//   - Every copy run grants (or renews) at the target before it exports,
//     until now + the hard-delete lease: a copy step is the only writer of
//     imports, and a grant outliving a stalled attempt is replaced by the
//     next attempt's (the routing lock lets one migration of a resource be
//     in flight) or revoked by its rollback.
//   - The cutover revokes at the target before it validates: no import of
//     this attempt lands between validation and the swap, or after it.
//   - A rollback revokes before it cleans the target: no import lands in a
//     region the resource did not move to.
//
// A revoked token is retired at the store. What a redelivered step does:
// a copy step redelivered after the revoke (a second worker on an old
// state) fails its grant with CodeConflict and imports nothing; a cutover
// or rollback step redelivered revokes again (idempotent).

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
	errs := make([]error, len(eps))
	done := make(chan struct{}, len(eps))
	for i, ep := range eps {
		go func() {
			defer func() { done <- struct{}{} }()
			if g, ok := ep.(contract.ImportGate); ok {
				if err := g.RevokeImport(ctx, st.Resource, st.Token); err != nil {
					errs[i] = fmt.Errorf("revoke import at %s/%s: %w", st.Target, ep.Service(), err)
				}
			}
		}()
	}
	for range eps {
		<-done
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

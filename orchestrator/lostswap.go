package orchestrator

import (
	"context"
	"errors"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
)

// Recognising our own swap after its Swapped event (or the swap's CAS
// reply) was lost (issue 14 #2). Our token on the old location is no proof
// either way: the next migration's pre-lock overwrites it. The routing
// document's LastSwap is: the swap's own CAS writes it and only the next
// swap replaces it. Each migration records the LastSwap it found at its
// pre-lock (events.PreLocked.LastSwap), so a swap that has since been
// followed by another one is still found, one link per later swap.

// maxSwapChain bounds the walk back over later swaps.
const maxSwapChain = 32

// ownSwap reports whether st's current attempt has swapped res, judged by
// doc (a leader read): doc's LastSwap names our migration and token, or a
// migration that swapped after us recorded our swap as the one before
// its own. false, nil: no swap of ours is recorded. It costs no read
// unless doc shows a swap we did not see at our pre-lock.
func (w *Worker) ownSwap(ctx context.Context, st *events.State, doc *kvrouting.Document) (bool, error) {
	if doc == nil || doc.LastSwap == nil || st.Token == "" || st.WriteLockedAt.IsZero() {
		return false, nil // an attempt that never held the write lock never swapped
	}
	if doc.SwappedBy(st.ID, kvrouting.Token(st.Token)) {
		return true, nil
	}
	id, seen := doc.LastSwap.MigrationID, map[string]bool{st.ID: true}
	for depth := 0; depth < maxSwapChain && id != "" && id != st.PreviousSwap && !seen[id]; depth++ {
		seen[id] = true
		p, _, err := Load(ctx, w.nc, id)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if p.PreviousSwap == st.ID && p.PreviousSwapToken == st.Token {
			return true, nil
		}
		id = p.PreviousSwap
	}
	return false, nil
}

// holdsOldLocation reports whether the swapped document d still shows st's
// token on the old location (st.Source) as its locked secondary: only then
// may st (re)set the post-swap fence there. A later migration's pre-lock
// takes the old location over as its target.
func holdsOldLocation(d *kvrouting.Document, st *events.State) bool {
	return d != nil && d.Secondary != nil && d.Secondary.Region == st.Source && d.Secondary.Lock.Token == kvrouting.Token(st.Token)
}

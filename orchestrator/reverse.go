package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// The reverse window. After a swap the old location keeps its fenced copy
// until the source cleanup (paper 001 §4.1.4, Table 5: 15 days), and the
// new primary deletes as tombstones until the same time
// (kvrouting.SwapRecord.ReverseUntil), so every change it takes after the
// swap — a new record, an edit, a delete — carries a change sequence above
// the one the swap left it at. A move back to the old location within the
// window therefore copies only those changes (paper 001 (A2): an export
// from that sequence returns everything created, changed or tombstoned
// since; (A3): the import of a tombstone beats the older live copy the old
// location still holds) instead of resetting the old copy and copying the
// whole history.
//
// It does so only where it is proven, service by service, at the step that
// takes the hard-delete lock; otherwise that service copies in full:
//
//  1. the routing document's last swap moved the resource from the target
//     to the source, recorded a reverse window, and no migration has
//     released or force-released the resource since (a rescheduled attempt
//     of this one included: its rollback cleaned the target);
//  2. the earlier migration recorded, for the service, the target's change
//     sequence and digest sum when it was validated (its last delta
//     import's answer);
//  3. the old location, told its authority by the hard-delete lock's
//     document (importing: from then on no cleanup can delete its copy,
//     however late it arrives), still sums to that digest: its copy is
//     exactly what was validated at the swap (a cleanup that ran, a
//     rolled-back copy into it, a write: any would show);
//  4. the source has been told its hard-delete authority (tombstones from
//     now on) before the window ends, by the holder's clock, which stops
//     the clock skew before the stores do (paper 000 §8): no delete there
//     was physical between the swap and the sync token the copy takes.
//
// The earlier migration's source cleanup is thereby stopped, not raced: it
// is refused once step 3 has installed the newer authority, and a cleanup
// that came first shows in the digests (a full copy). Validation still
// gates the swap (paper 001 §4.6 "Runtime checking"): a wrong incremental
// copy rolls back, and the next attempt copies in full (rule 1).

// reverseSince decides which services of st copy incrementally (see above)
// by d, the document the hard-delete escalation wrote. It returns, per
// service, the change sequence to start after, and the earlier migration;
// nil when nothing is proven. Failures to prove are not errors: they copy
// in full.
func (w *Worker) reverseSince(ctx context.Context, st *events.State, d *kvrouting.Document, services []string) (map[string]uint64, string) {
	from, until, ok := d.ReverseWindow()
	if w.cfg.FullCopyBack || !ok || from != st.Target || d.LastSwap.MigrationID != d.LastMigrationID || !w.cfg.Clock().Before(until) {
		return nil, ""
	}
	prevID := d.LastSwap.MigrationID
	prev, _, err := Load(ctx, w.nc, prevID)
	if err != nil || prev.Source != st.Target || prev.Target != st.Source || prev.SourceCleaned {
		return nil, ""
	}
	into := w.authorityAt(st, d, st.Target) // importing: no cleanup deletes it from now on
	var (
		mu    sync.Mutex
		since = map[string]uint64{}
		wg    sync.WaitGroup
	)
	for _, svc := range services {
		p := prev.Service(svc)
		if p == nil || p.TargetSeq == 0 {
			continue
		}
		wg.Go(func() {
			_, tgt, err := w.endpointPair(ctx, st, svc)
			if err != nil {
				return
			}
			ds, err := tgt.Digests(ctx, st.Resource, into)
			if err != nil || digestSum(ds) != p.TargetSum {
				w.log.Info("reverse window: the old copy is not the one validated at the swap; full copy", "migration", st.ID, "service", svc, "err", err)
				return
			}
			mu.Lock()
			since[svc] = p.TargetSeq
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(since) == 0 {
		return nil, ""
	}
	if err := w.authorize(ctx, st, st.Source, d); err != nil || !w.cfg.Clock().Before(until) {
		w.log.Info("reverse window: the source's tombstones not proven continuous; full copy", "migration", st.ID, "err", err)
		return nil, ""
	}
	return since, prevID
}

// digestSum condenses a resource's slice digests (in slice order, as a
// participant returns them) into one number: equal sums mean equal
// digests, as far as a 64-bit hash tells. Never 0, which means "unknown".
func digestSum(ds []contract.SliceDigest) uint64 {
	h := sha256.New()
	var b [8 + 8 + 16]byte
	for _, d := range ds {
		binary.BigEndian.PutUint64(b[0:], uint64(d.Slice))
		binary.BigEndian.PutUint64(b[8:], d.Count)
		copy(b[16:], d.Hash[:])
		h.Write(b[:])
	}
	return max(binary.BigEndian.Uint64(h.Sum(nil)), 1)
}

// reverseSummary describes a migration's copy mode for the log.
func reverseSummary(since map[string]uint64) string {
	if len(since) == 0 {
		return "full"
	}
	return fmt.Sprintf("incremental (%d services)", len(since))
}

// Package check is the one invariant checker of every end-to-end run — the
// demo, chaos and the multi-process cluster test. It is fed only by what
// the clients saw acknowledged (workload.Ledger), what the stores and the
// API hold, and the routing revisions the store committed (Observer) —
// never by the engine's own opinion — and returns one Invariants value
// with one JSON vocabulary (README "Invariants: one vocabulary").
package check

import (
	"encoding/json"
	"fmt"
	"io"
)

// Invariants are the checked properties; every count must be 0 and the
// longest write fence must stay within the write-lock expiry.
type Invariants struct {
	// LostWrites: acknowledged posts or edits absent, or present with
	// other content than the last acknowledged one.
	LostWrites int `json:"lost_writes"`
	// Resurrected: acknowledged deletes present again.
	Resurrected int `json:"resurrected"`
	// DualAuthorityWrites: acknowledged writes accepted at a region that
	// was not the primary at any instant of their call, by the committed
	// routing history (every swap, from its revision on; the ledger knows
	// the serving region from the API's X-Cutover-Served-By), plus records
	// stamped at a resource's old location after its last swap (imports
	// keep their source timestamps, so only a user write accepted there
	// could carry a later one).
	DualAuthorityWrites int `json:"dual_authority_writes"`
	// PartialCutovers: routing documents left mid-migration (a target or
	// migration id set, primary = secondary, or — when the run expects one
	// — a primary at the target whose old location is not a locked
	// secondary).
	PartialCutovers int `json:"partial_cutovers"`
	// OrphanedLocks: a lock left on a primary after every migration ended.
	OrphanedLocks int `json:"orphaned_locks"`
	// NotAtTarget: resources not at the run's target (runs that move
	// everything to one region).
	NotAtTarget int `json:"not_at_target"`
	// NotClean: migrations neither completed nor rolled back without a
	// lock of theirs left (runs that track migrations).
	NotClean int `json:"migrations_not_completed_or_cleanly_rolled_back"`
	// StaleTokenOps: routing revisions written with a stale token (a holder
	// acting after its lock's expiry plus skew, or a token replacing a
	// lock still in force); PausedHolderOps: those by paused holders.
	StaleTokenOps   int `json:"stale_token_ops"`
	PausedHolderOps int `json:"paused_holder_ops_after_expiry"`
	// StaleReads: a read of a message by its writer that no order of the
	// writer's own operations allows: an acknowledged post, edit or delete
	// not seen by a later read of the same user (read your writes), a
	// deleted message found again. Writes with an unknown outcome may or
	// may not show.
	StaleReads int `json:"stale_reads"`
	// FencedPrimaries: a store at a resource's primary whose authority
	// record refuses a new message routed by the current routing document
	// once every migration has ended (users would get 423, or "moved" for
	// ever, at the authoritative region).
	FencedPrimaries int `json:"fenced_primaries"`
	// TargetLeftovers: records of a resource held in a region that is not
	// its primary and not an old primary within its cleanup window (a
	// rolled-back target not cleaned, or data imported after the end of a
	// copy: a residency leak).
	TargetLeftovers int `json:"target_leftovers"`
	// MaxWriteFenceMs is the longest write lock in force (its first
	// revision to its removal, bounded by its expiry), from the observed
	// routing revisions; WriteLockExpiryMs is the write lease.
	MaxWriteFenceMs   float64 `json:"max_write_fence_ms"`
	WriteLockExpiryMs float64 `json:"write_lock_expiry_ms"`
	// MaxUserWriteFenceMs is the write fence as users met it, not bounded
	// by any expiry: within one write lock, from the answer to the first
	// refused new message to the sending of the last one, through the
	// up-to-date API (a lower bound of how long writes were held). It must
	// stay within the expiry plus the skew too.
	MaxUserWriteFenceMs float64 `json:"max_user_write_fence_ms"`
	// RefusalsWithoutLock: new messages refused with 423 through the
	// up-to-date API while no write lock was in force (to its expiry plus
	// the skew) at any instant of the request: a store fence that outlived
	// the lock, or a fence at a primary.
	RefusalsWithoutLock int `json:"refusals_without_lock"`
	// ClockSkewMs is the lock protocol's skew margin: the fence is held to
	// the expiry plus it (a holder's clock may run that far ahead of the
	// stream leader's, which stamps the revisions).
	ClockSkewMs float64 `json:"clock_skew_ms"`
	// Unacknowledged: messages present that no client ever attempted;
	// Uncertain: writes whose reply never came, found applied (allowed).
	// Neither fails a run; the cluster test requires Unacknowledged = 0.
	Unacknowledged int `json:"unacknowledged_present"`
	Uncertain      int `json:"unacknowledged_applied"`
	// Samples describe the first violations found.
	Samples []string `json:"samples,omitempty"`
}

// legacyKeys are the names chaos used before the vocabulary was unified;
// they are still written, with the same values (README "Invariants: one vocabulary").
type legacyKeys struct {
	ResurrectedDeletes int `json:"resurrected_deletes"`
	NonAuthoritative   int `json:"writes_at_non_authoritative_location"`
}

// MarshalJSON writes the invariants with the legacy keys beside them.
func (inv Invariants) MarshalJSON() ([]byte, error) {
	type plain Invariants
	return json.Marshal(struct {
		plain
		legacyKeys
	}{plain(inv), legacyKeys{inv.Resurrected, inv.DualAuthorityWrites}})
}

// Failures lists every violated invariant, one phrase each.
func (inv Invariants) Failures() []string {
	var bad []string
	add := func(n int, what string) {
		if n != 0 {
			bad = append(bad, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(inv.LostWrites, "lost acknowledged writes")
	add(inv.Resurrected, "resurrected deletes")
	add(inv.DualAuthorityWrites, "writes at a non-authoritative location")
	add(inv.PartialCutovers, "partial cutovers")
	add(inv.OrphanedLocks, "orphaned locks")
	add(inv.NotAtTarget, "resources not at the target")
	add(inv.NotClean, "migrations neither completed nor cleanly rolled back")
	add(inv.StaleTokenOps, "operations accepted with a stale token")
	add(inv.StaleReads, "stale reads of the writer's own messages")
	add(inv.FencedPrimaries, "fenced primaries")
	add(inv.TargetLeftovers, "resources with data left outside their primary and cleanup window")
	add(inv.PausedHolderOps, "operations by a paused holder after its expiry")
	add(inv.RefusalsWithoutLock, "new writes refused with no write lock in force")
	if inv.MaxWriteFenceMs > inv.WriteLockExpiryMs+inv.ClockSkewMs {
		bad = append(bad, fmt.Sprintf("write fence %.0f ms beyond the write-lock expiry %.0f ms + skew %.0f ms", inv.MaxWriteFenceMs, inv.WriteLockExpiryMs, inv.ClockSkewMs))
	}
	if inv.MaxUserWriteFenceMs > inv.WriteLockExpiryMs+inv.ClockSkewMs {
		bad = append(bad, fmt.Sprintf("write fence met by users %.0f ms beyond the write-lock expiry %.0f ms + skew %.0f ms", inv.MaxUserWriteFenceMs, inv.WriteLockExpiryMs, inv.ClockSkewMs))
	}
	return bad
}

func (inv *Invariants) sample(format string, a ...any) {
	if len(inv.Samples) < 12 {
		inv.Samples = append(inv.Samples, fmt.Sprintf(format, a...))
	}
}

// Print writes the invariants as an indented table, then the samples.
func (inv Invariants) Print(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("  lost acknowledged writes               %d", inv.LostWrites)
	p("  resurrected deletes                    %d", inv.Resurrected)
	p("  writes at a non-authoritative location %d", inv.DualAuthorityWrites)
	p("  partial cutovers                       %d", inv.PartialCutovers)
	p("  orphaned locks                         %d", inv.OrphanedLocks)
	p("  resources not at the target            %d", inv.NotAtTarget)
	p("  migrations not completed/rolled back   %d", inv.NotClean)
	p("  operations with a stale token          %d (by paused holders after expiry: %d)", inv.StaleTokenOps, inv.PausedHolderOps)
	p("  stale reads (read your writes)         %d", inv.StaleReads)
	p("  fenced primaries                       %d", inv.FencedPrimaries)
	p("  data left outside primary and window   %d", inv.TargetLeftovers)
	p("  longest write fence                    %.0f ms (write-lock expiry %.0f ms + skew %.0f ms)", inv.MaxWriteFenceMs, inv.WriteLockExpiryMs, inv.ClockSkewMs)
	p("  longest write fence met by users       %.0f ms (uncapped)", inv.MaxUserWriteFenceMs)
	p("  new writes refused with no lock        %d", inv.RefusalsWithoutLock)
	p("  (writes whose reply never came, found applied: %d; messages no client sent: %d; both allowed)", inv.Uncertain, inv.Unacknowledged)
	for _, x := range inv.Samples {
		p("    %s", x)
	}
}

package orchestrator

import (
	"context"
	"fmt"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// What each participant is told (DESIGN.md "One authority per resource",
// docs/participant.md). The routing document's revision is the only
// fencing token: every request the worker sends a participant is stamped
// with the participant's authority by the routing document the worker
// holds (authorityAt), and the participant joins it into its record and
// decides the request by the result. A request of a step that has lost the
// lock, of an attempt that has ended, or delivered late changes nothing
// wherever a newer revision has been installed. authorize is the one entry
// point that sets authority without another operation (a renewal, the swap,
// a rollback): a swap, a rollback, a move back or a lost reply need no path
// of their own, since every authority installed is derived the same way
// from a routing document and a later revision supersedes an earlier one.

// FencePolicy decides how the source is fenced before Phase 3 (paper 001
// Table 4). The protocol's policy (ProtocolFencing) is the default: the
// source's authority is the routing document's. Other policies exist so
// that `cutover bench fence` can migrate one workload each way and measure
// what the paper could only infer (paper 001 §6.5); they live with the
// bench (package bench), and a worker is given one with WithFencePolicy.
// A stricter policy makes the source an exporting store (writes refused)
// earlier than the routing document does; a participant keeps the stricter
// of two source-side authorities at one revision (contract.Join), so the
// users' requests routed by the same revision meet it. Implementations
// must be safe for concurrent use.
type FencePolicy interface {
	// WriteFenceAtPreLock reports whether the source refuses writes from
	// the pre-lock on: it is told so on the first step after the PreLocked
	// event, before the convergence wait (the routing lock cannot be a
	// write lock before convergence, paper 000 §4.1). The protocol: false
	// (paper 001 §4.1.1).
	WriteFenceAtPreLock() bool
	// WriteFenceInPhase2 reports whether the source refuses writes during
	// the historical copy (stop-and-copy) instead of tombstoning deletes.
	// The protocol: false (paper 001 §4.1.2, §4.3).
	WriteFenceInPhase2() bool
}

// ProtocolFencing returns the protocol's fence policy, the default: the
// source tombstones deletes in Phase 2 and refuses writes only in Phase 3
// (paper 001 Algorithm 1).
func ProtocolFencing() FencePolicy { return protocolFencing{} }

type protocolFencing struct{}

var _ FencePolicy = protocolFencing{}

func (protocolFencing) WriteFenceAtPreLock() bool { return false }
func (protocolFencing) WriteFenceInPhase2() bool  { return false }

// authorityAt is region's authority over st's resource by the routing
// document d (kvrouting.Document.AuthorityAt), made stricter at the source
// where the fence policy says so while st holds the lock.
func (w *Worker) authorityAt(st *events.State, d *kvrouting.Document, region string) contract.Authority {
	a := d.AuthorityAt(region, w.skew)
	l := d.Primary.Lock
	if region != st.Source || a.RoleOf() != contract.RolePrimary || l.Token != kvrouting.Token(st.Token) {
		return a
	}
	if (l.Type == kvrouting.LockPre && w.fencing.WriteFenceAtPreLock()) ||
		(l.Type == kvrouting.LockHardDelete && (w.fencing.WriteFenceInPhase2() || w.fencing.WriteFenceAtPreLock())) {
		a.Role, a.Deletes, a.Until = contract.RoleExporting, "", contract.UntilOf(l.Expiry.Add(w.skew))
	}
	return a
}

// authorize tells every participant of st's resource at region its
// authority by d, all services at once; it returns the first failure.
func (w *Worker) authorize(ctx context.Context, st *events.State, region string, d *kvrouting.Document) error {
	res, _ := kvrouting.ParseResource(st.Resource)
	eps, err := w.endpoints(ctx, region, res.Kind)
	if err != nil {
		return err
	}
	a := w.authorityAt(st, d, region)
	return onEach(eps, func(ep Endpoint) error {
		if _, err := ep.Authorize(ctx, st.Resource, a); err != nil {
			return fmt.Errorf("authority %s at %s/%s: %w", a, region, ep.Service(), err)
		}
		return nil
	})
}

// authorizeBoth is authorize at st's source and target at once.
func (w *Worker) authorizeBoth(ctx context.Context, st *events.State, d *kvrouting.Document) error {
	errs := make([]error, 2)
	regions := []string{st.Source, st.Target}
	onEachRegion := func(i int) { errs[i] = w.authorize(ctx, st, regions[i], d) }
	done := make(chan struct{})
	go func() { onEachRegion(1); close(done) }()
	onEachRegion(0)
	<-done
	if errs[0] != nil {
		return errs[0]
	}
	return errs[1]
}

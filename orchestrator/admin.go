package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cutover/cutover/eventlog"
	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/nats/natsclient"
	"github.com/cutover/cutover/orchestrator/approval"
	"github.com/cutover/cutover/services/contract"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Two-person commands (force-release, fence clear; paper 000 §8) are
// authorised and audited here, by the orchestrator, never by the CLI that
// sends them: the approvals are verified against the operator registry
// (Config.Operators, approval.Registry.Verify), each approval is used once
// (its id is written once into the resource index, expected last subject
// sequence 0), and the outcome — the audit event, or an AdminRefused
// naming why nothing was done — is the first event of the command's own
// admin aggregate (AuditID), which the CLI waits on. A refusal is decided
// before anything changes.

// AuditID is the admin aggregate of two-person command cmdID of type typ
// (events.TypeForceRelease, events.TypeFenceClear): its first event is the
// command's audit event or its refusal.
func AuditID(typ, cmdID string) string {
	if typ == events.TypeForceRelease {
		return DeriveID("force", cmdID)
	}
	return DeriveID("admin", typ, cmdID)
}

// approvalIndexID is the resource-index entry that marks an approval used.
func approvalIndexID(id string) string { return "approval-" + id }

// refusal is a two-person command refused before anything changed: it is
// recorded as AdminRefused and the command is acknowledged.
type refusal struct{ code, why string }

func (r *refusal) Error() string { return r.why }

func refuse(code, format string, args ...any) error {
	return &refusal{code: code, why: fmt.Sprintf(format, args...)}
}

// adminCommand is a two-person command as runAdmin needs it.
type adminCommand struct {
	env       *events.Envelope
	typ       string
	resource  string
	region    string
	approvers []string
	approvals []string
	reason    string
}

// authorised is who approved a command: canonical operator names and the
// ids of their signed approvals (none: unsigned, development).
type authorised struct {
	approvers []string
	ids       []string
}

// runAdmin runs c: act decides and does it and returns its audit event,
// or a *refusal; either becomes the first event of c's admin aggregate.
// A command whose aggregate already has its first event was finished by an
// earlier delivery: nothing is done again.
func (w *Worker) runAdmin(ctx context.Context, c adminCommand, act func(context.Context, kvrouting.Resource, string) (events.Body, error)) error {
	aid := AuditID(c.typ, c.env.ID)
	if evs, err := eventlog.New(w.nc, w.js).History(ctx, aid); err != nil {
		return err
	} else if len(evs) > 0 {
		return nil
	}
	res, err := kvrouting.ParseResource(c.resource)
	var body events.Body
	if err != nil {
		err = refuse(events.RefusedInvalid, "%v", err)
	} else {
		body, err = act(ctx, res, aid)
	}
	var r *refusal
	if errors.As(err, &r) {
		w.log.Warn("two-person command refused", "type", c.typ, "resource", c.resource, "region", c.region, "approvers", c.approvers, "refusal", r.why)
		body = events.AdminRefused{Command: c.typ, Resource: c.resource, Region: c.region, Approvers: c.approvers, Reason: c.reason, Code: r.code, Refusal: r.why}
	} else if err != nil {
		return err
	}
	if res.Validate() == nil {
		if err := index(ctx, w.js, res, aid); err != nil {
			return err
		}
	}
	_, _, err = appendTo(ctx, w.js, aid, nil, 0, body, c.env.ID, w.cfg.Clock(), c.env.ID)
	if errors.Is(err, ErrConflict) {
		return nil // recorded by an earlier delivery
	}
	return err
}

// authorise verifies c's approvals of q (a *refusal when they do not
// authorise it) and returns who approved. It changes nothing: claim marks
// the approvals used. Approvals that have expired since an earlier
// delivery of this very command verified and claimed them (it acted, then
// failed before its audit event) are verified as of that claim, so that
// the command is finished and audited rather than refused.
func (w *Worker) authorise(ctx context.Context, res kvrouting.Resource, aid string, q approval.Request, c adminCommand) (authorised, error) {
	if w.cfg.Operators == nil {
		if !w.cfg.UnsignedApprovals {
			return authorised{}, refuse(events.RefusedApprovals, "this orchestrator has no operator registry (--operators-file): it refuses every two-person command")
		}
		if len(c.approvals) > 0 {
			return authorised{}, refuse(events.RefusedApprovals, "signed approvals given, but this development orchestrator has no operator registry to verify them against (--operators-file)")
		}
		names, err := approval.CheckUnsigned(c.approvers)
		if err != nil {
			return authorised{}, refuse(events.RefusedApprovals, "%v", err)
		}
		w.log.Warn("INSECURE: a two-person command approved by unsigned names (development auth, no operator registry)",
			"type", c.typ, "resource", c.resource, "approvers", names)
		return authorised{approvers: names}, nil
	}
	reg, err := w.cfg.Operators.Registry()
	if err != nil {
		return authorised{}, refuse(events.RefusedApprovals, "the operator registry cannot be read: %v", err)
	}
	if len(c.approvals) == 0 {
		return authorised{}, refuse(events.RefusedApprovals, "no signed approvals: this orchestrator verifies every approver's signed approval (--approval), approver names alone (%s) are refused",
			strings.Join(c.approvers, ", "))
	}
	as, err := reg.Verify(q, c.approvers, c.approvals, w.cfg.Clock())
	if errors.Is(err, approval.ErrExpired) {
		if first, perr := approval.Parse(c.approvals[0]); perr == nil {
			owner, at, cerr := w.claimOf(ctx, res, first.ID)
			if cerr != nil {
				return authorised{}, cerr
			}
			if owner == aid {
				as, err = reg.Verify(q, c.approvers, c.approvals, at)
			}
		}
	}
	if err != nil {
		return authorised{}, refuse(events.RefusedApprovals, "%v", err)
	}
	var out authorised
	for _, a := range as {
		out.approvers, out.ids = append(out.approvers, a.Operator), append(out.ids, a.ID)
	}
	return out, nil
}

// claim marks the approvals ids used by the command of admin aggregate aid,
// before it acts: each id is written once into res's index (expected last
// subject sequence 0), with aid as the data, then aid itself (which marks
// an unsigned command authorised: authorisedBefore). An approval already
// used by another command is refused; one this command marked in an
// earlier delivery is its own.
func (w *Worker) claim(ctx context.Context, res kvrouting.Resource, aid string, ids []string) error {
	for _, id := range ids {
		msg := nats.NewMsg(events.IndexSubject(res.Key(), approvalIndexID(id)))
		msg.Data = []byte(aid)
		_, err := publishRetry(ctx, w.js, msg, jetstream.WithExpectLastSequencePerSubject(0))
		if err != nil && !eventlog.WrongLastSequence(err) {
			return err
		}
		if err != nil { // claimed already: by an earlier delivery of this command, or by another
			owner, _, err := w.claimOf(ctx, res, id)
			if err != nil {
				return err
			}
			if owner != aid {
				return refuse(events.RefusedApprovals, "approval %s was used before (by %s): an approval is used once; nothing changed", id, owner)
			}
		}
	}
	return index(ctx, w.js, res, aid)
}

// claimOf returns the admin aggregate that approval id was used by ("" for
// an approval never used) and when the claim was written (the stream's
// time).
func (w *Worker) claimOf(ctx context.Context, res kvrouting.Resource, id string) (string, time.Time, error) {
	s, err := w.js.Stream(ctx, events.IndexStream)
	if err != nil {
		return "", time.Time{}, err
	}
	m, err := s.GetLastMsgForSubject(ctx, events.IndexSubject(res.Key(), approvalIndexID(id)))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, err
	}
	return string(m.Data), m.Time, nil
}

// authorisedBefore reports whether an earlier delivery of the command of
// admin aggregate aid got past claim (and may have acted): its first
// approval is claimed by aid or, unsigned, aid is in the index.
func (w *Worker) authorisedBefore(ctx context.Context, res kvrouting.Resource, aid string, who authorised) (bool, error) {
	if len(who.ids) > 0 {
		owner, _, err := w.claimOf(ctx, res, who.ids[0])
		return owner == aid, err
	}
	_, _, err := natsclient.LeaderGetLast(ctx, w.nc, events.IndexStream, events.IndexSubject(res.Key(), aid))
	if errors.Is(err, natsclient.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// forceRelease clears a stuck lock without its token (paper 000 §8) once
// two operators approve, and records the audit event on the command's
// admin aggregate and on the migration that held the lock (which then
// rolls back).
func (w *Worker) forceRelease(ctx context.Context, env *events.Envelope, b events.ForceRelease) error {
	c := adminCommand{env: env, typ: events.TypeForceRelease, resource: b.Resource, approvers: b.Approvers, approvals: b.Approvals, reason: b.Reason}
	return w.runAdmin(ctx, c, func(ctx context.Context, res kvrouting.Resource, aid string) (events.Body, error) {
		q := approval.Request{Operation: approval.OpForceRelease, Resource: res.String(), Reason: b.Reason}
		if err := q.Validate(); err != nil {
			return nil, refuse(events.RefusedInvalid, "%v", err)
		}
		who, err := w.authorise(ctx, res, aid, q, c)
		if err != nil {
			return nil, err
		}
		doc, err := w.cfg.Locker.Get(ctx, res)
		if errors.Is(err, kvrouting.ErrNotFound) {
			return nil, refuse(events.RefusedNotFound, "%s has no routing document; nothing changed", res)
		}
		if err != nil {
			return nil, err
		}
		if err := w.claim(ctx, res, aid, who.ids); err != nil {
			return nil, err
		}
		// A document holding no lock (released meanwhile, or by an earlier
		// delivery of this command) is left alone, and audited all the same.
		if _, err := w.cfg.Locker.ForceRelease(ctx, res, who.approvers); err != nil {
			return nil, err
		}
		ev := events.ForceReleased{Resource: res.String(), Approvers: who.approvers, ApprovalIDs: who.ids, Reason: b.Reason}
		if doc.MigrationID != "" {
			if err := w.mutateState(ctx, doc.MigrationID, env.ID, ev); err != nil && !errors.Is(err, ErrNotFound) {
				return nil, err
			}
		}
		return ev, nil
	})
}

// clearFence repairs res's stranded authority records at a region
// (`cutover fence clear`) once two operators approve: every service there
// whose record decides a read or a write routed by the routing document
// otherwise than the document does gets the authority the document gives
// the region (contract.Repairer), whatever its record held. Refused,
// changing nothing: a malformed region, a region no service answers in, a
// resource without a routing document, a region a migration in flight has
// as its source or target (its authorities are the migration's own), no
// stranded record there.
func (w *Worker) clearFence(ctx context.Context, env *events.Envelope, b events.FenceClear) error {
	c := adminCommand{env: env, typ: events.TypeFenceClear, resource: b.Resource, region: b.Region, approvers: b.Approvers, approvals: b.Approvals, reason: b.Reason}
	return w.runAdmin(ctx, c, func(ctx context.Context, res kvrouting.Resource, aid string) (events.Body, error) {
		if err := natsclient.ValidateRegion(b.Region); err != nil || strings.ToLower(b.Region) != b.Region {
			return nil, refuse(events.RefusedInvalid, "region %q is not a region name", b.Region)
		}
		q := approval.Request{Operation: approval.OpFenceClear, Resource: res.String(), Region: b.Region, Reason: b.Reason}
		if err := q.Validate(); err != nil {
			return nil, refuse(events.RefusedInvalid, "%v", err)
		}
		who, err := w.authorise(ctx, res, aid, q, c)
		if err != nil {
			return nil, err
		}
		if err := w.notServedAt(ctx, res.Kind, b.Region); err != nil {
			return nil, refuse(events.RefusedUnserved, "region %q is not served: %v; nothing changed", b.Region, err)
		}
		doc, err := w.cfg.Locker.Get(ctx, res)
		if errors.Is(err, kvrouting.ErrNotFound) {
			return nil, refuse(events.RefusedNotFound, "%s has no routing document; nothing changed", res)
		}
		if err != nil {
			return nil, err
		}
		if doc.MigrationID != "" && !doc.Primary.Lock.IsZero() && (b.Region == doc.Primary.Region || b.Region == doc.Target) {
			return nil, refuse(events.RefusedInUse, "migration %s holds %s (%s lock, %s → %s); its stores' authority is its own, use `cutover lock force-release` for a stuck migration; nothing changed",
				doc.MigrationID, res, doc.Primary.Lock.Type, doc.Primary.Region, doc.Target)
		}
		// No migration holds the region: its authority has no lease to end.
		want := doc.AuthorityAt(b.Region, 0)
		eps, err := w.cfg.Directory.Endpoints(ctx, b.Region, res.Kind)
		if err != nil {
			if notServed(err) {
				return nil, refuse(events.RefusedUnserved, "region %q is not served: %v; nothing changed", b.Region, err)
			}
			return nil, err
		}
		var plan []Endpoint
		for _, ep := range eps {
			held, err := ep.Authorize(ctx, res.String(), contract.Authority{})
			if err == nil && !stranded(held, want, w.cfg.Clock) {
				continue
			}
			plan = append(plan, ep)
		}
		ev := events.FenceForceCleared{Resource: res.String(), Region: b.Region, Repaired: want.String(), Approvers: who.approvers, ApprovalIDs: who.ids, Reason: b.Reason}
		if len(plan) == 0 {
			if again, err := w.authorisedBefore(ctx, res, aid, who); err != nil {
				return nil, err
			} else if again {
				ev.Note = "an earlier delivery of this command was authorised and may have repaired records; none is stranded now"
				return ev, nil
			}
			return nil, refuse(events.RefusedNothing, "no stranded authority on %s at %s: every service there decides as routing does (%s; services: %s); nothing changed",
				res, b.Region, want, strings.Join(serviceNames(eps), ", "))
		}
		if err := w.claim(ctx, res, aid, who.ids); err != nil {
			return nil, err
		}
		for _, ep := range plan {
			prev, err := repair(ctx, ep, res.String(), want)
			if err != nil {
				ev.Failed = fmt.Sprintf("repair the authority of %s at %s/%s: %v", res, b.Region, ep.Service(), err)
				break
			}
			if len(ev.Services) == 0 {
				ev.Previous = prev.String()
			}
			ev.Services = append(ev.Services, ep.Service())
			ev.Repairs = append(ev.Repairs, events.RepairedRecord{Service: ep.Service(), Role: string(prev.RoleOf()), Until: prev.Until, Previous: prev.String()})
		}
		if len(ev.Services) == 0 {
			return nil, refuse(events.RefusedFailed, "%s; nothing changed", ev.Failed)
		}
		return ev, nil
	})
}

// repair replaces res's record at ep with a (contract.Repairer).
func repair(ctx context.Context, ep Endpoint, res string, a contract.Authority) (contract.Authority, error) {
	rp, ok := ep.(contract.Repairer)
	if !ok {
		return contract.Authority{}, contract.Errorf(contract.CodeInvalid, "%s at %s cannot repair an authority record", ep.Service(), ep.Region())
	}
	return rp.Repair(ctx, res, a)
}

// stranded reports whether the record held decides a read or a write
// routed by the authority want (the routing document's) otherwise than
// want itself does.
func stranded(held, want contract.Authority, clock func() time.Time) bool {
	now := clock()
	for _, op := range []contract.Op{contract.OpRead, contract.OpCreate} {
		if contract.Admit(held, op, want, now).Verdict != contract.Admit(want, op, want, now).Verdict {
			return true
		}
	}
	return false
}

func serviceNames(eps []Endpoint) []string {
	out := make([]string, len(eps))
	for i, ep := range eps {
		out[i] = ep.Service()
	}
	slices.Sort(out)
	return out
}

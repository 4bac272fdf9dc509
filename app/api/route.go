package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
)

// routed is where a request goes and what it may do there.
type routed struct {
	region *chat.Region
	doc    *kvrouting.Document
	// dec is the Table 4 decision for the request's operation class at
	// region, taken before any storage mutation.
	dec kvrouting.Decision
}

// resolverFor returns the resolver of region.
func (s *Server) resolverFor(region string) *kvrouting.Resolver {
	if rv := s.cfg.Resolvers[region]; rv != nil {
		return rv
	}
	return s.cfg.Resolver
}

// route resolves res, picks the region that serves it (the primary, or the
// pinned region), names it in w's ServedByHeader (w may be nil: a side
// lookup that serves nothing), and takes the decision
// for op there (paper 001 §5.2). what
// names the resource in a not-found message. Errors: *contract.Error —
// not_found (no routing document), invalid (bad id, unknown pinned region),
// unavailable (routing store down, or a region this server does not serve).
func (s *Server) route(w http.ResponseWriter, r *http.Request, res kvrouting.Resource, op kvrouting.OpClass, what string) (routed, error) {
	ctx := r.Context()
	front := s.resolverFor(s.cfg.DefaultRegion)
	rs, err := front.Resolve(ctx, res)
	if err != nil {
		return routed{}, routingError(err, what, res.ID)
	}
	region := rs.Doc.Primary.Region
	pinned := false
	if pin := r.Header.Get(RegionHeader); pin != "" && s.cfg.AllowRegionPin {
		pinned = true
		if s.cfg.Regions[pin] == nil {
			return routed{}, contract.Errorf(contract.CodeInvalid, "pinned region %q is not served here", pin)
		}
		region = pin
	}
	reg := s.cfg.Regions[region]
	if reg == nil {
		return routed{}, contract.Errorf(contract.CodeUnavailable, "%s %q lives in region %s, which this server does not serve", what, res.ID, region)
	}
	// Which region served the request, on every response from here on
	// (also a 423 or an error of the region's services).
	if w != nil {
		w.Header().Set(ServedByHeader, region)
	}
	// The region that executes decides, with its own routing view.
	rv := s.resolverFor(region)
	if rv != front {
		if rs, err = rv.Resolve(ctx, res); err != nil {
			return routed{}, routingError(err, what, res.ID)
		}
	}
	if !pinned && region != rs.Doc.Primary.Region {
		// The front resolver's view sent the request to a region whose own
		// view names another primary: one of them is stale. Unrouted, the
		// region's services would serve their copy as it is (a read would
		// miss writes acknowledged at the primary: chaos's stale_reads),
		// so the request resolves again from the leader ("moved").
		return routed{}, &contract.Error{Code: contract.CodeLocked, Lock: "moved",
			Message: "resource has moved to another region; resolve it again"}
	}
	c := rv.Config()
	d := kvrouting.Decide(rs.Doc, region, op, c.Clock(), c.ClockSkew)
	if w != nil && region == rs.Doc.Primary.Region {
		// The services' reads carry this routing's authority to the
		// stores' admission (services.SetRouted); a read pinned elsewhere
		// reads that region's copy as it is.
		services.SetRouted(ctx, res.String(), d.Authority)
	}
	return routed{region: reg, doc: rs.Doc, dec: d}, nil
}

// decideAt takes the decision for op on a document just written (a new
// resource registered by this request).
func (s *Server) decideAt(doc *kvrouting.Document, region string, op kvrouting.OpClass) kvrouting.Decision {
	c := s.resolverFor(region).Config()
	return kvrouting.Decide(doc, region, op, c.Clock(), c.ClockSkew)
}

func routingError(err error, what, id string) error {
	switch {
	case errors.Is(err, kvrouting.ErrNotFound):
		return contract.Errorf(contract.CodeNotFound, "%s %q not found", what, id)
	case errors.Is(err, kvrouting.ErrInvalid):
		return contract.Errorf(contract.CodeInvalid, "%s id %q: %v", what, id, err)
	}
	return services.ToError(err)
}

// conversation routes a request on conversation id for op, checks that who
// is a participant at the serving region, then refuses the request with
// 423 if the decision rejects it. Membership comes first: a conversation
// who may not see answers exactly as one that does not exist, locked or
// not (a 423 or a 403 would confirm that it exists). Errors:
// *contract.Error — invalid, not_found, locked, unavailable, internal.
func (s *Server) conversation(w http.ResponseWriter, r *http.Request, id string, op kvrouting.OpClass, who Identity) (routed, error) {
	if err := chat.ValidID("conversation id", id); err != nil {
		return routed{}, err
	}
	rt, err := s.route(w, r, kvrouting.Resource{Kind: chat.KindConversation, ID: id}, op, "conversation")
	if err != nil {
		return routed{}, err
	}
	err = s.participant(r.Context(), rt.region, id, who)
	if err != nil && rt.dec.Outcome == kvrouting.Reject && services.ToError(err).Code == contract.CodeNotFound {
		// A request pinned to a region that does not hold the roster: the
		// primary's decides whether who learns of the lock.
		if p := s.cfg.Regions[rt.doc.Primary.Region]; p != nil && p != rt.region && s.participant(r.Context(), p, id, who) == nil {
			err = nil
		}
	}
	if err != nil {
		return routed{}, err
	}
	if rt.dec.Outcome == kvrouting.Reject {
		return routed{}, chat.LockedError(rt.dec)
	}
	return rt, nil
}

// participant returns CodeNotFound, worded as for a conversation with no
// routing document, unless who is a user on the roster of conversation id
// at region.
func (s *Server) participant(ctx context.Context, region *chat.Region, id string, who Identity) error {
	hidden := contract.Errorf(contract.CodeNotFound, "conversation %q not found", id)
	if who.Kind != User {
		return hidden
	}
	ok, err := region.Conversations().IsMember(ctx, id, who.Name)
	if err != nil {
		return err
	}
	if !ok {
		return hidden
	}
	return nil
}

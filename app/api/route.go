package api

import (
	"context"
	"net/http"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/httproute"
)

// routed is where a request goes and what it may do there.
type routed struct {
	region *chat.Region
	doc    *kvrouting.Document
	// dec is the Table 4 decision for the request's operation class at
	// region, taken before any storage mutation.
	dec kvrouting.Decision
}

// route routes the request on res for op (httproute.Router.Route) and
// finds the chat services of the region that serves it.
func (s *Server) route(w http.ResponseWriter, r *http.Request, res kvrouting.Resource, op kvrouting.OpClass, what string) (routed, error) {
	rt, err := s.router.Route(w, r, res, op, what)
	if err != nil {
		return routed{}, err
	}
	return routed{region: s.cfg.Regions[rt.Region], doc: rt.Doc, dec: rt.Decision}, nil
}

// decideAt takes the decision for op on a document just written (a new
// resource registered by this request).
func (s *Server) decideAt(doc *kvrouting.Document, region string, op kvrouting.OpClass) kvrouting.Decision {
	return s.router.Decide(doc, region, op)
}

// routingError is a routing store's error as the API answers it
// (httproute.RoutingError).
func routingError(err error, what, id string) error { return httproute.RoutingError(err, what, id) }

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

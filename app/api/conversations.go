package api

import (
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/app/chat/conversations"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
)

// conversationJSON is the conversation as the API shows it.
type conversationJSON struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Members   []string `json:"members"`
	CreatedBy string   `json:"created_by"`
	CreatedAt string   `json:"created_at"`
	Region    string   `json:"region"`
}

func toConversationJSON(c conversations.Conversation, region string) conversationJSON {
	return conversationJSON{
		ID: c.ID, Title: c.Title, Members: c.Members, CreatedBy: c.CreatedBy,
		CreatedAt: c.CreatedAt.Format(time.RFC3339Nano), Region: region,
	}
}

type createConversationRequest struct {
	ID      *string  `json:"id"`
	Title   string   `json:"title"`
	Members []string `json:"members"`
}

// createConversation: POST /v1/conversations. The routing document is
// registered at the default region first; the conversation's metadata
// record is the claim, so a second create of the same id is 409 even if a
// first attempt stopped half-way.
func (s *Server) createConversation(w http.ResponseWriter, r *http.Request, who Identity) error {
	if who.Kind != User {
		return contract.Errorf(contract.CodeForbidden, "only users create conversations")
	}
	var req createConversationRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	id := chat.NewID("c_", 12)
	if req.ID != nil {
		id = *req.ID
	}
	// Validate everything before the first write, so bad input changes
	// nothing (no routing document either).
	if err := validNewID("conversation id", id); err != nil {
		return err
	}
	if err := conversations.ValidTitle(req.Title); err != nil {
		return err
	}
	roster := []string{who.Name}
	for _, m := range req.Members {
		if err := chat.ValidID("member", m); err != nil {
			return err
		}
		roster = append(roster, m)
	}
	slices.Sort(roster)
	roster = slices.Compact(roster)
	home := s.cfg.Regions[s.cfg.DefaultRegion]
	if limit := home.Conversations().MaxMembers(); len(roster) > limit {
		return contract.Errorf(contract.CodeInvalid, "%d members, at most %d", len(roster), limit)
	}
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: id}
	doc, err := s.cfg.Locker.Register(r.Context(), res, s.cfg.DefaultRegion)
	if err != nil && !errors.Is(err, kvrouting.ErrExists) {
		return routingError(err, "conversation", id)
	}
	// On ErrExists doc is the stored document: the metadata write below
	// then says whether the conversation really exists (409) or a first
	// attempt stopped after registering.
	region := s.cfg.Regions[doc.Primary.Region]
	if region == nil {
		return contract.Errorf(contract.CodeConflict, "conversation %q already exists", id)
	}
	w.Header().Set(ServedByHeader, region.Name())
	d := s.decideAt(doc, region.Name(), kvrouting.OpNewWrite)
	c, err := region.Conversations().Create(r.Context(), d, id, req.Title, who.Name, roster)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toConversationJSON(c, region.Name()))
	return nil
}

// getConversation: GET /v1/conversations/{id}.
func (s *Server) getConversation(w http.ResponseWriter, r *http.Request, who Identity) error {
	id := r.PathValue("id")
	rt, err := s.conversation(w, r, id, kvrouting.OpRead, who)
	if err != nil {
		return err
	}
	c, err := rt.region.Conversations().Get(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toConversationJSON(c, rt.region.Name()))
	return nil
}

type addMemberRequest struct {
	User string `json:"user"`
}

type membersJSON struct {
	Members []string `json:"members"`
}

// addMember: POST /v1/conversations/{id}/members (a new write).
func (s *Server) addMember(w http.ResponseWriter, r *http.Request, who Identity) error {
	id := r.PathValue("id")
	var req addMemberRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := chat.ValidID("user", req.User); err != nil {
		return err
	}
	rt, err := s.conversation(w, r, id, kvrouting.OpNewWrite, who)
	if err != nil {
		return err
	}
	members, err := rt.region.Conversations().AddMember(r.Context(), rt.dec, id, req.User, who.Name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, membersJSON{Members: members})
	return nil
}

// listMembers: GET /v1/conversations/{id}/members.
func (s *Server) listMembers(w http.ResponseWriter, r *http.Request, who Identity) error {
	id := r.PathValue("id")
	rt, err := s.conversation(w, r, id, kvrouting.OpRead, who)
	if err != nil {
		return err
	}
	members, err := rt.region.Conversations().Members(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, membersJSON{Members: members})
	return nil
}

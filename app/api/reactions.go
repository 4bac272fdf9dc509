package api

import (
	"net/http"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/app/chat/reactions"
	"github.com/cutover/cutover/kvrouting"
)

type reactionJSON struct {
	User  string `json:"user"`
	Emoji string `json:"emoji"`
}

type reactionsJSON struct {
	Reactions []reactionJSON `json:"reactions"`
}

// reactionTarget validates the path of a reaction route, routes the
// conversation for op and checks that the message exists.
func (s *Server) reactionTarget(w http.ResponseWriter, r *http.Request, op kvrouting.OpClass, who Identity, withEmoji bool) (routed, error) {
	id, mid := r.PathValue("id"), r.PathValue("mid")
	if err := chat.ValidID("message id", mid); err != nil {
		return routed{}, err
	}
	if withEmoji {
		if err := reactions.ValidEmoji(r.PathValue("emoji")); err != nil {
			return routed{}, err
		}
	}
	rt, err := s.conversation(w, r, id, op, who)
	if err != nil {
		return routed{}, err
	}
	if _, err := rt.region.Messages().Get(r.Context(), id, mid); err != nil {
		return routed{}, err
	}
	return rt, nil
}

func (s *Server) writeReactions(w http.ResponseWriter, r *http.Request, rt routed) error {
	list, err := rt.region.Reactions().List(r.Context(), r.PathValue("id"), r.PathValue("mid"))
	if err != nil {
		return err
	}
	out := reactionsJSON{Reactions: make([]reactionJSON, len(list))}
	for i, re := range list {
		out.Reactions[i] = reactionJSON{User: re.User, Emoji: re.Emoji}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// react: PUT /v1/conversations/{id}/messages/{mid}/reactions/{emoji} (a new
// write; idempotent).
func (s *Server) react(w http.ResponseWriter, r *http.Request, who Identity) error {
	rt, err := s.reactionTarget(w, r, kvrouting.OpNewWrite, who, true)
	if err != nil {
		return err
	}
	if _, err := rt.region.Reactions().React(r.Context(), rt.dec, r.PathValue("id"), r.PathValue("mid"), who.Name, r.PathValue("emoji")); err != nil {
		return err
	}
	return s.writeReactions(w, r, rt)
}

// unreact: DELETE /v1/conversations/{id}/messages/{mid}/reactions/{emoji}
// (a delete).
func (s *Server) unreact(w http.ResponseWriter, r *http.Request, who Identity) error {
	rt, err := s.reactionTarget(w, r, kvrouting.OpDelete, who, true)
	if err != nil {
		return err
	}
	tombstoned, err := rt.region.Reactions().Unreact(r.Context(), rt.dec, r.PathValue("id"), r.PathValue("mid"), who.Name, r.PathValue("emoji"))
	if err != nil {
		return err
	}
	w.Header().Set(DeleteHeader, deleteKind(tombstoned))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listReactions: GET /v1/conversations/{id}/messages/{mid}/reactions.
func (s *Server) listReactions(w http.ResponseWriter, r *http.Request, who Identity) error {
	rt, err := s.reactionTarget(w, r, kvrouting.OpRead, who, false)
	if err != nil {
		return err
	}
	return s.writeReactions(w, r, rt)
}

type markReadRequest struct {
	MessageID string `json:"message_id"`
}

type readJSON struct {
	User      string `json:"user"`
	MessageID string `json:"message_id"`
}

// markRead: PUT /v1/conversations/{id}/read (a new write).
func (s *Server) markRead(w http.ResponseWriter, r *http.Request, who Identity) error {
	id := r.PathValue("id")
	var req markReadRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := chat.ValidID("message id", req.MessageID); err != nil {
		return err
	}
	rt, err := s.conversation(w, r, id, kvrouting.OpNewWrite, who)
	if err != nil {
		return err
	}
	if _, err := rt.region.Messages().Get(r.Context(), id, req.MessageID); err != nil {
		return err
	}
	if err := rt.region.ReadState().MarkRead(r.Context(), rt.dec, id, who.Name, req.MessageID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, readJSON{User: who.Name, MessageID: req.MessageID})
	return nil
}

// getRead: GET /v1/conversations/{id}/read.
func (s *Server) getRead(w http.ResponseWriter, r *http.Request, who Identity) error {
	id := r.PathValue("id")
	rt, err := s.conversation(w, r, id, kvrouting.OpRead, who)
	if err != nil {
		return err
	}
	m, err := rt.region.ReadState().Get(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"read": m})
	return nil
}

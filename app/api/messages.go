package api

import (
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"strconv"
	"time"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/app/chat/messages"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
)

// messageJSON is a message as the API shows it.
type messageJSON struct {
	ID           string   `json:"id"`
	Conversation string   `json:"conversation"`
	Author       string   `json:"author"`
	Text         string   `json:"text"`
	Media        []string `json:"media"`
	CreatedAt    string   `json:"created_at"`
	EditedAt     string   `json:"edited_at,omitempty"`
}

func toMessageJSON(m messages.Message) messageJSON {
	j := messageJSON{
		ID: m.ID, Conversation: m.Conversation, Author: m.Author, Text: m.Text, Media: m.Media,
		CreatedAt: m.CreatedAt.Format(time.RFC3339Nano),
	}
	if j.Media == nil {
		j.Media = []string{}
	}
	if !m.EditedAt.IsZero() {
		j.EditedAt = m.EditedAt.Format(time.RFC3339Nano)
	}
	return j
}

type postMessageRequest struct {
	ID    string   `json:"id"`
	Text  string   `json:"text"`
	Media []string `json:"media"`
}

// postMessage: POST /v1/conversations/{id}/messages (a new write). The
// message id is the client's idempotency key: 201 for the first post, 200
// with the stored message for a retry with the same content, 409 otherwise.
func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, who Identity) error {
	id := r.PathValue("id")
	var req postMessageRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := validNewID("message id", req.ID); err != nil {
		return err
	}
	rt, err := s.conversation(w, r, id, kvrouting.OpNewWrite, who)
	if err != nil {
		return err
	}
	for _, mid := range req.Media {
		if err := s.checkMedia(r, id, mid); err != nil {
			return err
		}
	}
	m, created, err := rt.region.Messages().Post(r.Context(), rt.dec, id, messages.Message{
		ID: req.ID, Author: who.Name, Text: req.Text, Media: req.Media,
	})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, toMessageJSON(m))
	return nil
}

// checkMedia refuses a media id that does not exist or belongs to another
// conversation. Media are resources of their own: the blob is read at the
// media's own primary region.
func (s *Server) checkMedia(r *http.Request, conv, mid string) error {
	if err := chat.ValidID("media id", mid); err != nil {
		return err
	}
	rt, err := s.route(nil, r, kvrouting.Resource{Kind: chat.KindMedia, ID: mid}, kvrouting.OpRead, "media")
	if err != nil {
		if services.ToError(err).Code == contract.CodeNotFound {
			return contract.Errorf(contract.CodeInvalid, "unknown media %q", mid)
		}
		return err
	}
	b, err := rt.region.Media().Stat(r.Context(), mid)
	if err != nil {
		if services.ToError(err).Code == contract.CodeNotFound {
			return contract.Errorf(contract.CodeInvalid, "unknown media %q", mid)
		}
		return err
	}
	if b.Conversation != conv {
		return contract.Errorf(contract.CodeInvalid, "media %q belongs to another conversation", mid)
	}
	return nil
}

type messagesPage struct {
	Messages []messageJSON `json:"messages"`
	Next     string        `json:"next"`
}

// listMessages: GET /v1/conversations/{id}/messages?after=&limit=.
func (s *Server) listMessages(w http.ResponseWriter, r *http.Request, who Identity) error {
	id := r.PathValue("id")
	q := r.URL.Query()
	limit := DefaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > s.cfg.MaxPageSize {
			return contract.Errorf(contract.CodeInvalid, "limit must be an integer from 1 to %d", s.cfg.MaxPageSize)
		}
		limit = n
	}
	after, err := decodeCursor(q.Get("after"))
	if err != nil {
		return err
	}
	rt, err := s.conversation(w, r, id, kvrouting.OpRead, who)
	if err != nil {
		return err
	}
	msgs, err := rt.region.Messages().List(r.Context(), id, after, limit+1)
	if err != nil {
		return err
	}
	page := messagesPage{Messages: make([]messageJSON, 0, min(len(msgs), limit))}
	if len(msgs) > limit {
		msgs = msgs[:limit]
		last := msgs[limit-1]
		page.Next = encodeCursor(messages.Position{CreatedAt: last.CreatedAt.UnixNano(), ID: last.ID})
	}
	for _, m := range msgs {
		page.Messages = append(page.Messages, toMessageJSON(m))
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// encodeCursor makes the opaque listing cursor: base64url of the position's
// creation time (8 bytes, big-endian) and id.
func encodeCursor(p messages.Position) string {
	b := binary.BigEndian.AppendUint64(nil, uint64(p.CreatedAt))
	return base64.RawURLEncoding.EncodeToString(append(b, p.ID...))
}

func decodeCursor(s string) (messages.Position, error) {
	if s == "" {
		return messages.Position{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) < 9 {
		return messages.Position{}, contract.Errorf(contract.CodeInvalid, "malformed cursor")
	}
	p := messages.Position{CreatedAt: int64(binary.BigEndian.Uint64(b[:8])), ID: string(b[8:])}
	if p.CreatedAt < 0 || chat.ValidID("cursor", p.ID) != nil {
		return messages.Position{}, contract.Errorf(contract.CodeInvalid, "malformed cursor")
	}
	return p, nil
}

// getMessage: GET /v1/conversations/{id}/messages/{mid}.
func (s *Server) getMessage(w http.ResponseWriter, r *http.Request, who Identity) error {
	id, mid := r.PathValue("id"), r.PathValue("mid")
	if err := chat.ValidID("message id", mid); err != nil {
		return err
	}
	rt, err := s.conversation(w, r, id, kvrouting.OpRead, who)
	if err != nil {
		return err
	}
	m, err := rt.region.Messages().Get(r.Context(), id, mid)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toMessageJSON(m))
	return nil
}

type editMessageRequest struct {
	Text string `json:"text"`
}

// editMessage: PATCH /v1/conversations/{id}/messages/{mid} (an update; the
// author only).
func (s *Server) editMessage(w http.ResponseWriter, r *http.Request, who Identity) error {
	id, mid := r.PathValue("id"), r.PathValue("mid")
	var req editMessageRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := chat.ValidID("message id", mid); err != nil {
		return err
	}
	rt, err := s.conversation(w, r, id, kvrouting.OpUpdate, who)
	if err != nil {
		return err
	}
	m, err := rt.region.Messages().Edit(r.Context(), rt.dec, id, mid, who.Name, req.Text)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toMessageJSON(m))
	return nil
}

// deleteMessage: DELETE /v1/conversations/{id}/messages/{mid} (a delete;
// the author only). X-Cutover-Delete says whether it became a tombstone.
// The message's reactions go with it, under the same decision.
func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request, who Identity) error {
	id, mid := r.PathValue("id"), r.PathValue("mid")
	if err := chat.ValidID("message id", mid); err != nil {
		return err
	}
	rt, err := s.conversation(w, r, id, kvrouting.OpDelete, who)
	if err != nil {
		return err
	}
	tombstoned, err := rt.region.Messages().Delete(r.Context(), rt.dec, id, mid, who.Name)
	if err != nil {
		return err
	}
	// Best effort: the message is gone for the user either way; reactions
	// left behind are unreachable (their message is 404) and leave with the
	// conversation's cleanup.
	if _, err := rt.region.Reactions().RemoveAll(r.Context(), rt.dec, id, mid); err != nil {
		s.log.Warn("api: reactions of a deleted message not removed", "conversation", id, "message", mid, "err", err)
	}
	w.Header().Set(DeleteHeader, deleteKind(tombstoned))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func deleteKind(tombstoned bool) string {
	if tombstoned {
		return "tombstone"
	}
	return "hard"
}

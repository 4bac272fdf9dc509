package api

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/app/chat/media"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
)

type mediaJSON struct {
	ID           string `json:"id"`
	Conversation string `json:"conversation"`
	ContentType  string `json:"content_type"`
	Size         int    `json:"size"`
}

// uploadMedia: POST /v1/conversations/{id}/media, the raw body with its
// Content-Type (a new write on the conversation). The blob becomes its own
// resource media/<id>, registered in the conversation's current region.
func (s *Server) uploadMedia(w http.ResponseWriter, r *http.Request, who Identity) error {
	id := r.PathValue("id")
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		ct = "application/octet-stream"
	}
	rt, err := s.conversation(w, r, id, kvrouting.OpNewWrite, who)
	if err != nil {
		return err
	}
	svc := rt.region.Media()
	limit := min(s.cfg.MaxBodyBytes, int64(svc.MaxBytes()))
	if r.ContentLength > limit {
		return contract.Errorf(contract.CodeTooLarge, "media of %d bytes, at most %d", r.ContentLength, limit)
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return contract.Errorf(contract.CodeTooLarge, "media larger than %d bytes", limit)
		}
		return contract.Errorf(contract.CodeInvalid, "reading body: %v", err)
	}
	if len(data) == 0 {
		return contract.Errorf(contract.CodeInvalid, "empty media")
	}
	if err := media.ValidContentType(ct); err != nil {
		return err
	}
	mid := chat.NewID("m_", 12)
	region := rt.region.Name()
	doc, err := s.cfg.Locker.Register(r.Context(), kvrouting.Resource{Kind: chat.KindMedia, ID: mid}, region)
	if err != nil {
		return routingError(err, "media", mid)
	}
	b, err := svc.Put(r.Context(), s.decideAt(doc, region, kvrouting.OpNewWrite), media.Blob{
		ID: mid, Conversation: id, ContentType: ct, Data: data,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, mediaJSON{ID: b.ID, Conversation: b.Conversation, ContentType: b.ContentType, Size: b.Size})
	return nil
}

// getMedia: GET /v1/media/{id}, the raw bytes, for participants of the
// owning conversation only, as an attachment in a CSP sandbox.
func (s *Server) getMedia(w http.ResponseWriter, r *http.Request, who Identity) error {
	mid := r.PathValue("id")
	if err := chat.ValidID("media id", mid); err != nil {
		return err
	}
	rt, err := s.route(w, r, kvrouting.Resource{Kind: chat.KindMedia, ID: mid}, kvrouting.OpRead, "media")
	if err != nil {
		return err
	}
	b, err := rt.region.Media().Get(r.Context(), mid)
	if err != nil {
		return err
	}
	if _, err := s.conversation(w, r, b.Conversation, kvrouting.OpRead, who); err != nil {
		if services.ToError(err).Code == contract.CodeNotFound {
			return contract.Errorf(contract.CodeNotFound, "media %q not found", mid)
		}
		return err
	}
	h := w.Header()
	h.Set("Content-Type", b.ContentType)
	h.Set("Content-Length", strconv.Itoa(len(b.Data)))
	// User content on the API's origin: a download, never a page. A
	// browser that renders it anyway (an <img> or a top-level visit of an
	// HTML or SVG upload) does so in a sandbox that runs no script and
	// loads nothing, and never sniffs another type.
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": mid}))
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "private, no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Data)
	return nil
}

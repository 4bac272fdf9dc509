package api

import (
	"net/http"
	"strings"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/kvrouting"
)

// Re-resolution on "moved" (httproute.Router.Serve): a request that a
// region refuses because the resource has moved was routed by a stale
// cached document; the router reads the resource's routing from the stream
// leader into every resolver's cache and runs the request once more, at
// the region the fresh document names, before answering. A stale cache
// therefore costs one leader read, never a 423 for the rest of its TTL.

// reresolvable returns, for pattern's requests that are re-run after a
// "moved" refusal, the resource a request is on (the one its parked write
// waits for): the reads and writes on an existing conversation, media
// uploads (their bodies are buffered up to the body cap, which an upload
// may not pass anyway), and media downloads (on the media resource; the
// router also re-resolves the owning conversation it routed by). Nil for
// the others. A read is refused as moved where its routing is older than
// the store's authority record.
func reresolvable(pattern string) func(*http.Request) *kvrouting.Resource {
	method, path, ok := strings.Cut(pattern, " ")
	on := func(kind string) func(*http.Request) *kvrouting.Resource {
		return func(r *http.Request) *kvrouting.Resource {
			return &kvrouting.Resource{Kind: kind, ID: r.PathValue("id")}
		}
	}
	switch {
	case !ok || method == http.MethodHead:
		return nil
	case path == "/v1/media/{id}":
		return on(chat.KindMedia)
	case path == "/v1/conversations/{id}" && method != http.MethodGet:
		return nil
	case path == "/v1/conversations/{id}" || strings.HasPrefix(path, "/v1/conversations/{id}/"):
		return on(chat.KindConversation)
	}
	return nil
}

// ReResolved is how many requests were re-run after a "moved" refusal.
func (s *Server) ReResolved() uint64 { return s.router.ReResolved() }

package api

import (
	"net/http"
	"strings"
)

// Re-resolution on "moved" (httproute.Router.Serve): a request that a
// region refuses because the resource has moved was routed by a stale
// cached document; the router reads the resource's routing from the stream
// leader into every resolver's cache and runs the request once more, at
// the region the fresh document names, before answering. A stale cache
// therefore costs one leader read, never a 423 for the rest of its TTL.

// reresolvable reports whether pattern's requests are re-run after a
// "moved" refusal: the reads and writes on an existing conversation, except
// media uploads (their bodies are not buffered). A read is refused as moved
// where its routing is older than the store's authority record.
func reresolvable(pattern string) bool {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok || method == http.MethodHead {
		return false
	}
	if path == "/v1/conversations/{id}" {
		return method == http.MethodGet
	}
	return strings.HasPrefix(path, "/v1/conversations/{id}/") && !strings.HasSuffix(path, "/media")
}

// ReResolved is how many requests were re-run after a "moved" refusal.
func (s *Server) ReResolved() uint64 { return s.router.ReResolved() }

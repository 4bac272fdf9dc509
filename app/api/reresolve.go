package api

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
)

// Re-resolution on "moved". A write that a region refuses because the
// resource has moved — its store's authority is newer than the routing the
// request was decided on ("moved", contract.Admit),
// or a routing decision there that it is not the primary (a locked
// secondary, not authoritative) — was routed by a stale cached document. The
// server then reads the resource's routing from the stream leader into every
// resolver's cache and runs the request once more, at the region the fresh
// document names, before answering. A stale cache therefore costs one leader
// read, never a 423 for the rest of its TTL.

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

// moved reports whether err is a 423 saying the resource is no longer at the
// region that refused it.
func moved(err error) bool {
	if err == nil {
		return false
	}
	e := services.ToError(err)
	if e.Code != contract.CodeLocked {
		return false
	}
	switch e.Lock {
	case "moved", kvrouting.ReasonLockedSecondary, kvrouting.ReasonNotAuthoritative:
		return true
	}
	return false
}

// bufferBody reads r's body (at most MaxBodyBytes) so that the request can
// be run again, and reports whether it could: a longer body is put back as
// it was (the handler then refuses it with 413) and is not re-run.
func (s *Server) bufferBody(r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBodyBytes+1))
	if err != nil || int64(len(b)) > s.cfg.MaxBodyBytes {
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), r.Body))
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, true
}

// refresh reads conversation id's routing from the leader into the
// default resolver's and every region resolver's caches. It reports whether
// at least one read succeeded.
func (s *Server) refresh(ctx context.Context, id string) bool {
	res := kvrouting.Resource{Kind: chat.KindConversation, ID: id}
	seen := map[*kvrouting.Resolver]bool{}
	ok := false
	for _, rv := range append([]*kvrouting.Resolver{s.cfg.Resolver}, mapValues(s.cfg.Resolvers)...) {
		if rv == nil || seen[rv] {
			continue
		}
		seen[rv] = true
		if _, err := rv.ResolveLeader(ctx, res); err == nil {
			ok = true
		}
	}
	if ok {
		s.reresolved.Add(1)
	}
	return ok
}

func mapValues(m map[string]*kvrouting.Resolver) []*kvrouting.Resolver {
	out := make([]*kvrouting.Resolver, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// ReResolved is how many requests were re-run after a "moved" refusal.
func (s *Server) ReResolved() uint64 { return s.reresolved.Load() }

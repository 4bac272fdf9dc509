package api

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/services/contract"
)

// The /v1/internal routes serve pre-cutover validation (paper 001 §5.3):
// a service identity reads one region's copy of a resource, whatever the
// routing says, through the services' user read path.

// internalCollections names the path segment of each resource kind's
// internal routes: /v1/internal/regions/{region}/<collection>/{id}/...
var internalCollections = map[string]string{
	chat.KindConversation: "conversations",
	chat.KindMedia:        "media",
}

// InternalDigestsPath returns the path, under the API's base URL, of the
// region-pinned validation route that serves the slice digests of resource
// ("conv/<id>", "media/<id>") at region:
// /v1/internal/regions/<region>/<conversations|media>/<id>/digests. The
// orchestrator's NATS directory reads validation digests there
// (contractnats.DirectoryOptions.APIDigestsPath). Errors: a CodeInvalid
// *contract.Error for a resource of another kind or without an id. Safe
// for concurrent use.
func InternalDigestsPath(region, resource string) (string, error) {
	kind, id, _ := strings.Cut(resource, "/")
	coll, ok := internalCollections[kind]
	if !ok || id == "" {
		return "", contract.Errorf(contract.CodeInvalid, "resource %q has no validation route", resource)
	}
	return "/v1/internal/regions/" + url.PathEscape(region) + "/" + coll + "/" + url.PathEscape(id) + "/digests", nil
}

type digestJSON struct {
	Slice int64  `json:"slice"`
	Count uint64 `json:"count"`
	Hash  string `json:"hash"`
}

type digestsJSON struct {
	Region   string                  `json:"region"`
	Resource string                  `json:"resource"`
	Services map[string][]digestJSON `json:"services"`
}

type sliceRecordJSON struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Version   uint64 `json:"version"`
	CreatedAt int64  `json:"created_at"`
	Hash      string `json:"hash"`
}

type sliceJSON struct {
	Region   string                       `json:"region"`
	Resource string                       `json:"resource"`
	From     int64                        `json:"from"`
	To       int64                        `json:"to"`
	Services map[string][]sliceRecordJSON `json:"services"`
}

// internalTarget checks the caller and the path of an internal route.
func (s *Server) internalTarget(r *http.Request, who Identity, kind string) (*chat.Region, string, error) {
	if who.Kind != Service {
		return nil, "", contract.Errorf(contract.CodeForbidden, "validation routes take a service identity")
	}
	name := r.PathValue("region")
	region := s.cfg.Regions[name]
	if region == nil {
		return nil, "", contract.Errorf(contract.CodeNotFound, "region %q is not served here", name)
	}
	id := r.PathValue("id")
	if err := chat.ValidID(kind+" id", id); err != nil {
		return nil, "", err
	}
	return region, id, nil
}

// participantsOf returns the region's services for kind, or the one named
// by the "service" query parameter.
func participantsOf(r *http.Request, region *chat.Region, kind string) ([]contract.Participant, error) {
	ps := region.ParticipantsFor(kind)
	name := r.URL.Query().Get("service")
	if name == "" {
		return ps, nil
	}
	for _, p := range ps {
		if p.Service() == name {
			return []contract.Participant{p}, nil
		}
	}
	return nil, contract.Errorf(contract.CodeInvalid, "no service %q for %s resources", name, kind)
}

// internalDigests: GET /v1/internal/regions/{region}/{kind}/{id}/digests —
// per service, the per-slice count and content hash of the live records.
func (s *Server) internalDigests(kind string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, who Identity) error {
		region, id, err := s.internalTarget(r, who, kind)
		if err != nil {
			return err
		}
		ps, err := participantsOf(r, region, kind)
		if err != nil {
			return err
		}
		res := kind + "/" + id
		out := digestsJSON{Region: region.Name(), Resource: res, Services: map[string][]digestJSON{}}
		for _, p := range ps {
			ds, err := p.Digests(r.Context(), res, contract.Authority{})
			if err != nil {
				return err
			}
			list := make([]digestJSON, len(ds))
			for i, d := range ds {
				list[i] = digestJSON{Slice: d.Slice, Count: d.Count, Hash: hex.EncodeToString(d.Hash[:])}
			}
			out.Services[p.Service()] = list
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
}

// internalSlice: GET /v1/internal/regions/{region}/{kind}/{id}/slice?from=&to=&service=
// — the live records created in [from, to) (unix nanoseconds; default
// everything), with versions and content hashes.
func (s *Server) internalSlice(kind string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, who Identity) error {
		region, id, err := s.internalTarget(r, who, kind)
		if err != nil {
			return err
		}
		from, to := int64(0), int64(math.MaxInt64)
		q := r.URL.Query()
		for _, p := range []struct {
			name string
			v    *int64
		}{{"from", &from}, {"to", &to}} {
			if s := q.Get(p.name); s != "" {
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil || n < 0 {
					return contract.Errorf(contract.CodeInvalid, "%s must be a non-negative unix-nanosecond integer", p.name)
				}
				*p.v = n
			}
		}
		if to < from {
			return contract.Errorf(contract.CodeInvalid, "to before from")
		}
		ps, err := participantsOf(r, region, kind)
		if err != nil {
			return err
		}
		res := kind + "/" + id
		out := sliceJSON{Region: region.Name(), Resource: res, From: from, To: to, Services: map[string][]sliceRecordJSON{}}
		for _, p := range ps {
			recs, err := p.ReadSlice(r.Context(), res, from, to)
			if err != nil {
				return err
			}
			list := make([]sliceRecordJSON, len(recs))
			for i, rec := range recs {
				list[i] = sliceRecordJSON{ID: rec.ID, Kind: rec.Kind, Version: rec.Version, CreatedAt: rec.CreatedAt, Hash: contentHash(rec)}
			}
			out.Services[p.Service()] = list
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
}

// contentHash is the SHA-256 of a record's content (id, kind, creation
// time, data, refs, each length-prefixed): equal across regions exactly
// when the content is.
func contentHash(rec contract.Record) string {
	h := sha256.New()
	put := func(b []byte) {
		_, _ = h.Write(binary.AppendUvarint(nil, uint64(len(b))))
		_, _ = h.Write(b)
	}
	put([]byte(rec.ID))
	put([]byte(rec.Kind))
	_, _ = h.Write(binary.BigEndian.AppendUint64(nil, uint64(rec.CreatedAt)))
	put(rec.Data)
	_, _ = h.Write(binary.AppendUvarint(nil, uint64(len(rec.Refs))))
	for _, ref := range rec.Refs {
		put([]byte(ref))
	}
	return hex.EncodeToString(h.Sum(nil))
}

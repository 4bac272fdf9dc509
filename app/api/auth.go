package api

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
)

// IdentityKind says whether a caller is a user or a service.
type IdentityKind uint8

// Identity kinds.
const (
	// User is an end user; only users take part in conversations.
	User IdentityKind = iota + 1
	// Service is a service identity (the orchestrator's validator); only
	// services call the /v1/internal routes.
	Service
)

// String returns "user" or "service".
func (k IdentityKind) String() string {
	switch k {
	case User:
		return "user"
	case Service:
		return "service"
	}
	return "unknown"
}

// Identity is an authenticated caller.
type Identity struct {
	Kind IdentityKind
	// Name is the user id or the service name.
	Name string
}

// Authenticator turns a request's credentials into an Identity. It returns
// a *contract.Error with CodeUnauthorized for missing or bad credentials
// (any other error is reported as 401 too, unless it is a *contract.Error
// with another code). Implementations must be safe for concurrent use.
type Authenticator interface {
	Authenticate(r *http.Request) (Identity, error)
}

// DevAuth is the development Authenticator: "Authorization: Bearer
// user:<id>" authenticates user <id> with no secret at all, and "Bearer
// svc:<name>:<secret>" authenticates service <name> when <secret> equals
// ServiceSecrets[name]. It is for tests and `cutover dev`, never for
// production. Safe for concurrent use once built.
type DevAuth struct {
	// ServiceSecrets maps a service name to its secret.
	ServiceSecrets map[string]string
}

var _ Authenticator = DevAuth{}

// Authenticate implements Authenticator.
func (a DevAuth) Authenticate(r *http.Request) (Identity, error) {
	tok, err := bearer(r)
	if err != nil {
		return Identity{}, err
	}
	switch {
	case strings.HasPrefix(tok, "user:"):
		id := strings.TrimPrefix(tok, "user:")
		if err := chat.ValidID("user id", id); err != nil {
			return Identity{}, contract.Errorf(contract.CodeUnauthorized, "bad user token: %s", services.ToError(err).Message)
		}
		return Identity{Kind: User, Name: id}, nil
	case strings.HasPrefix(tok, "svc:"):
		name, secret, ok := strings.Cut(strings.TrimPrefix(tok, "svc:"), ":")
		want, known := a.ServiceSecrets[name]
		// Compare even for an unknown name so timing says nothing about
		// which names exist.
		match := subtle.ConstantTimeCompare([]byte(secret), []byte(want)) == 1
		if !ok || name == "" || !known || want == "" || !match {
			return Identity{}, contract.Errorf(contract.CodeUnauthorized, "bad service credentials")
		}
		return Identity{Kind: Service, Name: name}, nil
	}
	return Identity{}, contract.Errorf(contract.CodeUnauthorized, "unrecognised bearer token (want user:<id> or svc:<name>:<secret>)")
}

// bearer returns the request's bearer token.
func bearer(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", contract.Errorf(contract.CodeUnauthorized, "missing Authorization header")
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", contract.Errorf(contract.CodeUnauthorized, "want Authorization: Bearer <token>")
	}
	return strings.TrimSpace(tok), nil
}

// ServiceOnly returns h behind the server's Authenticator for service
// identities only: 401 without valid credentials, 403 for a user, 405 for
// a method other than GET or HEAD, all in the API's JSON error shape. The
// gateway serves /metrics through it (docs/api.md "Metrics"). Safe for
// concurrent use.
func (s *Server) ServiceOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			s.writeError(w, r, contract.Errorf(contract.CodeMethodNotAllowed, "method %s not allowed; allowed: GET, HEAD", r.Method))
			return
		}
		who, err := s.cfg.Auth.Authenticate(r)
		if err != nil {
			s.writeError(w, r, authError(err))
			return
		}
		if who.Kind != Service {
			s.writeError(w, r, contract.Errorf(contract.CodeForbidden, "only service identities read %s", r.URL.Path))
			return
		}
		h.ServeHTTP(w, r)
	})
}

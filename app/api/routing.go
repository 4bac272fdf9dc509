package api

import (
	"net/http"
	"time"

	"github.com/cutover/cutover/kvrouting"
)

// lockJSON is a lock as the API shows it; the token is redacted.
type lockJSON struct {
	Type      string `json:"type"`
	Token     string `json:"token,omitempty"`
	NotBefore string `json:"not_before,omitempty"`
	Expiry    string `json:"expiry,omitempty"`
}

type locationJSON struct {
	Region string   `json:"region"`
	Lock   lockJSON `json:"lock"`
}

// routingJSON is a routing document as the API shows it.
type routingJSON struct {
	Resource        string        `json:"resource"`
	Revision        uint64        `json:"revision"`
	Source          string        `json:"source"`
	Primary         locationJSON  `json:"primary"`
	Secondary       *locationJSON `json:"secondary,omitempty"`
	MigrationID     string        `json:"migration_id,omitempty"`
	Target          string        `json:"target,omitempty"`
	PreLockExpiry   string        `json:"pre_lock_expiry,omitempty"`
	MaxExpiry       string        `json:"max_expiry,omitempty"`
	LastMigrationID string        `json:"last_migration_id,omitempty"`
	UpdatedAt       string        `json:"updated_at"`
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func toLocationJSON(l kvrouting.Location) locationJSON {
	j := locationJSON{Region: l.Region, Lock: lockJSON{Type: l.Lock.Type.String()}}
	if !l.Lock.IsZero() {
		j.Lock.Token = l.Lock.Token.Redacted()
		j.Lock.NotBefore = fmtTime(l.Lock.NotBefore)
		j.Lock.Expiry = fmtTime(l.Lock.Expiry)
	}
	return j
}

// getRouting: GET /v1/routing/{kind}/{id}, for any authenticated caller: the
// routing document as this server resolves it (cache, mirror or leader), the
// lock token redacted.
func (s *Server) getRouting(w http.ResponseWriter, r *http.Request, who Identity) error {
	res := kvrouting.Resource{Kind: r.PathValue("kind"), ID: r.PathValue("id")}
	if err := res.Validate(); err != nil {
		return routingError(err, "resource", res.String())
	}
	rs, err := s.router.ResolverFor(s.cfg.DefaultRegion).Resolve(r.Context(), res)
	if err != nil {
		return routingError(err, "resource", res.String())
	}
	d := rs.Doc
	j := routingJSON{
		Resource: d.Resource, Revision: d.Revision, Source: rs.Source.String(),
		Primary: toLocationJSON(d.Primary), MigrationID: d.MigrationID, Target: d.Target,
		PreLockExpiry: fmtTime(d.PreLockExpiry), MaxExpiry: fmtTime(d.MaxExpiry),
		LastMigrationID: d.LastMigrationID, UpdatedAt: fmtTime(d.UpdatedAt),
	}
	if d.Secondary != nil {
		sec := toLocationJSON(*d.Secondary)
		j.Secondary = &sec
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}

package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// RoutingLock is the lock on one location of a routing document.
type RoutingLock struct {
	// Type is "none", "pre", "hard-delete", "write" or "secondary".
	Type string
	// Token is the lock token, redacted by the server.
	Token string
	// NotBefore is when the lock starts restricting; zero when unlocked.
	NotBefore time.Time
	// Expiry is when the lock lapses; zero when unlocked.
	Expiry time.Time
}

// RoutingLocation is a region and the lock held on it.
type RoutingLocation struct {
	// Region names the region.
	Region string
	// Lock is the lock held there.
	Lock RoutingLock
}

// RoutingDocument is a resource's routing document as the server resolved
// it (paper 000 Figure 1): where the resource lives and which migration
// locks are held. Times are UTC; a zero time means the server sent none.
type RoutingDocument struct {
	// Resource is "kind/id".
	Resource string
	// Revision is the routing store's revision of the document.
	Revision uint64
	// Source says where the server read it (cache, mirror, leader, ...).
	Source string
	// Primary is the authoritative location.
	Primary RoutingLocation
	// Secondary is the locked target during a migration or the locked old
	// source after one; nil when there is none.
	Secondary *RoutingLocation
	// MigrationID and Target are set while a migration holds the document.
	MigrationID, Target string
	// PreLockExpiry bounds every lock of the running migration.
	PreLockExpiry time.Time
	// MaxExpiry caps every lock renewal.
	MaxExpiry time.Time
	// LastMigrationID names the migration that last swapped or released it.
	LastMigrationID string
	// UpdatedAt is the time of the last change.
	UpdatedAt time.Time
	// Raw is the document exactly as received, for fields this type does
	// not name.
	Raw json.RawMessage
}

// Wire forms of the routing document: times are RFC 3339 strings, omitted
// or "" when unset.
type (
	routingLockJSON struct {
		Type      string `json:"type"`
		Token     string `json:"token"`
		NotBefore string `json:"not_before"`
		Expiry    string `json:"expiry"`
	}
	routingLocationJSON struct {
		Region string          `json:"region"`
		Lock   routingLockJSON `json:"lock"`
	}
	routingJSON struct {
		Resource        string               `json:"resource"`
		Revision        uint64               `json:"revision"`
		Source          string               `json:"source"`
		Primary         *routingLocationJSON `json:"primary"`
		Secondary       *routingLocationJSON `json:"secondary"`
		MigrationID     string               `json:"migration_id"`
		Target          string               `json:"target"`
		PreLockExpiry   string               `json:"pre_lock_expiry"`
		MaxExpiry       string               `json:"max_expiry"`
		LastMigrationID string               `json:"last_migration_id"`
		UpdatedAt       string               `json:"updated_at"`
	}
)

func (l routingLocationJSON) decode() (RoutingLocation, error) {
	nb, err := parseTime("not_before", l.Lock.NotBefore)
	if err != nil {
		return RoutingLocation{}, err
	}
	ex, err := parseTime("expiry", l.Lock.Expiry)
	if err != nil {
		return RoutingLocation{}, err
	}
	return RoutingLocation{Region: l.Region, Lock: RoutingLock{Type: l.Lock.Type, Token: l.Lock.Token, NotBefore: nb, Expiry: ex}}, nil
}

// UnmarshalJSON decodes the API's routing document, keeping the bytes in
// Raw. A document without a primary region is an error.
func (d *RoutingDocument) UnmarshalJSON(b []byte) error {
	var w routingJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Primary == nil || w.Primary.Region == "" {
		return errors.New("routing document without a primary region")
	}
	out := RoutingDocument{
		Resource: w.Resource, Revision: w.Revision, Source: w.Source,
		MigrationID: w.MigrationID, Target: w.Target, LastMigrationID: w.LastMigrationID,
		Raw: append(json.RawMessage(nil), b...),
	}
	var err error
	if out.Primary, err = w.Primary.decode(); err != nil {
		return err
	}
	if w.Secondary != nil {
		sec, err := w.Secondary.decode()
		if err != nil {
			return err
		}
		out.Secondary = &sec
	}
	for _, f := range []struct {
		name string
		in   string
		out  *time.Time
	}{
		{"pre_lock_expiry", w.PreLockExpiry, &out.PreLockExpiry},
		{"max_expiry", w.MaxExpiry, &out.MaxExpiry},
		{"updated_at", w.UpdatedAt, &out.UpdatedAt},
	} {
		if *f.out, err = parseTime(f.name, f.in); err != nil {
			return err
		}
	}
	*d = out
	return nil
}

// Routing returns the routing document of the resource kind/id (for
// example "conv", "c1"; media are "media", "<id>") as the server resolves
// it, with the lock token redacted. It is a diagnostic read: which region
// serves the resource, and which migration lock is in force.
//
// Errors: ErrInvalid for an empty kind or id; an *APIError (CodeNotFound
// when no document exists, CodeInvalid for a malformed kind or id);
// ErrBadResponse when the body is not a routing document; ctx's error.
func (c *Client) Routing(ctx context.Context, kind, id string) (RoutingDocument, error) {
	if err := needAll("resource kind", kind, "resource id", id); err != nil {
		return RoutingDocument{}, err
	}
	r := &request{method: http.MethodGet, path: path("v1", "routing", kind, id), idempotent: true}
	var out RoutingDocument
	_, err := c.call(ctx, r, &out)
	return out, err
}

// Package conversations is the chat service that owns a conversation's
// metadata (title, creator, creation time) and its roster. Its records live
// under the conversation's resource "conv/<id>": one record of kind "meta"
// with id "meta", and one record of kind "member" per participant, keyed by
// user id.
package conversations

import (
	"context"
	"errors"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/cutover/cutover/app/chat/internal/core"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
	"github.com/vmihailenco/msgpack/v5"
)

// ServiceName is the service's name in the migration contract.
const ServiceName = "conversations"

// Record kinds and ids.
const (
	// KindMeta is the kind of the metadata record.
	KindMeta = "meta"
	// MetaID is the id of the metadata record.
	MetaID = "meta"
	// KindMember is the kind of a roster entry; its id is the user id.
	KindMember = "member"
)

// Limits.
const (
	// MaxTitleBytes is the longest title accepted.
	MaxTitleBytes = 1024
	// DefaultMaxMembers caps a roster unless Options.MaxMembers says otherwise.
	DefaultMaxMembers = 1000
)

// Options configures a Service. Zero values mean the defaults.
type Options struct {
	// Clock is the store's clock (default time.Now).
	Clock func() time.Time
	// MaxMembers caps the roster (default DefaultMaxMembers).
	MaxMembers int
}

// Conversation is a conversation's metadata and roster.
type Conversation struct {
	ID        string
	Title     string
	CreatedBy string
	CreatedAt time.Time
	// Members are the user ids of the roster, sorted.
	Members []string
}

// Service is the conversations service at one region. It implements
// contract.Participant through the embedded contract. Safe for concurrent
// use.
type Service struct {
	*core.Participant
	c          *core.Core
	maxMembers int
}

var _ contract.Participant = (*Service)(nil)

// New returns the service over st, which it does not own.
func New(st *store.Store, opts Options) *Service {
	if opts.MaxMembers <= 0 {
		opts.MaxMembers = DefaultMaxMembers
	}
	c := core.New(ServiceName, st, opts.Clock, services.StoreParticipantOptions{})
	return &Service{Participant: c.Participant(), c: c, maxMembers: opts.MaxMembers}
}

type metaData struct {
	Title     string `msgpack:"t"`
	CreatedBy string `msgpack:"by"`
}

type memberData struct {
	AddedBy string `msgpack:"by,omitempty"`
}

// Create writes a new conversation's metadata and roster under decision d
// (a new write). createdBy is always a member. The metadata record is the
// claim: a second Create of the same id gets CodeConflict, even after a
// partial first attempt. Errors: *contract.Error — invalid (ids, title,
// roster size), conflict, locked, internal.
func (s *Service) Create(ctx context.Context, d kvrouting.Decision, id, title, createdBy string, members []string) (Conversation, error) {
	if err := core.Check(d, kvrouting.OpNewWrite); err != nil {
		return Conversation{}, err
	}
	if err := core.ValidID("conversation id", id); err != nil {
		return Conversation{}, err
	}
	if err := ValidTitle(title); err != nil {
		return Conversation{}, err
	}
	if err := core.ValidID("creator", createdBy); err != nil {
		return Conversation{}, err
	}
	roster := []string{createdBy}
	for _, m := range members {
		if err := core.ValidID("member", m); err != nil {
			return Conversation{}, err
		}
		roster = append(roster, m)
	}
	slices.Sort(roster)
	roster = slices.Compact(roster)
	if len(roster) > s.maxMembers {
		return Conversation{}, contract.Errorf(contract.CodeInvalid, "%d members, at most %d", len(roster), s.maxMembers)
	}
	res := core.ConvResource(id)
	data, err := msgpack.Marshal(&metaData{Title: title, CreatedBy: createdBy})
	if err != nil {
		return Conversation{}, services.ToError(err)
	}
	meta, err := s.c.Create(ctx, d, res, store.Record{ID: MetaID, Kind: KindMeta, Data: data})
	if errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrDeleted) {
		return Conversation{}, contract.Errorf(contract.CodeConflict, "conversation %q already exists", id)
	}
	if err != nil {
		return Conversation{}, services.ToError(err)
	}
	for _, m := range roster {
		if err := s.addMember(ctx, d, res, m, createdBy); err != nil {
			return Conversation{}, err
		}
	}
	return Conversation{ID: id, Title: title, CreatedBy: createdBy, CreatedAt: time.Unix(0, meta.CreatedAt).UTC(), Members: roster}, nil
}

// MaxMembers returns the roster cap.
func (s *Service) MaxMembers() int { return s.maxMembers }

// ValidTitle returns a CodeInvalid *contract.Error unless title is valid
// UTF-8 of at most MaxTitleBytes.
func ValidTitle(title string) error {
	if len(title) > MaxTitleBytes || !utf8.ValidString(title) {
		return contract.Errorf(contract.CodeInvalid, "title must be valid UTF-8 of at most %d bytes", MaxTitleBytes)
	}
	return nil
}

func (s *Service) addMember(ctx context.Context, d kvrouting.Decision, res, user, by string) error {
	data, err := msgpack.Marshal(&memberData{AddedBy: by})
	if err != nil {
		return services.ToError(err)
	}
	_, err = s.c.Create(ctx, d, res, store.Record{ID: user, Kind: KindMember, Data: data})
	if err == nil || errors.Is(err, store.ErrExists) {
		return nil
	}
	return services.ToError(err)
}

// Get returns the conversation. Errors: *contract.Error — not_found when the
// region has no metadata for id, invalid, internal.
func (s *Service) Get(ctx context.Context, id string) (Conversation, error) {
	if err := core.ValidID("conversation id", id); err != nil {
		return Conversation{}, err
	}
	res := core.ConvResource(id)
	rec, err := s.c.Get(ctx, res, MetaID)
	if err != nil {
		return Conversation{}, notFound(err, id)
	}
	var md metaData
	if err := msgpack.Unmarshal(rec.Data, &md); err != nil {
		return Conversation{}, contract.Errorf(contract.CodeInternal, "conversation %q: corrupt metadata: %v", id, err)
	}
	members, err := s.members(ctx, res)
	if err != nil {
		return Conversation{}, err
	}
	return Conversation{ID: id, Title: md.Title, CreatedBy: md.CreatedBy, CreatedAt: time.Unix(0, rec.CreatedAt).UTC(), Members: members}, nil
}

// Members returns the sorted roster. Errors: *contract.Error — not_found,
// invalid, internal.
func (s *Service) Members(ctx context.Context, id string) ([]string, error) {
	if err := core.ValidID("conversation id", id); err != nil {
		return nil, err
	}
	res := core.ConvResource(id)
	if _, err := s.c.Get(ctx, res, MetaID); err != nil {
		return nil, notFound(err, id)
	}
	return s.members(ctx, res)
}

func (s *Service) members(ctx context.Context, res string) ([]string, error) {
	recs, err := s.c.ListAll(ctx, res, KindMember)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	slices.Sort(out)
	return out, nil
}

// IsMember reports whether user is on the roster. Errors: *contract.Error —
// not_found when the region has no such conversation, invalid, internal.
func (s *Service) IsMember(ctx context.Context, id, user string) (bool, error) {
	if err := core.ValidID("conversation id", id); err != nil {
		return false, err
	}
	if err := core.ValidID("user", user); err != nil {
		return false, err
	}
	res := core.ConvResource(id)
	_, err := s.c.Get(ctx, res, user)
	if err == nil {
		return true, nil
	}
	if services.ToError(err).Code != contract.CodeNotFound {
		return false, err
	}
	if _, err := s.c.Get(ctx, res, MetaID); err != nil {
		return false, notFound(err, id)
	}
	return false, nil
}

// AddMember adds user to the roster under decision d (a new write) and
// returns the roster. Adding a member twice is not an error. Errors:
// *contract.Error — invalid (including a full roster), not_found, locked,
// internal.
func (s *Service) AddMember(ctx context.Context, d kvrouting.Decision, id, user, by string) ([]string, error) {
	if err := core.Check(d, kvrouting.OpNewWrite); err != nil {
		return nil, err
	}
	if err := core.ValidID("user", user); err != nil {
		return nil, err
	}
	members, err := s.Members(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, ok := slices.BinarySearch(members, user); ok {
		return members, nil
	}
	if len(members) >= s.maxMembers {
		return nil, contract.Errorf(contract.CodeInvalid, "conversation %q already has %d members", id, len(members))
	}
	if err := s.addMember(ctx, d, core.ConvResource(id), user, by); err != nil {
		return nil, err
	}
	return s.members(ctx, core.ConvResource(id))
}

func notFound(err error, id string) error {
	if e := services.ToError(err); e.Code == contract.CodeNotFound {
		return contract.Errorf(contract.CodeNotFound, "conversation %q not found", id)
	}
	return err
}

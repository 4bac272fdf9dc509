// Package messages is the chat service that owns a conversation's messages.
// Its records live under the conversation's resource "conv/<id>", kind
// "message", keyed by the client-supplied message id, which is the
// idempotency key of a post. A message's media are recorded as Refs
// ("media/<id>") so that export discovers them as dependent resources.
package messages

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
	"github.com/cutover/cutover/services/participant"
	"github.com/cutover/cutover/services/store"
	"github.com/vmihailenco/msgpack/v5"
)

// ServiceName is the service's name in the migration contract.
const ServiceName = "messages"

// KindMessage is the kind of a message record.
const KindMessage = "message"

// Limits.
const (
	// DefaultMaxTextBytes caps a message's text unless Options says otherwise.
	DefaultMaxTextBytes = 64 << 10
	// MaxMedia is the most media a message may reference.
	MaxMedia = 16
)

// Options configures a Service. Zero values mean the defaults.
type Options struct {
	// Clock is the store's clock (default time.Now); it stamps edits.
	Clock func() time.Time
	// MaxTextBytes caps a message's text (default DefaultMaxTextBytes).
	MaxTextBytes int
}

// Message is one chat message.
type Message struct {
	ID           string
	Conversation string
	Author       string
	Text         string
	// Media are the ids of the media the message references.
	Media     []string
	CreatedAt time.Time
	// EditedAt is zero for a message never edited.
	EditedAt time.Time
}

// Position is a place in the (CreatedAt, ID) order of a conversation's
// messages; the zero Position is before the first message.
type Position struct {
	CreatedAt int64
	ID        string
}

// Service is the messages service at one region. It implements
// contract.Participant through the embedded contract. Safe for concurrent
// use.
type Service struct {
	*core.Participant
	c       *core.Core
	maxText int
}

var _ contract.Participant = (*Service)(nil)

// New returns the service over st, which it does not own.
func New(st *store.Store, opts Options) *Service {
	if opts.MaxTextBytes <= 0 {
		opts.MaxTextBytes = DefaultMaxTextBytes
	}
	c := core.New(ServiceName, st, opts.Clock, services.StoreParticipantOptions{})
	return &Service{Participant: c.Participant(), c: c, maxText: opts.MaxTextBytes}
}

// NewKit returns the service over the participant kit kit (its records in
// a team's own database, e.g. PostgreSQL through services/pgstore). kit's
// service must be ServiceName.
func NewKit(kit *participant.Participant, opts Options) *Service {
	if opts.MaxTextBytes <= 0 {
		opts.MaxTextBytes = DefaultMaxTextBytes
	}
	c := core.NewKit(ServiceName, kit, opts.Clock)
	return &Service{Participant: c.Participant(), c: c, maxText: opts.MaxTextBytes}
}

// MediaRef returns the dependent-resource reference of media id.
func MediaRef(id string) string { return core.MediaResource(id) }

type messageData struct {
	Author   string   `msgpack:"a"`
	Text     string   `msgpack:"t"`
	Media    []string `msgpack:"m,omitempty"`
	EditedAt int64    `msgpack:"e,omitempty"`
}

func (s *Service) validText(text string, media int) error {
	if len(text) > s.maxText {
		return contract.Errorf(contract.CodeTooLarge, "text is longer than %d bytes", s.maxText)
	}
	if !utf8.ValidString(text) {
		return contract.Errorf(contract.CodeInvalid, "text is not valid UTF-8")
	}
	if text == "" && media == 0 {
		return contract.Errorf(contract.CodeInvalid, "a message needs text or media")
	}
	return nil
}

// Post writes a new message under decision d (a new write). m.ID is the
// client's idempotency key: posting an id again with the same author, text
// and media returns the stored message with created=false; different
// content, or an id whose message was deleted, is CodeConflict. m.CreatedAt
// and m.EditedAt are ignored. Errors: *contract.Error — invalid, too_large,
// conflict, locked, internal.
func (s *Service) Post(ctx context.Context, d kvrouting.Decision, conv string, m Message) (msg Message, created bool, err error) {
	if err := core.Check(d, kvrouting.OpNewWrite); err != nil {
		return Message{}, false, err
	}
	if err := core.ValidID("conversation id", conv); err != nil {
		return Message{}, false, err
	}
	if err := core.ValidID("message id", m.ID); err != nil {
		return Message{}, false, err
	}
	if err := core.ValidID("author", m.Author); err != nil {
		return Message{}, false, err
	}
	if err := s.validText(m.Text, len(m.Media)); err != nil {
		return Message{}, false, err
	}
	if len(m.Media) > MaxMedia {
		return Message{}, false, contract.Errorf(contract.CodeInvalid, "%d media, at most %d", len(m.Media), MaxMedia)
	}
	refs := make([]string, 0, len(m.Media))
	for i, id := range m.Media {
		if err := core.ValidID("media id", id); err != nil {
			return Message{}, false, err
		}
		if slices.Contains(m.Media[:i], id) {
			return Message{}, false, contract.Errorf(contract.CodeInvalid, "media %q listed twice", id)
		}
		refs = append(refs, MediaRef(id))
	}
	md := messageData{Author: m.Author, Text: m.Text, Media: slices.Clone(m.Media)}
	data, err := msgpack.Marshal(&md)
	if err != nil {
		return Message{}, false, services.ToError(err)
	}
	rec, err := s.c.Create(ctx, d, core.ConvResource(conv), store.Record{ID: m.ID, Kind: KindMessage, Data: data, Refs: refs})
	switch {
	case errors.Is(err, store.ErrDeleted):
		return Message{}, false, contract.Errorf(contract.CodeConflict, "message %q was deleted; a deleted id is never reused", m.ID)
	case errors.Is(err, store.ErrExists):
		old, derr := decode(conv, rec)
		if derr != nil {
			return Message{}, false, derr
		}
		if old.Author == m.Author && old.Text == m.Text && slices.Equal(old.Media, m.Media) {
			return old, false, nil // a retried post (paper 001 §4.4)
		}
		return Message{}, false, contract.Errorf(contract.CodeConflict, "message id %q is already used with other content", m.ID)
	case err != nil:
		return Message{}, false, services.ToError(err)
	}
	msg, err = decode(conv, rec)
	return msg, err == nil, err
}

// Get returns a live message. Errors: *contract.Error — not_found (missing
// or deleted), invalid, internal.
func (s *Service) Get(ctx context.Context, conv, id string) (Message, error) {
	if err := core.ValidID("conversation id", conv); err != nil {
		return Message{}, err
	}
	if err := core.ValidID("message id", id); err != nil {
		return Message{}, err
	}
	rec, err := s.c.Get(ctx, core.ConvResource(conv), id)
	if err != nil {
		return Message{}, msgNotFound(err, id)
	}
	return decode(conv, rec)
}

// List returns up to limit messages after position after, oldest first.
// Errors: *contract.Error — invalid, internal.
func (s *Service) List(ctx context.Context, conv string, after Position, limit int) ([]Message, error) {
	if err := core.ValidID("conversation id", conv); err != nil {
		return nil, err
	}
	recs, err := s.c.List(ctx, core.ConvResource(conv), KindMessage, after.CreatedAt, after.ID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]Message, 0, len(recs))
	for _, r := range recs {
		m, err := decode(conv, r)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// Edit replaces a message's text under decision d (an update); only the
// author may edit. Errors: *contract.Error — locked, forbidden, not_found,
// invalid, too_large, internal.
func (s *Service) Edit(ctx context.Context, d kvrouting.Decision, conv, id, editor, text string) (Message, error) {
	if err := core.Check(d, kvrouting.OpUpdate); err != nil {
		return Message{}, err
	}
	old, err := s.Get(ctx, conv, id)
	if err != nil {
		return Message{}, err
	}
	if old.Author != editor {
		return Message{}, contract.Errorf(contract.CodeForbidden, "only the author may edit message %q", id)
	}
	if err := s.validText(text, len(old.Media)); err != nil {
		return Message{}, err
	}
	md := messageData{Author: old.Author, Text: text, Media: old.Media, EditedAt: s.c.Now().UnixNano()}
	data, err := msgpack.Marshal(&md)
	if err != nil {
		return Message{}, services.ToError(err)
	}
	refs := make([]string, len(old.Media))
	for i, m := range old.Media {
		refs[i] = MediaRef(m)
	}
	rec, err := s.c.Update(ctx, d, kvrouting.OpUpdate, core.ConvResource(conv), store.Record{ID: id, Kind: KindMessage, Data: data, Refs: refs})
	if err != nil {
		return Message{}, msgNotFound(err, id)
	}
	return decode(conv, rec)
}

// Delete deletes a message under decision d; only the author may delete.
// The content goes at once; the record stays as a stripped tombstone until
// the store's tombstone TTL, so that the id, the client's idempotency key,
// cannot be posted again by a late retry (Post answers CodeConflict). It
// reports whether the migration protocol demanded the tombstone (a
// hard-delete lock or fence, paper 001 §4.3) — the API's "tombstone" as
// opposed to an ordinary ("hard") delete. Errors: *contract.Error — locked,
// forbidden, not_found, invalid, internal.
func (s *Service) Delete(ctx context.Context, d kvrouting.Decision, conv, id, by string) (tombstoned bool, err error) {
	if err := core.Check(d, kvrouting.OpDelete); err != nil {
		return false, err
	}
	old, err := s.Get(ctx, conv, id)
	if err != nil {
		return false, err
	}
	if old.Author != by {
		return false, contract.Errorf(contract.CodeForbidden, "only the author may delete message %q", id)
	}
	res, err := s.c.DeleteKeepID(ctx, d, core.ConvResource(conv), id)
	if err != nil {
		return false, msgNotFound(err, id)
	}
	return res.Tombstoned, nil
}

func decode(conv string, r store.Record) (Message, error) {
	var md messageData
	if err := msgpack.Unmarshal(r.Data, &md); err != nil {
		return Message{}, contract.Errorf(contract.CodeInternal, "message %q: corrupt record: %v", r.ID, err)
	}
	m := Message{
		ID: r.ID, Conversation: conv, Author: md.Author, Text: md.Text, Media: md.Media,
		CreatedAt: time.Unix(0, r.CreatedAt).UTC(),
	}
	if m.Media == nil {
		m.Media = []string{}
	}
	if md.EditedAt != 0 {
		m.EditedAt = time.Unix(0, md.EditedAt).UTC()
	}
	return m, nil
}

func msgNotFound(err error, id string) error {
	if e := services.ToError(err); e.Code == contract.CodeNotFound {
		return contract.Errorf(contract.CodeNotFound, "message %q not found", id)
	}
	return err
}

// Package chat bundles the reference services of a chat conversation at one
// region: conversations (metadata and roster), messages, reactions,
// readstate (per-user consumption) and media (blobs, a dependent resource
// with its own routing document). Each service is its own package with its
// own Pebble store and implements contract.Participant, the migration
// contract.
//
// Every user operation of the services takes the kvrouting.Decision the
// caller made for it at this region and applies it before touching storage
// (paper 001 §5.2, Table 4): Allow performs the operation (the store still
// admits it atomically by its authority record, contract.Admit), Tombstone turns a delete into a
// tombstone, Reject returns a *contract.Error with CodeLocked and a
// RetryAfter.
package chat

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cutover/cutover/app/chat/conversations"
	"github.com/cutover/cutover/app/chat/internal/core"
	"github.com/cutover/cutover/app/chat/media"
	"github.com/cutover/cutover/app/chat/messages"
	"github.com/cutover/cutover/app/chat/reactions"
	"github.com/cutover/cutover/app/chat/readstate"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
	"github.com/cutover/cutover/services/store"
)

// Resource kinds.
const (
	// KindConversation is the kind of a conversation resource: "conv/<id>".
	KindConversation = core.KindConversation
	// KindMedia is the kind of a media resource: "media/<id>".
	KindMedia = core.KindMedia
)

// ConvResource returns "conv/<id>", the resource string of a conversation in
// the services' stores and the contract.
func ConvResource(id string) string { return core.ConvResource(id) }

// MediaResource returns "media/<id>".
func MediaResource(id string) string { return core.MediaResource(id) }

// ServiceNames lists the services of a region in the order Participants
// returns them.
var ServiceNames = []string{
	conversations.ServiceName, messages.ServiceName, reactions.ServiceName,
	readstate.ServiceName, media.ServiceName,
}

// RegionOptions configures OpenRegion. Zero values mean the defaults.
type RegionOptions struct {
	// Name is the region's name (required; a-z, 0-9 and '-').
	Name string
	// Dir is the data directory; each service's store lives in
	// Dir/<service>. Required unless InMemory.
	Dir string
	// InMemory keeps every store on its own in-memory filesystem (tests, the
	// dev harness). Dir is then ignored.
	InMemory bool
	// Clock is the stores' and services' clock (default time.Now). It
	// decides fence expiry and timestamps.
	Clock func() time.Time
	// TombstoneTTL is the stores' tombstone TTL (default
	// store.DefaultTombstoneTTL).
	TombstoneTTL time.Duration
	// SliceWidth is the validation time-slice width (default
	// store.DefaultSliceWidth); source and target must agree.
	SliceWidth time.Duration
	// NoSync commits without fsync (benchmarks and demos only).
	NoSync bool
	// MaxMediaBytes caps a blob (default media.DefaultMaxBytes).
	MaxMediaBytes int
	// WrapFS, if set, wraps each store's filesystem (fault injection).
	WrapFS func(vfs.FS) vfs.FS
	// MessagesStorage, when set, keeps the messages service's records
	// there, through the participant kit (services/participant; e.g.
	// services/pgstore, PostgreSQL) instead of a Pebble store: one
	// resource then spans two kinds of store, and migrates across both.
	// The region does not own it.
	MessagesStorage participant.Storage
}

// Region is one region's chat services. Safe for concurrent use; Close once
// no request uses it any more.
type Region struct {
	name   string
	stores []*store.Store
	// kitStorage is the messages' storage on the participant kit (nil:
	// Pebble).
	kitStorage participant.Storage

	conversations *conversations.Service
	messages      *messages.Service
	reactions     *reactions.Service
	readstate     *readstate.Service
	media         *media.Service
}

// OpenRegion opens (creating if needed) the five services' stores of one
// region. Errors: the store's errors (store.ErrInvalid for bad options,
// store.ErrCorrupt), wrapped with the service's name.
func OpenRegion(opts RegionOptions) (*Region, error) {
	if opts.Name == "" {
		return nil, fmt.Errorf("chat: %w: region name is required", store.ErrInvalid)
	}
	if !opts.InMemory && opts.Dir == "" {
		return nil, fmt.Errorf("chat: %w: region %s: Dir is required unless InMemory", store.ErrInvalid, opts.Name)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	r := &Region{name: opts.Name}
	open := func(service string) (*store.Store, error) {
		so := store.Options{
			Dir: filepath.Join(opts.Dir, service), Clock: opts.Clock,
			TombstoneTTL: opts.TombstoneTTL, SliceWidth: opts.SliceWidth,
		}
		if opts.InMemory {
			so.Dir, so.FS = "", vfs.NewMem()
		}
		if opts.WrapFS != nil {
			base := so.FS
			if base == nil {
				base = vfs.Default
			}
			so.FS = opts.WrapFS(base)
		}
		if opts.NoSync {
			f := false
			so.Sync = &f
		}
		st, err := store.Open(so)
		if err != nil {
			return nil, fmt.Errorf("chat: region %s: %s store: %w", opts.Name, service, err)
		}
		r.stores = append(r.stores, st)
		return st, nil
	}
	var sts [5]*store.Store
	for i, name := range ServiceNames {
		if name == messages.ServiceName && opts.MessagesStorage != nil {
			continue
		}
		st, err := open(name)
		if err != nil {
			_ = r.Close()
			return nil, err
		}
		sts[i] = st
	}
	r.conversations = conversations.New(sts[0], conversations.Options{Clock: opts.Clock})
	if opts.MessagesStorage != nil {
		r.kitStorage = opts.MessagesStorage
		kit := participant.New(messages.ServiceName, opts.MessagesStorage, participant.Options{SliceWidth: opts.SliceWidth, Now: opts.Clock})
		r.messages = messages.NewKit(kit, messages.Options{Clock: opts.Clock})
	} else {
		r.messages = messages.New(sts[1], messages.Options{Clock: opts.Clock})
	}
	r.reactions = reactions.New(sts[2], reactions.Options{Clock: opts.Clock})
	r.readstate = readstate.New(sts[3], readstate.Options{Clock: opts.Clock})
	r.media = media.New(sts[4], media.Options{Clock: opts.Clock, MaxBytes: opts.MaxMediaBytes})
	return r, nil
}

// MessagesStorage is the storage the messages service keeps its records
// in through the participant kit (RegionOptions.MessagesStorage); nil on
// Pebble.
func (r *Region) MessagesStorage() participant.Storage { return r.kitStorage }

// Name returns the region's name.
func (r *Region) Name() string { return r.name }

// Conversations returns the conversations service.
func (r *Region) Conversations() *conversations.Service { return r.conversations }

// Messages returns the messages service.
func (r *Region) Messages() *messages.Service { return r.messages }

// Reactions returns the reactions service.
func (r *Region) Reactions() *reactions.Service { return r.reactions }

// ReadState returns the read-state service.
func (r *Region) ReadState() *readstate.Service { return r.readstate }

// Media returns the media service.
func (r *Region) Media() *media.Service { return r.media }

// Participants returns the migration contracts of all five services, in
// ServiceNames order. A service that owns nothing of a resource exports
// empty pages for it, so migrating any resource through all of them is
// correct; ParticipantsFor returns only the ones that matter.
func (r *Region) Participants() []contract.Participant {
	return []contract.Participant{r.conversations, r.messages, r.reactions, r.readstate, r.media}
}

// kindServices is the one table of which services own records of each
// resource kind; ServicesFor and ParticipantsFor read it, and the NATS
// directory gets it through ServicesFor. Names are sorted.
var kindServices = map[string][]string{
	KindConversation: {conversations.ServiceName, messages.ServiceName, reactions.ServiceName, readstate.ServiceName},
	KindMedia:        {media.ServiceName},
}

// ServicesFor returns the names, sorted, of the services that own records of
// resources of kind: conversations, messages, reactions and readstate for
// "conv", media for "media", none for other kinds. The result is the
// caller's to keep. Safe for concurrent use.
func ServicesFor(kind string) []string { return slices.Clone(kindServices[kind]) }

// ParticipantsFor returns the contracts of the services that own records of
// resources of kind (ServicesFor), in the same order; nil for other kinds.
func (r *Region) ParticipantsFor(kind string) []contract.Participant {
	var out []contract.Participant
	for _, name := range kindServices[kind] {
		if p, ok := r.Participant(name); ok {
			out = append(out, p)
		}
	}
	return out
}

// Participant returns the contract of the named service.
func (r *Region) Participant(service string) (contract.Participant, bool) {
	for _, p := range r.Participants() {
		if p.Service() == service {
			return p, true
		}
	}
	return nil, false
}

// Close closes the stores; it waits for calls in flight. Errors: the
// stores' close errors, joined.
func (r *Region) Close() error {
	var errs []error
	for _, st := range r.stores {
		if err := st.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ValidID returns a *contract.Error with CodeInvalid unless id is usable as
// a conversation, message, media or user id: non-empty, at most 128 bytes of
// UTF-8, no control characters. what names the id in the message.
func ValidID(what, id string) error { return core.ValidID(what, id) }

// NewID returns prefix followed by 2n random hex digits.
func NewID(prefix string, n int) string { return core.NewID(prefix, n) }

// LockedError returns the *contract.Error (CodeLocked, with RetryAfter at
// least one second and Lock naming the reason) for a rejecting decision:
// what every service returns for kvrouting.Reject (paper 001 §4.4).
func LockedError(d kvrouting.Decision) *contract.Error { return core.LockedError(d) }

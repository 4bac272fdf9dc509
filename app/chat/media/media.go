// Package media is the chat service that owns media blobs. A blob is its own
// resource "media/<id>", with its own routing document, referenced from
// messages and migrated as a dependent resource; it holds one record of kind
// "blob" with id "blob".
package media

import (
	"context"
	"errors"
	"mime"
	"time"

	"github.com/cutover/cutover/app/chat/internal/core"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
	"github.com/vmihailenco/msgpack/v5"
)

// ServiceName is the service's name in the migration contract.
const ServiceName = "media"

// Record kind and id of a blob.
const (
	// KindBlob is the kind of the blob record.
	KindBlob = "blob"
	// BlobID is the id of the blob record.
	BlobID = "blob"
)

// DefaultMaxBytes caps a blob unless Options says otherwise. It stays below
// half of NATS' default 1 MiB max payload so that an export page carrying
// one blob can always be published.
const DefaultMaxBytes = 512 << 10

// Options configures a Service. Zero values mean the defaults.
type Options struct {
	// Clock is the store's clock (default time.Now).
	Clock func() time.Time
	// MaxBytes caps a blob (default DefaultMaxBytes).
	MaxBytes int
}

// Blob is one media object.
type Blob struct {
	ID string
	// Conversation is the id of the owning conversation: only its
	// participants may read the blob.
	Conversation string
	ContentType  string
	Size         int
	// Data is the content; nil from Stat.
	Data      []byte
	CreatedAt time.Time
}

// Service is the media service at one region. It implements
// contract.Participant through the embedded contract. Safe for concurrent
// use.
type Service struct {
	*core.Participant
	c        *core.Core
	maxBytes int
}

var _ contract.Participant = (*Service)(nil)

// New returns the service over st, which it does not own.
func New(st *store.Store, opts Options) *Service {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	c := core.New(ServiceName, st, opts.Clock, services.StoreParticipantOptions{})
	return &Service{Participant: c.Participant(), c: c, maxBytes: opts.MaxBytes}
}

// MaxBytes returns the largest blob accepted.
func (s *Service) MaxBytes() int { return s.maxBytes }

// ValidContentType returns a CodeInvalid *contract.Error unless ct is a
// media type (RFC 2045) of at most 255 bytes.
func ValidContentType(ct string) error {
	if len(ct) > 255 {
		return contract.Errorf(contract.CodeInvalid, "content type longer than 255 bytes")
	}
	if _, _, err := mime.ParseMediaType(ct); err != nil {
		return contract.Errorf(contract.CodeInvalid, "content type %q: %v", ct, err)
	}
	return nil
}

type blobData struct {
	Owner       string `msgpack:"o"`
	ContentType string `msgpack:"ct"`
	Bytes       []byte `msgpack:"b"`
}

// Put stores a new blob under decision d (a new write) for the resource
// media/<b.ID>, whose routing document the caller registered. Errors:
// *contract.Error — invalid (ids, content type), too_large, conflict (the
// id is taken), locked, internal.
func (s *Service) Put(ctx context.Context, d kvrouting.Decision, b Blob) (Blob, error) {
	if err := core.Check(d, kvrouting.OpNewWrite); err != nil {
		return Blob{}, err
	}
	if err := core.ValidID("media id", b.ID); err != nil {
		return Blob{}, err
	}
	if err := core.ValidID("conversation id", b.Conversation); err != nil {
		return Blob{}, err
	}
	if len(b.Data) > s.maxBytes {
		return Blob{}, contract.Errorf(contract.CodeTooLarge, "media of %d bytes, at most %d", len(b.Data), s.maxBytes)
	}
	if err := ValidContentType(b.ContentType); err != nil {
		return Blob{}, err
	}
	data, err := msgpack.Marshal(&blobData{Owner: b.Conversation, ContentType: b.ContentType, Bytes: b.Data})
	if err != nil {
		return Blob{}, services.ToError(err)
	}
	rec, err := s.c.Create(ctx, d, core.MediaResource(b.ID), store.Record{ID: BlobID, Kind: KindBlob, Data: data})
	if errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrDeleted) {
		return Blob{}, contract.Errorf(contract.CodeConflict, "media %q already exists", b.ID)
	}
	if err != nil {
		return Blob{}, services.ToError(err)
	}
	return decode(b.ID, rec, true)
}

// Get returns the blob with its content. Errors: *contract.Error —
// not_found, invalid, internal.
func (s *Service) Get(ctx context.Context, id string) (Blob, error) {
	return s.get(ctx, id, true)
}

// Stat returns the blob without its content. Errors as Get.
func (s *Service) Stat(ctx context.Context, id string) (Blob, error) {
	return s.get(ctx, id, false)
}

func (s *Service) get(ctx context.Context, id string, withData bool) (Blob, error) {
	if err := core.ValidID("media id", id); err != nil {
		return Blob{}, err
	}
	rec, err := s.c.Get(ctx, core.MediaResource(id), BlobID)
	if err != nil {
		if services.ToError(err).Code == contract.CodeNotFound {
			return Blob{}, contract.Errorf(contract.CodeNotFound, "media %q not found", id)
		}
		return Blob{}, err
	}
	return decode(id, rec, withData)
}

func decode(id string, r store.Record, withData bool) (Blob, error) {
	var bd blobData
	if err := msgpack.Unmarshal(r.Data, &bd); err != nil {
		return Blob{}, contract.Errorf(contract.CodeInternal, "media %q: corrupt record: %v", id, err)
	}
	b := Blob{ID: id, Conversation: bd.Owner, ContentType: bd.ContentType, Size: len(bd.Bytes), CreatedAt: time.Unix(0, r.CreatedAt).UTC()}
	if withData {
		b.Data = bd.Bytes
		if b.Data == nil {
			b.Data = []byte{}
		}
	}
	return b, nil
}

// Package readstate is the chat service that owns per-user consumption of a
// conversation: the last message each participant has read. Its records live
// under the conversation's resource "conv/<id>", kind "read", keyed by user
// id.
package readstate

import (
	"context"
	"errors"
	"time"

	"github.com/cutover/cutover/app/chat/internal/core"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
	"github.com/vmihailenco/msgpack/v5"
)

// ServiceName is the service's name in the migration contract.
const ServiceName = "readstate"

// KindRead is the kind of a read-state record.
const KindRead = "read"

// Options configures a Service. Zero values mean the defaults.
type Options struct {
	// Clock is the store's clock (default time.Now).
	Clock func() time.Time
}

// Service is the read-state service at one region. It implements
// contract.Participant through the embedded contract. Safe for concurrent
// use.
type Service struct {
	*core.Participant
	c *core.Core
}

var _ contract.Participant = (*Service)(nil)

// New returns the service over st, which it does not own.
func New(st *store.Store, opts Options) *Service {
	c := core.New(ServiceName, st, opts.Clock, services.StoreParticipantOptions{})
	return &Service{Participant: c.Participant(), c: c}
}

type readData struct {
	Message string `msgpack:"m"`
}

// MarkRead records that user has read up to message mid, under decision d
// (a new write: it creates the user's record or moves it). The caller checks
// that the message exists. Errors: *contract.Error — invalid, conflict,
// locked, internal.
func (s *Service) MarkRead(ctx context.Context, d kvrouting.Decision, conv, user, mid string) error {
	if err := core.Check(d, kvrouting.OpNewWrite); err != nil {
		return err
	}
	if err := core.ValidID("conversation id", conv); err != nil {
		return err
	}
	if err := core.ValidID("user", user); err != nil {
		return err
	}
	if err := core.ValidID("message id", mid); err != nil {
		return err
	}
	data, err := msgpack.Marshal(&readData{Message: mid})
	if err != nil {
		return services.ToError(err)
	}
	_, err = s.c.Upsert(ctx, d, core.ConvResource(conv), store.Record{ID: user, Kind: KindRead, Data: data})
	if errors.Is(err, store.ErrDeleted) {
		return contract.Errorf(contract.CodeConflict, "read state of %q was deleted", user)
	}
	if err != nil {
		return services.ToError(err)
	}
	return nil
}

// Get returns, per user, the last message read. Errors: *contract.Error —
// invalid, internal.
func (s *Service) Get(ctx context.Context, conv string) (map[string]string, error) {
	if err := core.ValidID("conversation id", conv); err != nil {
		return nil, err
	}
	recs, err := s.c.ListAll(ctx, core.ConvResource(conv), KindRead)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(recs))
	for _, r := range recs {
		var rd readData
		if err := msgpack.Unmarshal(r.Data, &rd); err != nil {
			return nil, contract.Errorf(contract.CodeInternal, "read state %q: corrupt record: %v", r.ID, err)
		}
		out[r.ID] = rd.Message
	}
	return out, nil
}

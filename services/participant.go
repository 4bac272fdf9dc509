package services

import (
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
	"github.com/cutover/cutover/services/store"
)

// StoreParticipantOptions configures NewStoreParticipant.
type StoreParticipantOptions struct {
	// Discover returns the dependent resources a record references (e.g. a
	// message's media). nil means the record's Refs.
	Discover func(contract.Record) []string
	// MaxPageBytes caps the encoded size of a page's record data (default
	// 512 KiB) so a page always fits a NATS message.
	MaxPageBytes int
}

// StoreParticipant is the migration contract over a Pebble store.Store:
// the participant kit (services/participant) with the store as its
// storage, as any team's participant is the kit over its own database.
type StoreParticipant struct {
	*participant.Participant
	st *store.Store
}

var (
	_ contract.Participant = (*StoreParticipant)(nil)
	_ contract.Repairer    = (*StoreParticipant)(nil)
)

// NewStoreParticipant returns the contract of service over st.
func NewStoreParticipant(service string, st *store.Store, opts StoreParticipantOptions) *StoreParticipant {
	return &StoreParticipant{st: st, Participant: participant.New(service, st, participant.Options{
		Discover: opts.Discover, MaxPageBytes: opts.MaxPageBytes, SliceWidth: st.SliceWidth(), Now: st.Now})}
}

// Store returns the underlying store.
func (p *StoreParticipant) Store() *store.Store { return p.st }

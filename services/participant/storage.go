// Package participant is the protocol half of a migration participant
// (docs/participant.md, docs/adopt.md), written once over a small storage
// interface that a team implements inside its own database's
// transactions: the authority record and admission (contract.Join,
// contract.Admit) decided in the transaction that carries the operation
// out, tombstones under the hard-delete rule, export pages from a sync
// token (historical and delta), idempotent import where a tombstone beats
// an older live copy, per-slice digests kept incrementally, and the
// cleanup guard. New(service, storage, opts) is a contract.Participant
// (and contract.Repairer) plus the service's user path (Put, Delete, Get,
// List); contracttest.Run proves an adapter.
//
// Adapters here: services/store (Pebble: the reference services' store)
// and services/pgstore (PostgreSQL). A service's records are
// contract.Records: an id, a kind, opaque Data, Refs; the kit keeps
// Version, Seq, CreatedAt, UpdatedAt and the delete marker.
package participant

import (
	"context"

	"github.com/cutover/cutover/services/contract"
)

// Storage is what an adapter implements over its database. Every method
// must be safe for concurrent use.
type Storage interface {
	// Update runs fn in one read-write transaction that holds resource
	// exclusively: no other Update of the resource reads or writes between
	// fn's first read and the commit (a row lock on the resource's
	// authority row, a per-resource mutex over a batch). It commits when
	// fn returns nil and changes nothing when fn returns an error, which
	// Update returns. An Update whose commit fails returns the error and
	// must have changed nothing. A storage failure (the database
	// unreachable) is returned as is; the kit answers it as
	// contract.CodeUnavailable.
	Update(ctx context.Context, resource string, fn func(Tx) error) error
	// View runs fn on a consistent snapshot of resource (read-only).
	View(ctx context.Context, resource string, fn func(Reader) error) error
}

// Reader reads one resource inside a transaction or snapshot.
type Reader interface {
	// Authority returns the resource's authority record; the zero
	// Authority when none was ever written.
	Authority() (contract.Authority, error)
	// Get returns the record id, live or tombstone; found is false when
	// there is none.
	Get(id string) (rec contract.Record, found bool, err error)
	// LastSeq returns the resource's change sequence: the highest Seq
	// ever put since the last Clear (0: none). It never falls except by
	// Clear, even when the record that carried it is removed.
	LastSeq() (uint64, error)
	// Changes returns, in Seq order, up to limit records (live and
	// tombstones) with after < Seq <= upto.
	Changes(after, upto uint64, limit int) ([]contract.Record, error)
	// Live returns, ordered by (CreatedAt, ID), up to limit live records
	// with from <= CreatedAt < to and (CreatedAt, ID) after (afterCreated,
	// afterID); afterID "" with afterCreated < from means from the start.
	Live(from, to, afterCreated int64, afterID string, limit int) ([]contract.Record, error)
	// Digests returns the stored slice digests with Count > 0, in slice
	// order.
	Digests() ([]contract.SliceDigest, error)
}

// Tx is a read-write transaction on one resource (Storage.Update). Its Get
// and Digests see the transaction's own writes; its Changes and Live may
// see the committed state only (the kit reads ranges in an Update before it
// writes).
type Tx interface {
	Reader
	// SetAuthority replaces the resource's authority record.
	SetAuthority(a contract.Authority) error
	// Put stores rec under rec.ID, replacing what is stored there, and
	// raises the resource's LastSeq to rec.Seq (the kit gives every put a
	// Seq above LastSeq).
	Put(rec contract.Record) error
	// Remove removes the record id (present: the kit checked).
	Remove(id string) error
	// Digest returns the stored digest of slice (zero Count when none).
	Digest(slice int64) (contract.SliceDigest, error)
	// SetDigest stores d; d.Count 0 removes the slice's digest.
	SetDigest(d contract.SliceDigest) error
	// Clear removes every record, tombstone and digest of the resource and
	// resets LastSeq to 0; the authority record stays. It returns how many
	// records (live and tombstones) it removed.
	Clear() (int, error)
}

// Prefetcher is what a Tx may also implement: Prefetch reads the records
// ids in one go, before the kit Gets them one by one (an imported page).
type Prefetcher interface {
	Prefetch(ids []string) error
}

// Presumer is what a Tx may also implement: Presume takes the records ids
// as absent without reading them (Get answers "absent" for each not read
// yet). The presumption is the adapter's to verify before the commit: if
// any of them is stored, the transaction must fail rather than commit (a
// unique key on the record's id that the insert hits does it) and the
// adapter runs fn again in a transaction whose Presume reads the ids
// (as Prefetch). Every presumed id is Put by the kit before the commit.
//
// The kit presumes the records of historical pages: the attempt's first
// page reset the target and a historical copy sends each record once, so
// they are new but for a page imported twice (a retried step) or a move
// back within the reverse window, which cost the second transaction.
type Presumer interface {
	Presume(ids []string) error
}

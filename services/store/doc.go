// Package store is one service's Pebble store in one region: records of many
// resources, the per-resource change sequence that serves as the migration
// sync token, the change index, tombstones with a TTL, the per-resource
// authority record that every operation is admitted by (contract.Admit; the
// backstop of DESIGN.md "Two layers of enforcement"), export and import
// cursors, and per-time-slice digests kept exact at write time so that
// validation compares full content without scanning records.
//
// The store is the participant kit's storage (participant.Storage,
// kit.go): the kit (services/participant) decides every operation —
// admission, tombstones, the import rule, the digests — and the store keeps
// what it decides, each operation in one batch; the store's own PutAt,
// DeleteAt, GetAt, Import and Cleanup are the kit's over the store.
//
// # Key layout
//
// Every key starts with one ASCII byte naming its family. <res> is the
// resource string and <id> a record id; both are validated to contain no NUL,
// so a NUL after them ends them unambiguously and a prefix scan over
// "<family><res>\x00" never reaches a resource that merely starts with <res>.
// Integers are 8-byte big-endian so that byte order is numeric order; times
// and CreatedAt are unix nanoseconds and validated to be non-negative.
//
//	V                                        -> format {version (3), slice width}; older formats are refused (ErrFormat)
//	a <res>                                  -> contract.Authority (msgpack, its wire keys)
//	c <name>                                 -> cursor bytes (verbatim)
//	d <res> \x00 <slice:8>                   -> sliceDigest (live records only; the hash covers content, Version, UpdatedAt)
//	i <res> \x00 <kind> \x00 <created:8> <id> -> "" kind index, live records only (List)
//	q <res> \x00 <seq:8>                     -> <id> change index, live and tombstones (Changes)
//	r <res> \x00 <id>                        -> Record (the primary copy)
//	s <res>                                  -> resState {seq counter, live, tombstones}
//	t <res> \x00 <created:8> <id>            -> "" time index, live records only (ListSlice)
//	x <expiry:8> <res> \x00 <id>             -> "" tombstone expiry index (SweepTombstones)
//
// Values are msgpack with short field names. Every mutation of a resource
// (record, its index entries, the digest of its slice, the counters and the
// sequence) is one Pebble batch, committed while the resource's lock is held,
// so the indexes and digests are never out of step with the records.
//
// # Concurrency
//
// All methods of *Store are safe for concurrent use by any goroutine.
// Mutations of one resource are serialised by a striped lock; reads use
// Pebble snapshots and take no lock.
package store

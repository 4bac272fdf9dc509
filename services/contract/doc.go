// Package contract is the migration contract (paper 001 §5.1) between the orchestrator and the services that own resources.
//
// A service takes part in migration through Participant: export pages of
// one resource's records from a sync token, import pages idempotently,
// expose per-time-slice digests and slice reads for validation through its
// user read path, clean a resource up at a region, and set / clear the
// per-resource fence in its own store (DESIGN.md "Two layers of
// enforcement"). The orchestrator reaches participants through Endpoint and
// Directory, whatever carries the calls (in process, or NATS in
// services/contractnats).
//
// The package is a leaf: it imports only the standard library, so the
// orchestrator depends on the contract and never on a service's storage.
// Implementations (services/store, services.StoreParticipant) depend on it,
// not the other way round.
//
// The types that cross the wire keep their msgpack encoding exactly
// (services/contractnats/testdata/wire.golden pins it): Record, Fence and
// SliceDigest encode under their Go field names, the others under their
// msgpack tags.
package contract

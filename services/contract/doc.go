// Package contract is the migration contract (paper 001 §5.1) between the
// orchestrator and the services that own resources, version 2
// (docs/participant.md writes it out for implementers in any language).
//
// A service takes part in migration through Participant. Per resource it
// keeps ONE authority record (Authority: a role stamped with the routing
// revision that produced it), changed by ONE monotone, idempotent rule
// (Join), and decides every user read, write and delete and every export,
// import, reset and cleanup with ONE admission function (Admit), atomically
// with the operation. The table of that function is data
// (testdata/admit.txt, AdmitCases) shared by this package's tests, the
// Pebble store's and the conformance kit (services/contracttest).
//
// The orchestrator reaches participants through Endpoint and Directory,
// whatever carries the calls (in process, or NATS in
// services/contractnats).
//
// The package is a leaf: it imports only the standard library, so the
// orchestrator depends on the contract and never on a service's storage.
// Implementations (services/store, services.StoreParticipant) depend on it,
// not the other way round.
//
// The types that cross the wire keep their msgpack encoding exactly
// (services/contractnats/testdata/wire.golden pins it): Record and
// SliceDigest encode under their Go field names, the others under their
// msgpack tags.
package contract

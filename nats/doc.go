// Package cnats runs NATS JetStream for cutover: an embedded server in the
// current process, an N-node cluster on loopback, restarts on the same store
// for fault tests, and provisioning of the ROUTING key-value bucket and of the
// per-region read-replica mirrors that DESIGN.md ("Reading the routing
// document", "Scaling out") describes.
//
// The folder is nats/ but the package is named cnats so that importers can use
// it side by side with github.com/nats-io/nats.go (package nats) without an
// import alias.
//
// Durability: every server starts with JetStream sync_interval "always"
// unless told otherwise (DESIGN.md "Durability and hazards"). For replicated
// streams (R>1) nats-server relaxes per-write fsync of the stream's own block
// files to "sync on flush/snapshot" because the Raft WAL in front of it is
// what makes an acknowledged write durable; R1 streams fsync every write.
//
// Reads: [LeaderGetLast] is the non-direct get that only the stream leader
// answers; use it for lock enforcement ([LeaderGetNext] walks a key's kept
// revisions the same way). [DirectGetLast] may be answered by a
// follower or a mirror and can be stale; use it for unlocked lookups and for
// reading a region's mirror, whose freshness [ReadMirrorHealth] reports.
package cnats

// Package kvrouting is the shared routing library: the per-resource routing
// document that carries the migration lock, the cached resolver every request
// goes through, the allow / tombstone / reject decision, and the lock
// lifecycle (pre-lock → hard-delete → write → swap) as token + revision
// compare-and-swap writes on a JetStream KV bucket.
//
// The design is paper 000 (routing-embedded locking) mapped onto JetStream as
// described in shared/DESIGN.md: the paper's ETag is the KV revision, the
// paper's 412 is a wrong-last-sequence error, the paper's 423 is an unexpired
// lock under another token.
//
// kvrouting knows lock states and their legal transitions only; a service
// knows which of its operations are reads, updates, new writes and deletes.
package kvrouting

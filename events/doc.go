// Package events holds the commands and events of the migration aggregate
// (DESIGN.md "The migration, event-sourced"): their msgpack encoding inside
// a versioned envelope, the subjects they travel on, and the migration state
// every event carries after it is applied (state-carrying events, so a
// worker resumes a migration with ONE read of the last event).
//
// Decode never panics: unknown types, unknown schema versions and garbled
// bytes are errors (ErrUnknownType, ErrSchemaVersion, ErrMalformed).
package events

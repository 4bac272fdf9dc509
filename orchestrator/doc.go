// Package orchestrator is the phase engine of paper 001 Algorithm 1 on
// JetStream: commands in (MIGRATION_CMDS), events out (MIGRATION_EVENTS,
// one subject per migration), one work message per active migration
// (MIGRATION_WORK) whose redelivery is the durable timer.
//
// A migration's state is the fold of its events (Fold); every event also
// carries the state after it, so a worker advances a migration with one
// non-direct read of its last event, one idempotent side effect and one
// append conditioned on Nats-Expected-Last-Subject-Sequence. A worker that
// loses that race drops its step (DESIGN.md "The migration,
// event-sourced"). Any worker resumes any migration.
package orchestrator

// Package projector folds MIGRATION_EVENTS into read models: per-migration
// status and phase timeline, per-tenant progress, and phase-duration
// distributions (p50 / p99 / max, the figures of paper 001 §6.2). The models
// live in memory; Run consumes the stream from sequence 1, and Rebuild
// replays it from sequence 1 into fresh models, which must equal the live
// ones (DESIGN.md "The migration, event-sourced").
package projector

// Package chaos is `cutover chaos` (docs/chaos.md): live
// traffic and continuous migrations on a 3-node JetStream cluster while a
// seeded nemesis breaks things, then the invariant check. Like
// hashicorp/raft's fuzzy package it keeps three things apart:
//
//   - the workload: internal/workload seeds conversations, drives the
//     users and keeps the ledger of what they saw acknowledged; the
//     migration driver (driver.go) starts migrations and tenant moves all
//     the time;
//   - the faults: the cluster's routes run through TCP proxies
//     (cnats.StartProxiedCluster, the fault transport), and the nemesis
//     (nemesis.go) kills stream leaders, kills and pauses orchestrator
//     workers (workers.go), partitions nodes, races duplicate starts and
//     sends half the users through an API with stale routing caches;
//   - the verifier: internal/check (verify.go), fed only by the ledger, the
//     stores and its own watch of every routing revision, never by the
//     engine's opinion.
//
// The deployment itself is internal/system, connected to the proxied
// cluster; chaos starts its own workers so that it can kill and pause them.
package chaos

// Package workload is the chat workload every end-to-end run drives — the
// demo, chaos, the bench suites and the multi-process cluster test: the
// paper's conversation size mix (paper 001 §6.3), seeding through the Go
// SDK, live user traffic with one documented operation mix (Mix), and the
// Ledger of what the clients saw acknowledged, which internal/check holds
// the stores to.
package workload

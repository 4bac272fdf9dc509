// Package bench is the suites of `cutover bench`, each comparing
// this design with its baseline: Routing (resolve + decide vs a
// lock-record), Reads (routing-store reads with and without the holder's
// cached document), Fence (write-blocked windows per fencing strategy),
// Throughput (sustained migrations/s under live traffic), Copy (Phase 2 vs
// the raw publish + write rate) and RunValidate (digests vs a full scan).
// The suites that drive a whole deployment boot it with internal/system and
// drive it with internal/workload (its seeding, its one traffic mix); the
// command only parses flags and prints the Result. Profile writes pprof
// files around a suite. The suites may run concurrently (each boots its
// own deployment in a temporary directory); a Profile is per process.
// Benchmarks measure; nothing here asserts a wall-clock time.
package bench

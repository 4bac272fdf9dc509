// Package conformance is the migration contract's conformance kit, apart
// from package testing: the cases (every row of the admission table, copy,
// replay, delta, tombstones, the write fence, reset, late imports, cleanup,
// bad requests) run against any contract.Participant and its user path,
// under go test (package contracttest adapts *testing.T) or standalone
// (Check, which `cutover conformance` runs over NATS against a live
// participant in any language).
package conformance

import (
	"context"

	"github.com/cutover/cutover/services/contract"
)

// UserPath is a service's user path at one region: what its own API does
// with a request routed with authority a (kvrouting.Decision.Authority;
// the zero Authority: a request no router stamped, decided by the
// participant's record alone). The functions must be safe for concurrent
// use.
type UserPath struct {
	// Write creates the live record id, or updates it when it is live, and
	// returns the stored record.
	Write func(resource, id string, data []byte, refs []string, a contract.Authority) (contract.Record, error)
	// Delete deletes the live record id; tombstoned reports that admission
	// turned the delete into a tombstone (contract.Tombstone), not a
	// service's own policy of keeping ids.
	Delete func(resource, id string, a contract.Authority) (tombstoned bool, err error)
	// Read reads the live record id: (record, found).
	Read func(resource, id string, a contract.Authority) (contract.Record, bool, error)
}

// Harness is what a Factory gives the kit: two instances of the
// implementation (source and target regions) and the service's user path
// at each. Both start empty.
type Harness struct {
	Source, Target         contract.Participant
	SourceUser, TargetUser UserPath
	// ResourcePrefix prefixes the resources the cases use ("conv/kit-"
	// when empty); a run against a live participant gives a prefix of its
	// own so that it meets no earlier run's authority or records.
	ResourcePrefix string
	// Teardown, when set, removes what the cases wrote: each case's
	// resources are made secondary at both participants and cleaned up
	// when the case ends.
	Teardown bool
}

// Factory returns a fresh Harness for one case; it registers its own
// cleanup with t.
type Factory func(t T) Harness

// T is what a case needs of its runner: *testing.T's methods (package
// contracttest adapts one), or the standalone runner of Check. Fatal and
// FailNow end the calling goroutine (runtime.Goexit), as testing's do.
type T interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	FailNow()
	Failed() bool
	Context() context.Context
	Cleanup(func())
	// Run runs f as a sub-case named name and reports whether it passed.
	Run(name string, f func(T)) bool
}

// Run runs every conformance subtest against the implementation factory
// builds. The rules checked, with the paper's numbering:
//
//   - every row of the admission table, through the real operations: the
//     verdict, the Retry-After of a refusal under the write fence, the
//     authority held afterwards, and that a refusal changes nothing;
//   - historical copy in pages of 1, 2, 7 and the default size converges:
//     target digests equal source digests, and both are the contract's
//     bytes (contract.DigestsOf of what the user read path returns) (A2,
//     A3);
//   - replayed pages, every page twice and all pages in reverse order,
//     converge (A3, §5.1);
//   - delta export from the sync token returns what was created, updated
//     and tombstoned after it and nothing committed before it (A2);
//   - with writes between and during pages, no record is lost or
//     duplicated across pages (A2, §4.6);
//   - a delete under tombstone deletes becomes a tombstone that the delta
//     carries to the target, where the user read path no longer finds the
//     record and a tombstone without content remains (§4.3);
//   - an older live copy imported after the tombstone does not resurrect
//     the record (§4.3);
//   - tombstones carry no Data and no Refs, at the source too (§4.3);
//   - records' refs are reported as page dependents (§5.1);
//   - the write fence refuses writes and deletes with CodeLocked and a
//     Retry-After before storage changes (A4, Table 4), and lapses with its
//     Until (Proposition 4);
//   - a reset empties a target holding an older copy; an import of an
//     attempt that has ended (a newer authority installed: a rollback, the
//     swap, a later attempt) changes nothing;
//   - cleanup removes the resource at a secondary and nothing at a primary
//     or an importing target;
//   - bad requests give CodeInvalid and change nothing.
func Run(t T, factory Factory) {
	t.Helper()
	for _, st := range subtests {
		t.Run(st.name, func(t T) { st.fn(t, factory) })
	}
}

var subtests = []struct {
	name string
	fn   func(T, Factory)
}{
	{"AdmissionTable", testAdmissionTable},
	{"HistoricalCopy", testHistoricalCopy},
	{"ReplayedPages", testReplayedPages},
	{"DeltaFromToken", testDeltaFromToken},
	{"PageBoundaries", testPageBoundaries},
	{"TombstoneAfterLiveCopy", testTombstoneAfterLiveCopy},
	{"TombstoneBeatsOlderLiveCopy", testTombstoneBeatsOlderLive},
	{"TombstoneStrippedAtSource", testTombstoneStrippedAtSource},
	{"Dependents", testDependents},
	{"WriteFence", testWriteFence},
	{"WriteFenceLapses", testWriteFenceLapses},
	{"ResetForCopy", testResetForCopy},
	{"LateImport", testLateImport},
	{"Cleanup", testCleanup},
	{"EmptyResource", testEmptyResource},
	{"BadRequests", testBadRequests},
}

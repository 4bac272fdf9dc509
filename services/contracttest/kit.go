// Package contracttest is the migration contract's conformance kit: a
// service owner proves that an implementation of contract.Participant keeps
// the contract (docs/participant.md; paper 001 §5.1 and assumptions
// (A2)–(A4)) by running
//
//	func TestContract(t *testing.T) {
//		contracttest.Run(t, func(t *testing.T) contracttest.Harness { ... })
//	}
//
// The kit writes, deletes and reads through the service's own user path
// (Harness.SourceUser, TargetUser), each request stamped with the
// authority a router would give it, and drives authority, export, import,
// digests and cleanup through the Participant. Every row of the admission
// table (contract.AdmitCases, services/contract/testdata/admit.txt) is run
// against the implementation's real operations. Each subtest asks the
// Factory for a fresh Harness.
//
// Resources used are "conv/kit-<name>" (kvrouting's "kind/id" form) and the
// refs written are "media/kit-<id>"; record ids are short ASCII words. Data
// is opaque ASCII text. An implementation whose user path needs another
// shape adapts it inside the UserPath functions.
//
// Errors of the user path are mapped with services.ToError, as the service
// boundary maps them; errors of Participant methods must already be
// *contract.Error. Authorities are given Untils an hour ahead of the wall
// clock, except where a subtest waits for one to lapse (a few hundred
// milliseconds), so the implementation must run on the real clock.
package contracttest

import (
	"testing"

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
}

// Factory returns a fresh Harness for one subtest; it registers its own
// cleanup with t.
type Factory func(t *testing.T) Harness

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
func Run(t *testing.T, factory Factory) {
	t.Helper()
	for _, st := range subtests {
		t.Run(st.name, func(t *testing.T) { st.fn(t, factory) })
	}
}

var subtests = []struct {
	name string
	fn   func(*testing.T, Factory)
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

// Package contracttest is the migration contract's conformance kit: a
// service owner proves that an implementation of contract.Participant keeps
// the contract of paper 001 §5.1 and assumptions (A2)–(A4) by running
//
//	func TestContract(t *testing.T) {
//		contracttest.Run(t, func(t *testing.T) contracttest.Harness { ... })
//	}
//
// The kit writes through the service's own user path (Harness.Write and
// Delete at the source), drives export, import, fences and cleanup through
// the Participant, and reads the target through the user read path
// (Harness.Read). Each subtest asks the Factory for a fresh Harness.
//
// Resources used are "conv/kit-<name>" (kvrouting's "kind/id" form) and the
// refs written are "media/kit-<id>"; record ids are short ASCII words. Data
// is opaque ASCII text. An implementation whose user path needs another
// shape adapts it inside Write and Read.
//
// Errors of Write and Delete are mapped with services.ToError, as the
// service boundary maps them (a store.FencedError is CodeLocked); errors of
// Participant methods must already be *contract.Error. Fences are set an
// hour ahead of the wall clock, and one subtest waits for a fence of 400 ms
// to expire, so the source must run on the real clock.
package contracttest

import (
	"testing"

	"github.com/cutover/cutover/services/contract"
)

// Harness is what a Factory gives the kit: two instances of the
// implementation (source and target regions) and the service's user path.
// The functions are called from the test goroutine and, in the page
// boundary test, from one more goroutine at the same time, so they must be
// safe for concurrent use (as Participant is).
type Harness struct {
	// Source and Target are the implementation in the source and the
	// target region. They start empty.
	Source, Target contract.Participant
	// Write creates or updates a live record at the source through the
	// service's user write path; returns the stored record.
	Write func(resource, id string, data []byte, refs []string) (contract.Record, error)
	// Delete deletes at the source through the user path (with whatever
	// fence is set).
	Delete func(resource, id string) error
	// Read reads a record at the TARGET through the user read path:
	// (record, found).
	Read func(resource, id string) (contract.Record, bool, error)
	// SourceRegion and TargetRegion name the regions of Source and Target,
	// as Route takes them; they differ.
	SourceRegion, TargetRegion string
	// Route sets the resource's routing as the implementation's Cleanup
	// reads it: primary is the primary region, target the target of a
	// migration in flight ("" none). An implementation guarding Cleanup
	// with services.RoutingCleanupGuard can be given a Routing (NewRouting)
	// and pass its Route.
	Route func(resource, primary, target string) error
}

// Factory returns a fresh Harness for one subtest; it registers its own
// cleanup with t.
type Factory func(t *testing.T) Harness

// Run runs every conformance subtest against the implementation factory
// builds. The rules checked, with the paper's numbering:
//
//   - historical copy in pages of 1, 2, 7 and the default size converges:
//     target digests equal source digests (A2, A3);
//   - replayed pages, every page twice and all pages in reverse order,
//     converge (A3, §5.1);
//   - delta export from the sync token returns what was created, updated
//     and tombstoned after it and nothing committed before it (A2);
//   - with writes between and during pages, no record is lost or
//     duplicated across pages (A2, §4.6);
//   - a delete under the hard-delete fence becomes a tombstone that the
//     delta carries to the target, where the user read path no longer finds
//     the record and a tombstone without content remains (§4.3);
//   - an older live copy imported after the tombstone does not resurrect
//     the record (§4.3);
//   - tombstones carry no Data and no Refs, at the source too (§4.3);
//   - records' refs are reported as page dependents (§5.1);
//   - a write fence refuses writes and deletes with CodeLocked and a
//     Retry-After before storage changes (A4, Table 4); fences are token
//     checked, cleared on rollback, and expire;
//   - cleanup removes the resource at the target;
//   - cleanup deletes nothing at a region that routing names the primary
//     or the target of a migration in flight (contract.Participant.Cleanup);
//   - a participant with import grants (contract.ImportGate) applies a page
//     carrying a Grant only while that grant is in force, and a revoked
//     token stays retired (no late import after validation, the swap or a
//     rollback);
//   - ResetForCopy under the grant empties a target holding an older copy,
//     so a move back keeps nothing the source no longer has; without the
//     grant it deletes nothing;
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
	{"HistoricalCopy", testHistoricalCopy},
	{"ReplayedPages", testReplayedPages},
	{"DeltaFromToken", testDeltaFromToken},
	{"PageBoundaries", testPageBoundaries},
	{"TombstoneAfterLiveCopy", testTombstoneAfterLiveCopy},
	{"TombstoneBeatsOlderLiveCopy", testTombstoneBeatsOlderLive},
	{"TombstoneStrippedAtSource", testTombstoneStrippedAtSource},
	{"Dependents", testDependents},
	{"WriteFence", testWriteFence},
	{"FenceCleared", testFenceCleared},
	{"FenceExpires", testFenceExpires},
	{"Cleanup", testCleanup},
	{"CleanupSparesPrimaryAndTarget", testCleanupSpares},
	{"ImportGrant", testImportGrant},
	{"ResetForCopy", testResetForCopy},
	{"EmptyResource", testEmptyResource},
	{"BadRequests", testBadRequests},
}

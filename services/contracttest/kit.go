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

	"github.com/cutover/cutover/services/conformance"
	"github.com/cutover/cutover/services/participant"
	"github.com/cutover/cutover/services/store"
)

// UserPath is a service's user path at one region (conformance.UserPath).
type UserPath = conformance.UserPath

// Harness is what a Factory gives the kit (conformance.Harness): two
// instances of the implementation (source and target regions) and the
// service's user path at each. Both start empty.
type Harness = conformance.Harness

// Factory returns a fresh Harness for one subtest; it registers its own
// cleanup with t.
type Factory func(t *testing.T) Harness

// Run runs every conformance case (conformance.Cases; the rules checked
// are conformance.Run's) against the implementation factory builds, each
// as a subtest of t.
func Run(t *testing.T, factory Factory) {
	t.Helper()
	conformance.Run(testingT{t}, func(ct conformance.T) Harness { return factory(ct.(testingT).T) })
}

// testingT is a *testing.T as a conformance.T.
type testingT struct{ *testing.T }

func (t testingT) Run(name string, f func(conformance.T)) bool {
	return t.T.Run(name, func(tt *testing.T) { f(testingT{tt}) })
}

// KitUser is the user path of a participant built with the participant kit
// (conformance.KitUser).
func KitUser(p *participant.Participant) UserPath { return conformance.KitUser(p) }

// StoreUser is the user path of a services/store.Store
// (conformance.StoreUser).
func StoreUser(st *store.Store) UserPath { return conformance.StoreUser(st) }

package reactions

import (
	"testing"

	"github.com/cutover/cutover/app/chat/internal/core"
	"github.com/cutover/cutover/app/chat/internal/kittest"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contracttest"
	"github.com/cutover/cutover/services/store"
)

// TestContract runs the migration contract's conformance kit.
func TestContract(t *testing.T) {
	contracttest.Run(t, kittest.Factory(KindReaction, func(st *store.Store) (contract.Participant, *core.Core) {
		s := New(st, Options{})
		return s, s.c
	}))
}

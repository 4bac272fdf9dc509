package messages

import (
	"os"
	"testing"

	"github.com/cutover/cutover/app/chat/internal/core"
	"github.com/cutover/cutover/app/chat/internal/kittest"
	"github.com/cutover/cutover/internal/pgserver/pgtest"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contracttest"
	"github.com/cutover/cutover/services/participant"
	"github.com/cutover/cutover/services/pgstore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestContractOnPostgreSQL runs the conformance kit against the messages
// service with its records in PostgreSQL (the participant kit over
// services/pgstore), through the service's own user path.
func TestContractOnPostgreSQL(t *testing.T) {
	contracttest.Run(t, kittest.FactoryOf(KindMessage, func(t *testing.T) (contract.Participant, *core.Core) {
		st, err := pgstore.Open(t.Context(), pgtest.Database(t), pgstore.Options{Service: ServiceName})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		s := NewKit(participant.New(ServiceName, st, participant.Options{}), Options{})
		return s, s.c
	}))
}

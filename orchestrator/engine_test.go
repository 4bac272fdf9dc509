package orchestrator

import (
	"context"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
)

func TestHappyPath(t *testing.T) {
	e := mustEnv(t)
	e.seed("conv/c1", 20)
	e.startWorker(e.config())
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/c1", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	st := e.waitDone(id, 30*time.Second)
	if st.Status != events.StatusCompleted {
		t.Fatalf("status %s (%s)", st.Status, st.Reason)
	}
	e.assertMigrated("conv/c1")
	h := e.history(id)
	if n := countType(h, events.TypeSwapped); n != 1 {
		t.Fatalf("%d Swapped events", n)
	}
	// 20 records in pages of 7 per service: three historical pages each,
	// copied as one run per service (pipelined), the two services side by
	// side, all six pages checkpointed in one event.
	if n := countType(h, events.TypePagesCopied); n != 1 {
		t.Fatalf("%d PagesCopied events, want 1", n)
	}
	for _, ev := range h {
		if b, ok := ev.Body.(events.PagesCopied); ok {
			next := map[string]uint64{}
			for _, pg := range b.Pages {
				if pg.Cursor != next[pg.Service] {
					t.Fatalf("page of %s from %d, want from %d (pages of a run in order): %+v", pg.Service, pg.Cursor, next[pg.Service], b.Pages)
				}
				next[pg.Service] = pg.Next
			}
			if len(b.Pages) != 6 {
				t.Fatalf("%d pages in the event, want 6", len(b.Pages))
			}
		}
	}
	for _, p := range st.Services {
		if p.Records != 20 || !p.HistoricalDone || !p.DeltaDone {
			t.Fatalf("service progress %+v", p)
		}
	}
	assertFold(t, h)
	if st.Figures == nil || st.Figures.Attempts != 1 || st.Figures.Records != 40 || st.Figures.TotalMs <= 0 {
		t.Fatalf("figures %+v", st.Figures)
	}
	for _, ev := range h {
		if ev.State.Token != st.Token && ev.Type != events.TypeRequested {
			t.Fatalf("token changed without a reschedule")
		}
	}
}

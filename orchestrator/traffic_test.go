package orchestrator

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/projector"
	"github.com/cutover/cutover/services/store"
)

// Writes, updates and deletes keep hitting the source while it migrates;
// the fences at the resource make the target equal the source at the swap
// (DESIGN.md "Two layers of enforcement"), and a projector following the
// stream equals one rebuilt from sequence 1.
func TestMigrationUnderLiveTraffic(t *testing.T) {
	e := mustEnv(t)
	e.seed("conv/live", 30)
	proj := projector.New(e.js, nil)
	go func() { _ = proj.Run(context.Background()) }()
	t.Cleanup(func() { _ = proj.Close() })
	e.startWorker(e.config())

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, svc := range testServices {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := e.stores["us"][svc]
			r := rand.New(rand.NewPCG(1, 2))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("%s-%d", svc, r.IntN(40))
				switch r.IntN(3) {
				case 0:
					_, _ = st.Put("conv/live", store.Record{ID: fmt.Sprintf("new-%d", i), Data: []byte("n")}, true)
				case 1:
					_, _ = st.Put("conv/live", store.Record{ID: id, Data: []byte(fmt.Sprint("u", i))}, false)
				case 2:
					_, _ = st.Delete("conv/live", id)
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/live", Target: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	st := e.waitDone(id, 30*time.Second)
	close(stop)
	wg.Wait()
	if st.Status != events.StatusCompleted {
		t.Fatalf("status %s: %s", st.Status, st.Reason)
	}
	e.assertMigrated("conv/live")

	s, err := e.js.Stream(context.Background(), events.EventStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := proj.WaitSeq(ctx, info.State.LastSeq); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := proj.Rebuild(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := proj.Snapshot()
	if !reflect.DeepEqual(rebuilt, live) {
		t.Fatalf("rebuilt != live")
	}
	if v := live.Migrations[id]; v.Status != events.StatusCompleted || v.Figures == nil {
		t.Fatalf("projected %+v", v)
	}
	if d := live.Durations[projector.DurTotal]; d.Count != 1 {
		t.Fatalf("durations %+v", d)
	}
}

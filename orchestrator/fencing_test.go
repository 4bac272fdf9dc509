package orchestrator

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
)

// A fence may outlive the write lock only once the swap is committed
// (issue 14 #3): a migration that stalls right before its swap leaves the
// source, still the primary, write-fenced only until its write lock
// lapses; after a swap the old location stays fenced as long as its
// secondary lock.
func TestFenceOutlivesWriteLockOnlyAfterSwap(t *testing.T) {
	t.Run("before the swap", func(t *testing.T) {
		// Every write fence set at the source while the routing document
		// still names it the primary must expire with the write lock. A
		// fence that does not is where the worker stalls (no worker
		// progresses the migration), to show what users then see.
		const res = "conv/stall"
		e := mustEnv(t, func(c *kvrouting.LockConfig) { c.WriteLease = 2 * time.Second })
		e.seed(res, 5)
		r, _ := kvrouting.ParseResource(res)
		skew := e.locker.Config().ClockSkew
		stalled := make(chan *kvrouting.Document, 1)
		release := make(chan struct{})
		var checked atomic.Int32
		e.wrap("us", "messages").onFence = func(fe contract.Fence) error {
			if fe.Level != contract.FenceWrite {
				return nil
			}
			doc, err := e.locker.Get(context.Background(), r)
			if err != nil || doc.Primary.Region != "us" {
				return err // swapped: the post-swap fence may last
			}
			checked.Add(1)
			if !fe.Expiry.After(doc.Primary.Lock.Expiry.Add(skew)) {
				return nil
			}
			if err := e.stores["us"]["messages"].SetFence(res, fe); err != nil {
				return err
			}
			stalled <- doc
			<-release
			return errors.New("stalled")
		}
		cfg := e.config()
		cfg.AckWait = time.Minute // no redelivery while the test runs
		e.startWorker(cfg)
		t.Cleanup(func() { close(release) }) // before the worker's Close
		id, err := e.client.Start(context.Background(), events.Start{Resource: res, Target: "eu"})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan *events.State, 1)
		go func() {
			for {
				st, _, err := Load(context.Background(), e.nc, id)
				if err == nil && st.Status.Terminal() {
					done <- st
					return
				}
				select {
				case <-release:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		select {
		case st := <-done:
			if st.Status != events.StatusCompleted || checked.Load() == 0 {
				t.Fatalf("status %s (%s), %d write fences checked before the swap", st.Status, st.Reason, checked.Load())
			}
			return
		case <-time.After(30 * time.Second):
			t.Fatal("migration neither completed nor stalled")
		case doc := <-stalled:
			lapse := doc.Primary.Lock.Expiry.Add(skew)
			fe, _ := e.stores["us"]["messages"].GetFence(res)
			t.Errorf("a write fence at the source, still the primary, expires at %s, %s after its write lock",
				fe.Expiry.Format(time.RFC3339), fe.Expiry.Sub(lapse).Round(time.Second))
			time.Sleep(time.Until(lapse.Add(time.Second)))
			if _, err := e.stores["us"]["messages"].Put(res, store.Record{ID: "after", Data: []byte("x")}, true); err != nil {
				t.Fatalf("a user write at the source %s after its write lock lapsed: %v", time.Since(lapse).Round(time.Second), err)
			}
		}
	})
	t.Run("after the swap", func(t *testing.T) {
		const res = "conv/swapped"
		e := mustEnv(t)
		e.seed(res, 5)
		e.startWorker(e.config())
		e.migrateDone(res, "eu")
		e.assertMigrated(res)
		secondary := e.doc(res).Secondary.Lock.Expiry
		for _, svc := range testServices {
			fe, err := e.stores["us"][svc].GetFence(res)
			if err != nil {
				t.Fatal(err)
			}
			if fe.Expiry.Before(secondary) {
				t.Fatalf("%s: the old location's fence expires at %s, before its secondary lock (%s)", svc, fe.Expiry, secondary)
			}
		}
	})
}

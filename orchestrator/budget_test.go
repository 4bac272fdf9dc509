package orchestrator

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/events"
	"github.com/cutover/cutover/services/contract"
)

// TestWriteBlockBudgetRollsBack: a migration whose delta copy holds the
// writes longer than its write-block budget (--max-write-block) rolls
// back, with the budget named in the rollback's reason, releases the
// resource where it was, and records how long the writes were blocked;
// the next attempt, within the budget, completes, and its figures count
// the blocked time of both attempts.
func TestWriteBlockBudgetRollsBack(t *testing.T) {
	e := mustEnv(t)
	e.seed("conv/budget", 10)
	f := e.wrap("us", "messages")
	var slowed atomic.Bool
	f.onExport = func(req contract.ExportRequest) error {
		if req.Mode == contract.Delta && slowed.CompareAndSwap(false, true) {
			time.Sleep(600 * time.Millisecond) // one slow delta page, under the write lock
		}
		return nil
	}
	e.startWorker(e.config())
	const budget = 300 * time.Millisecond
	id, err := e.client.Start(context.Background(), events.Start{Resource: "conv/budget", Target: "eu", MaxWriteBlock: budget})
	if err != nil {
		t.Fatal(err)
	}
	st := e.waitDone(id, 60*time.Second)
	if st.Status != events.StatusCompleted || st.Attempt != 2 || st.MaxWriteBlock != budget {
		t.Fatalf("status %s attempt %d budget %s (%s)", st.Status, st.Attempt, st.MaxWriteBlock, st.Reason)
	}
	var rb *events.RolledBack
	var blockedAtRollback time.Duration
	for _, ev := range e.history(id) {
		if b, ok := ev.Body.(events.RolledBack); ok {
			rb, blockedAtRollback = &b, ev.State.WriteBlocked
		}
	}
	if rb == nil || !strings.HasPrefix(rb.Reason, "write-block budget 300ms spent (writes blocked ") {
		t.Fatalf("rollback %+v, want the budget named", rb)
	}
	if blockedAtRollback < budget {
		t.Fatalf("blocked %s recorded at the rollback, want at least the budget %s", blockedAtRollback, budget)
	}
	if st.WriteBlocked <= blockedAtRollback || st.Figures == nil || st.Figures.WriteBlockedMs != st.WriteBlocked.Milliseconds() {
		t.Fatalf("blocked %s in all (%s at the rollback), figures %+v", st.WriteBlocked, blockedAtRollback, st.Figures)
	}
	if d := e.doc("conv/budget"); d.Primary.Region != "eu" {
		t.Fatalf("primary %s after the second attempt", d.Primary.Region)
	}
}

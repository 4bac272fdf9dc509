package kvrouting

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/cutover/cutover/nats/natstest"
)

// span is one token's tenure on a resource, in KV revisions: acquired at
// the pre-lock's revision, ended at the swap or release revision.
type span struct {
	tok        Token
	start, end uint64
}

// TestClusterLeaderKill: on a 3-node cluster (R3, sync always) kill the
// bucket's stream leader during a stream of lock operations. Every
// acknowledged compare-and-swap is visible after recovery, and no two tokens
// ever held one resource at once (their revision spans never overlap).
func TestClusterLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	cl := natstest.RunCluster(t, 3)
	e := mustEnvURL(t, cl.ClientURLs(), 3)
	e.lk.cfg.ConvergenceDelay = 0
	e.lk.cfg.Clock = time.Now
	e.lk.cfg.PreLockLease = time.Hour
	e.lk.cfg.HardDeleteLease = time.Hour
	e.lk.cfg.WriteLease = time.Hour
	e.lk.cfg.ClockSkew = 0

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const nres, workers, cycles = 6, 3, 6
	var resources []Resource
	for i := 0; i < nres; i++ {
		resources = append(resources, mustRegister(t, e, "cl-"+resN(i), "us-east"))
	}

	var mu sync.Mutex
	spans := map[string][]span{}
	lastAck := map[string]uint64{}
	ack := func(res Resource, d *Document) {
		mu.Lock()
		defer mu.Unlock()
		if d.Revision > lastAck[res.String()] {
			lastAck[res.String()] = d.Revision
		}
	}

	var wg sync.WaitGroup
	for _, res := range resources {
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(res Resource, w int) {
				defer wg.Done()
				for c := 0; c < cycles && ctx.Err() == nil; c++ {
					tok := NewToken()
					region := []string{"eu-west", "us-east", "ap-south"}[(w+c)%3]
					g, err := retryUnavailable(ctx, func() (Grant, error) {
						return e.lk.PreLock(ctx, res, region, "m", WithToken(tok))
					})
					if errors.Is(err, ErrLocked) || errors.Is(err, ErrConflict) || errors.Is(err, ErrAtTarget) {
						time.Sleep(5 * time.Millisecond)
						continue
					}
					if err != nil {
						t.Errorf("pre-lock: %v", err)
						return
					}
					ack(res, g.Doc)
					sp := span{tok: tok, start: g.Doc.Revision}
					d := g.Doc
					steps := []func(*Document) (*Document, error){
						func(d *Document) (*Document, error) { return e.lk.EscalateHardDelete(ctx, res, tok, d) },
						func(d *Document) (*Document, error) { return e.lk.Renew(ctx, res, tok, d) },
						func(d *Document) (*Document, error) { return e.lk.EscalateWrite(ctx, res, tok, d) },
					}
					if c%2 == 0 {
						steps = append(steps, func(d *Document) (*Document, error) { return e.lk.Swap(ctx, res, tok, d) })
					} else {
						steps = append(steps, func(d *Document) (*Document, error) { return e.lk.Release(ctx, res, tok, d) })
					}
					for _, step := range steps {
						nd, err := retryUnavailable(ctx, func() (*Document, error) { return step(d) })
						if err != nil {
							t.Errorf("step: %v", err)
							return
						}
						ack(res, nd)
						d = nd
					}
					sp.end = d.Revision
					mu.Lock()
					spans[res.String()] = append(spans[res.String()], sp)
					mu.Unlock()
				}
			}(res, w)
		}
	}

	// Kill the leader while the workers run, then bring it back.
	time.Sleep(300 * time.Millisecond)
	leader, err := cl.StreamLeader(ctx, "KV_ROUTING")
	if err != nil {
		t.Fatal(err)
	}
	cl.KillNode(leader)
	if _, err := cl.WaitStreamLeader(ctx, "KV_ROUTING"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := cl.RestartNode(leader); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	total := 0
	for _, res := range resources {
		d, err := retryUnavailable(ctx, func() (*Document, error) { return e.store.GetLeader(ctx, res) })
		if err != nil {
			t.Fatal(err)
		}
		if d.Revision < lastAck[res.String()] {
			t.Fatalf("%s: acknowledged revision %d lost (leader has %d)", res, lastAck[res.String()], d.Revision)
		}
		ss := spans[res.String()]
		sort.Slice(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
		for i := 1; i < len(ss); i++ {
			if ss[i].start <= ss[i-1].end {
				t.Fatalf("%s: tokens %s and %s held the lock at once: revisions [%d,%d] and [%d,%d]",
					res, ss[i-1].tok.Redacted(), ss[i].tok.Redacted(), ss[i-1].start, ss[i-1].end, ss[i].start, ss[i].end)
			}
		}
		total += len(ss)
	}
	if total < nres {
		t.Fatalf("only %d migrations completed", total)
	}
	t.Logf("%d lock tenures over %d resources, leader %d killed and restarted", total, nres, leader)
}

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/cutover/cutover/eventlog"
	"github.com/cutover/cutover/orchestrator"
	"github.com/cutover/cutover/services/contractnats"
)

// What a migration costs, measured around a move: contract requests served
// and the box's synced-append and disk-flush rates.

// contractRequests is the number of contract requests every participant
// reachable through nc has served so far, by operation (the endpoint's
// name: authority, export, import, checkpoint, ...): the sum of their
// endpoints' request counts, read with the NATS micro stats request
// ($SRV.STATS) and the replies collected until none has come for a quarter
// second.
func contractRequests(ctx context.Context, nc *nats.Conn) (map[string]uint64, error) {
	subj, err := micro.ControlSubject(micro.StatsVerb, contractnats.ServiceName, "")
	if err != nil {
		return nil, err
	}
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.PublishRequest(subj, inbox, nil); err != nil {
		return nil, err
	}
	byOp := map[string]uint64{}
	replies := 0
	for {
		wait := 250 * time.Millisecond
		if replies == 0 {
			wait = 5 * time.Second
		}
		m, err := sub.NextMsg(wait)
		if err == nats.ErrTimeout {
			break
		}
		if err != nil {
			return nil, err
		}
		var st micro.Stats
		if err := json.Unmarshal(m.Data, &st); err != nil {
			return nil, fmt.Errorf("bench: contract stats: %w", err)
		}
		for _, ep := range st.Endpoints {
			byOp[ep.Name] += uint64(ep.NumRequests)
		}
		replies++
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if replies == 0 {
		return nil, fmt.Errorf("bench: no contract service answered %s", subj)
	}
	return byOp, nil
}

// syncProbe is what probeSync measured.
type syncProbe struct {
	AppendsPerSec float64 // acknowledged synced appends per second
	FlushesPerSec float64 // the disks' flushes per second meanwhile (0: not readable)
}

// probeSync measures this box's synced appends: n publishes to a scratch
// file stream (R1, the server's fsync setting), publishers of them waiting
// for their acknowledgements at once, and the disk flushes they cost
// (diskFlushes). At once, because that is how a move appends (many
// migrations, several streams): JetStream fsyncs every message on its own
// (no group commit), so the disk's flush rate, shared by every stream and
// every Pebble store on it, is the ceiling; one publisher after another
// measures a round trip instead (2,400/s against 4,000–4,900/s on one
// stream, one disk flush each, on the 2-core box of the README). The stream is
// deleted.
func probeSync(ctx context.Context, js jetstream.JetStream, n, publishers int) (syncProbe, error) {
	const name = "BENCH_FSYNC_PROBE"
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"bench.fsync.probe"}, Storage: jetstream.FileStorage}); err != nil {
		return syncProbe{}, fmt.Errorf("bench: fsync probe: %w", err)
	}
	defer func() { _ = js.DeleteStream(context.WithoutCancel(ctx), name) }()
	data := make([]byte, 512) // about an event's size
	todo := make(chan struct{}, n)
	for range n {
		todo <- struct{}{}
	}
	close(todo)
	publishers = max(publishers, 1)
	errs := make(chan error, publishers) // one at most from each
	flushes, flushesOK := diskFlushes()
	start := time.Now()
	var wg sync.WaitGroup
	for range publishers {
		wg.Go(func() {
			for range todo {
				if _, err := js.Publish(ctx, "bench.fsync.probe", data); err != nil {
					errs <- fmt.Errorf("bench: fsync probe: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start).Seconds()
	close(errs)
	if err := <-errs; err != nil {
		return syncProbe{}, err
	}
	p := syncProbe{AppendsPerSec: Ratio(float64(n), took)}
	if after, ok := diskFlushes(); ok && flushesOK {
		p.FlushesPerSec = Ratio(float64(after-flushes), took)
	}
	return p, nil
}

// eventAppends counts what the migration event log took after stream
// sequence from up to to: its messages and the synced appends that stored
// them (an atomic batch is one: eventlog.Entry.SameAppend).
func eventAppends(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, from, to uint64) (appends, msgs uint64, err error) {
	if to <= from {
		return 0, 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = eventlog.New(nc, js).Follow(ctx, "", from+1, func(e eventlog.Entry) error {
		if e.Seq > to {
			return eventlog.ErrStop
		}
		msgs++
		if !e.SameAppend {
			appends++
		}
		if e.Seq == to {
			return eventlog.ErrStop
		}
		return nil
	})
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("bench: counting the event log's appends: %w", ctx.Err())
	}
	return appends, msgs, err
}

// diskFlushes is the number of flush requests this machine's disks have
// completed (Linux: field 16 of /sys/block/<disk>/stat, on kernels from
// 5.5; loop, RAM and device-mapper devices are left out). Every fsync of a
// file on a disk is one, whoever made it: JetStream's, Pebble's, the
// mirrors'. ok is false where it cannot be read.
func diskFlushes() (n uint64, ok bool) {
	stats, _ := filepath.Glob("/sys/block/*/stat")
	for _, p := range stats {
		name := filepath.Base(filepath.Dir(p))
		if strings.HasPrefix(name, "loop") || strings.HasPrefix(name, "ram") || strings.HasPrefix(name, "zram") ||
			strings.HasPrefix(name, "dm-") || strings.HasPrefix(name, "md") || strings.HasPrefix(name, "sr") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 16 {
			continue
		}
		v, err := strconv.ParseUint(f[15], 10, 64)
		if err != nil {
			continue
		}
		n, ok = n+v, true
	}
	return n, ok
}

// opTimes collects the durations the workers report (orchestrator.WithOpTimer)
// while it is on: what each kind of operation a step waits on took under
// the load being measured.
type opTimes struct {
	mu  sync.Mutex
	on  bool
	got map[string][]float64 // ms, by op
}

// option is the worker option that reports to t.
func (t *opTimes) option() orchestrator.WorkerOption {
	return orchestrator.WithOpTimer(func(op string, took time.Duration) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.on {
			t.got[op] = append(t.got[op], float64(took.Microseconds())/1000)
		}
	})
}

// start drops what came before and collects from now on.
func (t *opTimes) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.on, t.got = true, map[string][]float64{}
}

// stop ends the collection and returns the percentiles by op.
func (t *opTimes) stop() map[string]Pct {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.on = false
	out := map[string]Pct{}
	for op, v := range t.got {
		out[op] = Percentiles(v)
	}
	return out
}

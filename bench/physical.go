package bench

import (
	"context"
	"fmt"
	"time"

	cnats "github.com/cutover/cutover/nats"
	"github.com/nats-io/nats.go"
)

// physicalSamples is how many round trips and routing writes physicalMin
// times.
const physicalSamples = 30

// physical is the lower bound of any safe cutover on a topology (DESIGN.md
// "Regions for real"): the last delta must reach the target after the
// source is fenced (one cross-region round trip), then the routing
// document must change (one synced write).
type physical struct {
	// RTTMs is a request/reply from the orchestrators' connection to a
	// responder on the target region's own cluster; RoutingWriteMs a
	// conditional update of a scratch key of ROUTING. Both are p50s of
	// physicalSamples, measured in the same deployment as the migrations.
	RTTMs          Pct     `json:"rtt_ms"`
	RoutingWriteMs Pct     `json:"routing_write_ms"`
	MinMs          float64 `json:"physical_min_ms"`
}

// physicalMin measures e's physical bound towards target.
func (e *env) physicalMin(ctx context.Context, target string) (physical, error) {
	var out physical
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	url := e.NATSURL
	if u, ok := e.RegionURLs[target]; ok {
		url = u
	}
	tnc, _, err := cnats.Connect(ctx, url)
	if err != nil {
		return out, fmt.Errorf("physical min: connect %s: %w", target, err)
	}
	defer tnc.Close()
	subject := "cutover.bench.rtt." + target
	sub, err := tnc.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond(nil) })
	if err != nil {
		return out, err
	}
	defer sub.Unsubscribe()
	if err := tnc.Flush(); err != nil {
		return out, err
	}
	// Interest crosses the gateway asynchronously: wait for the first reply
	// before timing any.
	for {
		if _, err := e.NC.RequestWithContext(ctx, subject, nil); err == nil {
			break
		} else if ctx.Err() != nil {
			return out, fmt.Errorf("physical min: no reply from %s: %w", target, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	kv, err := e.JS.KeyValue(ctx, cnats.RoutingBucket)
	if err != nil {
		return out, err
	}
	const key = "bench-physical-min"
	rev, err := kv.Put(ctx, key, []byte("0"))
	if err != nil {
		return out, err
	}
	var rtts, writes []float64
	for i := range physicalSamples {
		t := time.Now()
		if _, err := e.NC.RequestWithContext(ctx, subject, nil); err != nil {
			return out, err
		}
		rtts = append(rtts, msSince(t))
		t = time.Now()
		if rev, err = kv.Update(ctx, key, []byte(fmt.Sprint(i)), rev); err != nil {
			return out, err
		}
		writes = append(writes, msSince(t))
	}
	_ = kv.Purge(ctx, key)
	out.RTTMs, out.RoutingWriteMs = Percentiles(rtts), Percentiles(writes)
	out.MinMs = out.RTTMs.P50 + out.RoutingWriteMs.P50
	return out, nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

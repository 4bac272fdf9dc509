package bench

import (
	"context"
	"fmt"
	"io"

	"github.com/cutover/cutover/kvrouting/routingbench"
)

// RoutingOptions configures the routing suite.
type RoutingOptions struct {
	// Ops are the operations per measurement (>= 1) over Resources
	// distinct resources (>= 10).
	Ops, Resources int
	// LazyFsync runs the embedded server with JetStream's default lazy
	// fsync instead of sync always.
	LazyFsync bool
	// Progress, if set, receives progress lines.
	Progress func(string)
}

// RoutingResult is the routing suite's figure (routingbench.Result, whose
// JSON it is).
type RoutingResult struct{ routingbench.Result }

// Routing measures resolve + decide against a lock-record baseline
// (routingbench, paper 000 §5.3). Errors: ErrOptions, or the run's.
func Routing(ctx context.Context, o RoutingOptions) (*RoutingResult, error) {
	if o.Ops <= 0 || o.Resources < 10 {
		return nil, fmt.Errorf("%w: --ops must be > 0 and --resources >= 10", ErrOptions)
	}
	sync := !o.LazyFsync
	res, err := routingbench.Run(ctx, routingbench.Options{Ops: o.Ops, Resources: o.Resources, SyncAlways: &sync, Progress: o.Progress})
	if err != nil {
		return nil, err
	}
	return &RoutingResult{res}, nil
}

// WriteText writes the figures as a table.
func (r *RoutingResult) WriteText(w io.Writer) {
	fmt.Fprintf(w, "routing (%s)\n", r.Durability)
	fmt.Fprintf(w, "  embedded (unlocked, cached): %10.0f ns/op  %.3f store reads/op\n", r.Embedded.NsPerOp, r.Embedded.StoreReadsPerOp)
	fmt.Fprintf(w, "  lock-record baseline:        %10.0f ns/op  %.3f store reads/op\n", r.Baseline.NsPerOp, r.Baseline.StoreReadsPerOp)
	fmt.Fprintf(w, "  locked (read-through):       %10.0f ns/op  %.3f store reads/op\n", r.Locked.NsPerOp, r.Locked.StoreReadsPerOp)
	fmt.Fprintf(w, "  ratio baseline/embedded: %.0fx (target >= 100x, 0 reads): met=%v\n", r.Ratio, r.Met)
	for _, m := range r.Mixed {
		fmt.Fprintf(w, "  f=%-6g ours %8.0f ns/op %.4f reads/op | baseline %8.0f ns/op %.3f reads/op | time %.0fx reads %.0fx\n",
			m.LockedFraction, m.Ours.NsPerOp, m.Ours.StoreReadsPerOp, m.Baseline.NsPerOp, m.Baseline.StoreReadsPerOp, m.TimeRatio, m.ReadsRatio)
	}
}

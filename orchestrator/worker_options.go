package orchestrator

import (
	"fmt"
	"time"
)

// WorkerOption configures a Worker beyond its Config (NewWorker). The
// options exist for `cutover bench`, which runs the engine against the
// baselines it measures the protocol by; a production worker takes none.
type WorkerOption interface {
	configureWorker(*workerOptions) error
}

// workerOptions are the settings the options make; the zero value is the
// production worker.
type workerOptions struct {
	// fencing is the fence policy (nil: ProtocolFencing).
	fencing FencePolicy
	// noHolderCache turns the holder's cached document off.
	noHolderCache bool
	// timer is told how long each operation of a step took (WithOpTimer).
	timer func(op string, took time.Duration)
}

type workerOptFn func(*workerOptions) error

func (f workerOptFn) configureWorker(o *workerOptions) error { return f(o) }

// WithFencePolicy makes the worker fence the source as p says instead of
// the protocol (ProtocolFencing): a baseline of `cutover bench fence`. A
// nil p, or a second WithFencePolicy, makes NewWorker return ErrInvalid.
func WithFencePolicy(p FencePolicy) WorkerOption {
	return workerOptFn(func(o *workerOptions) error {
		if p == nil {
			return fmt.Errorf("%w: nil fence policy", ErrInvalid)
		}
		if o.fencing != nil {
			return fmt.Errorf("%w: fence policy given twice", ErrInvalid)
		}
		o.fencing = p
		return nil
	})
}

// WithoutHolderCache makes every lock transition and every lock check read
// the routing document first instead of using the holder's cached document
// (paper 000 §8): the baseline of `cutover bench reads`.
func WithoutHolderCache() WorkerOption {
	return workerOptFn(func(o *workerOptions) error {
		o.noHolderCache = true
		return nil
	})
}

// The operations WithOpTimer reports: what a step waits on, each a round
// trip to a store that writes or reads it.
const (
	// OpRoutingWrite is a conditional write of the routing document: a
	// lock's pre-lock (with its read of the document), escalations,
	// renewal, swap or release (one synced append to KV_ROUTING).
	OpRoutingWrite = "routing_write"
	// OpEventAppend is a step's conditional append to the migration's
	// event log (one synced append, or one atomic batch).
	OpEventAppend = "event_append"
	// OpAuthority, OpExport, OpImport, OpDigests and OpCleanup are the
	// contract requests of those names to one service at one region.
	OpAuthority = "authority"
	OpExport    = "export"
	OpImport    = "import"
	OpDigests   = "digests"
	OpCleanup   = "cleanup"
)

// WithOpTimer makes the worker call f after every routing write, event
// append and contract request of its steps (the Op constants), with how
// long it took, whether it succeeded or not: `cutover bench throughput`
// reports them (op_ms), the latency of each synced operation under the
// load it measures. f is called from many goroutines at once and must
// return quickly. A nil f, or a second WithOpTimer, makes NewWorker return
// ErrInvalid.
func WithOpTimer(f func(op string, took time.Duration)) WorkerOption {
	return workerOptFn(func(o *workerOptions) error {
		if f == nil {
			return fmt.Errorf("%w: nil op timer", ErrInvalid)
		}
		if o.timer != nil {
			return fmt.Errorf("%w: op timer given twice", ErrInvalid)
		}
		o.timer = f
		return nil
	})
}

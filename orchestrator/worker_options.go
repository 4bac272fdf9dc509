package orchestrator

import "fmt"

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

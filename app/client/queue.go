package client

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Pending is an operation handed to Enqueue: a handle to wait for its
// result or to cancel it. Its methods may be called from any goroutine.
type Pending struct {
	op     func(context.Context) error
	ctx    context.Context
	cancel context.CancelFunc
	state  atomic.Uint32 // pendingQueued → pendingRunning | pendingCancelled
	once   sync.Once
	done   chan struct{}
	err    error // written once, before done is closed
}

const (
	pendingQueued uint32 = iota
	pendingRunning
	pendingCancelled
)

func newPending(op func(context.Context) error) *Pending {
	ctx, cancel := context.WithCancel(context.Background())
	return &Pending{op: op, ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// Done returns a channel that is closed once the operation has finished,
// successfully or not.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Wait blocks until the operation finishes and returns its error (nil on
// success), or until ctx ends and returns ctx's error; giving up waiting
// does not cancel the operation (Cancel does).
func (p *Pending) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Cancel gives up on the operation: one still queued finishes at once with
// context.Canceled and never runs; a running one sees its context
// cancelled, which stops the client's retries. Cancel after the operation
// finished does nothing.
func (p *Pending) Cancel() {
	p.cancel()
	if p.state.CompareAndSwap(pendingQueued, pendingCancelled) {
		p.finish(context.Canceled)
	}
}

func (p *Pending) finish(err error) {
	p.once.Do(func() {
		p.err = err
		p.cancel()
		close(p.done)
	})
}

// run executes the operation on a worker, unless it was cancelled while
// queued. A panic in the operation becomes its error instead of killing
// the worker.
func (p *Pending) run() {
	if !p.state.CompareAndSwap(pendingQueued, pendingRunning) {
		return
	}
	var err error
	func() {
		defer func() {
			if v := recover(); v != nil {
				if e, ok := v.(error); ok {
					err = fmt.Errorf("client: enqueued operation panicked: %w", e)
				} else {
					err = fmt.Errorf("client: enqueued operation panicked: %v", v)
				}
			}
		}()
		err = p.op(p.ctx)
	}()
	p.finish(err)
}

// queue is Enqueue's bounded worker pool. The dispatcher goroutine owns the
// FIFO of waiting operations; Enqueue feeds it through in, it feeds the
// workers through work.
type queue struct {
	workers   int
	start     sync.Once
	in        chan *Pending
	work      chan *Pending
	quit      chan struct{} // closed by Close: accept nothing more
	drained   chan struct{} // closed when every accepted operation finished
	closeOnce sync.Once
}

func (q *queue) init(workers int) {
	q.workers = workers
	q.in = make(chan *Pending)
	q.work = make(chan *Pending)
	q.quit = make(chan struct{})
	q.drained = make(chan struct{})
}

// run starts the dispatcher and the workers (once, on first use).
func (q *queue) run() {
	var wg sync.WaitGroup
	for range q.workers {
		wg.Go(func() {
			for p := range q.work {
				p.run()
			}
		})
	}
	go func() {
		q.dispatch()
		wg.Wait()
		close(q.drained)
	}()
}

// dispatch hands queued operations to the workers in FIFO order. After quit
// it stops accepting, hands out what it holds, and closes work.
func (q *queue) dispatch() {
	var fifo []*Pending
	in, quit := q.in, q.quit
	for in != nil || len(fifo) > 0 {
		var out chan *Pending
		var head *Pending
		if len(fifo) > 0 {
			out, head = q.work, fifo[0]
		}
		select {
		case p := <-in:
			fifo = append(fifo, p)
		case out <- head:
			fifo[0] = nil
			fifo = fifo[1:]
		case <-quit:
			in, quit = nil, nil
		}
	}
	close(q.work)
}

// Enqueue hands op to the client's worker pool (WithWorkers; operations
// start in the order they were enqueued, up to that many at a time) and
// returns at once. op receives a context that Pending.Cancel cancels; it
// typically calls one of the client's methods, whose retries then run in the
// background of the caller. Enqueue never blocks on the operations.
//
// After Close the returned Pending is already finished with ErrClosed; a nil
// op finishes with ErrInvalid. Any goroutine may call Enqueue.
func (c *Client) Enqueue(op func(ctx context.Context) error) *Pending {
	p := newPending(op)
	if op == nil {
		p.finish(invalidf("nil operation"))
		return p
	}
	q := &c.queue
	q.start.Do(q.run)
	select {
	case <-q.quit:
		p.finish(ErrClosed)
		return p
	default:
	}
	select {
	case q.in <- p:
	case <-q.quit:
		p.finish(ErrClosed)
	}
	return p
}

// Close stops Enqueue from accepting operations and blocks until every
// operation already accepted has finished (drain; cancel them through their
// Pending to hurry it). Synchronous methods keep working after Close. Close
// always returns nil; calling it again waits for the same drain.
func (c *Client) Close() error {
	q := &c.queue
	q.start.Do(q.run)
	q.closeOnce.Do(func() { close(q.quit) })
	<-q.drained
	return nil
}

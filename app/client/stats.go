package client

import (
	"sync/atomic"
	"time"
)

// Stats is a snapshot of the client's counters since New. An operation is
// one call of an API method, however many attempts it took. Fenced ==
// Recovered + Unrecovered + Abandoned (up to the skew of a snapshot taken
// while an operation ends).
type Stats struct {
	// Attempts is the number of HTTP requests sent (first tries and
	// retries).
	Attempts int64
	// Rejected423 is the number of responses with status 423.
	Rejected423 int64
	// Transient is the number of attempts that failed with a transport
	// error or 502/503/504 and were retried.
	Transient int64
	// Fenced is the number of finished operations that got at least one
	// 423.
	Fenced int64
	// Recovered is the number of operations that got at least one 423 and
	// later succeeded: delayed, not lost (paper 001 §6.2).
	Recovered int64
	// Unrecovered is the number of operations that got at least one 423 and
	// were still failing at RetryPolicy.Threshold, surfaced with
	// ErrUnrecovered: the paper's "unrecovered lock rejections", the measure
	// of user-visible errors (§6.2).
	Unrecovered int64
	// Abandoned is the number of operations that got at least one 423 and
	// then ended otherwise: the caller's context ended, or a later attempt
	// got a non-retriable answer.
	Abandoned int64
	// FenceDelaySum and FenceDelayMax are the latency that 423 retries
	// added, per fenced operation, from its first 423 to its outcome: the
	// fence users felt. The mean is FenceDelaySum / Fenced.
	FenceDelaySum time.Duration
	// FenceDelayMax is the largest such latency.
	FenceDelayMax time.Duration
}

// counters are the live counters behind Stats.
type counters struct {
	attempts, rejected423, transient          atomic.Int64
	fenced, recovered, unrecovered, abandoned atomic.Int64
	fenceDelaySum, fenceDelayMax              atomic.Int64 // nanoseconds
}

// outcome of a fenced operation.
type outcome uint8

const (
	outcomeRecovered outcome = iota
	outcomeUnrecovered
	outcomeAbandoned
)

// endFenced records the end of an operation that got at least one 423.
func (c *counters) endFenced(o outcome, delay time.Duration) {
	c.fenced.Add(1)
	switch o {
	case outcomeRecovered:
		c.recovered.Add(1)
	case outcomeUnrecovered:
		c.unrecovered.Add(1)
	default:
		c.abandoned.Add(1)
	}
	d := int64(max(delay, 0))
	c.fenceDelaySum.Add(d)
	for {
		cur := c.fenceDelayMax.Load()
		if d <= cur || c.fenceDelayMax.CompareAndSwap(cur, d) {
			return
		}
	}
}

// Stats returns a snapshot of the counters. Any goroutine may call it at any
// time; the fields are read one by one, so a snapshot taken while
// operations are in flight may be mid-update.
func (c *Client) Stats() Stats {
	k := &c.counters
	return Stats{
		Attempts:      k.attempts.Load(),
		Rejected423:   k.rejected423.Load(),
		Transient:     k.transient.Load(),
		Fenced:        k.fenced.Load(),
		Recovered:     k.recovered.Load(),
		Unrecovered:   k.unrecovered.Load(),
		Abandoned:     k.abandoned.Load(),
		FenceDelaySum: time.Duration(k.fenceDelaySum.Load()),
		FenceDelayMax: time.Duration(k.fenceDelayMax.Load()),
	}
}

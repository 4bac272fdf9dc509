package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"
)

// do sends r until it succeeds or fails for good (paper 001 (A6), §4.4).
//
// A 423 is retried for every request; a transport error or 502/503/504 only
// for an idempotent one. Retries back off exponentially (the cap starts at
// RetryPolicy.Initial and doubles up to Max), with full jitter, and never
// wait longer than the server's RetryAfter hint when that is shorter. The
// budget is RetryPolicy.Threshold from the first retriable failure; the last
// wait is cut so that one final attempt happens at the threshold, and if it
// fails too the error matches ErrUnrecovered and wraps the last failure.
// Any other status returns at once as an *APIError; a 2xx returns the
// response. ctx ending stops the retries.
func (c *Client) do(ctx context.Context, r *request) (*response, error) {
	pol, clk := c.cfg.retry, c.cfg.clock
	var (
		firstFail  time.Time // first retriable failure: the threshold counts from here
		firstFence time.Time // first 423: the fence delay counts from here
		attempts   int
		last       error
	)
	// settle records the outcome of an operation that met the fence.
	settle := func(o outcome) {
		if !firstFence.IsZero() {
			c.counters.endFenced(o, clk.Now().Sub(firstFence))
		}
	}
	for retry := 0; ; retry++ {
		if err := ctx.Err(); err != nil {
			settle(outcomeAbandoned)
			return nil, stopped(r, err, last)
		}
		attempts++
		resp, err := c.attempt(ctx, r)
		var hint time.Duration
		switch {
		case err != nil && errors.Is(err, ErrBadResponse):
			settle(outcomeAbandoned)
			return nil, err
		case err != nil && ctx.Err() != nil:
			// The caller's context ended the attempt, not the network.
			settle(outcomeAbandoned)
			return nil, stopped(r, ctx.Err(), last)
		case err != nil:
			terr := fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
			if !r.idempotent {
				settle(outcomeAbandoned)
				return nil, terr
			}
			c.counters.transient.Add(1)
			last = terr
		case resp.status >= 200 && resp.status < 300:
			settle(outcomeRecovered)
			return resp, nil
		default:
			ae := apiError(r, resp)
			switch {
			case resp.status == http.StatusLocked:
				c.counters.rejected423.Add(1)
				if firstFence.IsZero() {
					firstFence = clk.Now()
				}
				hint = ae.RetryAfter
			case r.idempotent && isTransientStatus(resp.status):
				c.counters.transient.Add(1)
			default:
				settle(outcomeAbandoned)
				return nil, ae
			}
			last = ae
		}

		now := clk.Now()
		if firstFail.IsZero() {
			firstFail = now
		}
		elapsed := now.Sub(firstFail)
		if elapsed >= pol.Threshold {
			settle(outcomeUnrecovered)
			return nil, fmt.Errorf("%w: %s %s still failing after %s and %d attempts: %w",
				ErrUnrecovered, r.method, r.path, elapsed, attempts, last)
		}
		wait := pol.backoff(retry)
		if hint > 0 && hint < wait {
			wait = hint
		}
		wait = min(wait, pol.Threshold-elapsed)
		if err := clk.Sleep(ctx, wait); err != nil {
			settle(outcomeAbandoned)
			return nil, stopped(r, err, last)
		}
	}
}

// backoff returns the wait before retry number n (0-based): the cap
// Initial·2ⁿ, at most Max, and with Jitter a uniform draw from [0, cap]
// ("full jitter").
func (p RetryPolicy) backoff(n int) time.Duration {
	limit := p.Initial
	for i := 0; i < n && limit < p.Max; i++ {
		limit *= backoffFactor
	}
	limit = min(limit, p.Max)
	if !p.Jitter || limit <= 0 {
		return limit
	}
	return time.Duration(rand.Int64N(int64(limit) + 1))
}

// stopped is the error of an operation whose context ended, wrapping the
// context's error and the last failure, if any.
func stopped(r *request, ctxErr, last error) error {
	if last == nil {
		return fmt.Errorf("client: %s %s: %w", r.method, r.path, ctxErr)
	}
	return fmt.Errorf("client: %s %s: %w (last failure: %w)", r.method, r.path, ctxErr, last)
}

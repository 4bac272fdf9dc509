package client

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// Defaults of RetryPolicy and the client options.
const (
	// DefaultInitialBackoff is the first backoff cap after a rejection.
	DefaultInitialBackoff = 20 * time.Millisecond
	// DefaultMaxBackoff caps every backoff.
	DefaultMaxBackoff = time.Second
	// DefaultThreshold is how long after the first rejection a write keeps
	// being retried before it is surfaced as failed: "a few minutes"
	// (paper 001 §4.4), against a write lock held 13 s at the median.
	DefaultThreshold = 3 * time.Minute
	// DefaultTimeout bounds one HTTP attempt when the caller's context has
	// no deadline.
	DefaultTimeout = 10 * time.Second
	// DefaultWorkers is the size of Enqueue's worker pool.
	DefaultWorkers = 4
	// MaxResponseBytes caps the body the client reads from any response;
	// a longer body is ErrBadResponse.
	MaxResponseBytes = 64 << 20
)

// backoffFactor is the growth of the backoff cap per retry.
const backoffFactor = 2

// RetryPolicy shapes the retries of rejected and transiently failed
// requests. Zero durations mean the documented defaults; call EnsureDefaults
// to fill them in (New does).
//
// Jitter is the one field whose zero value is not the default: the brief
// fixes it as a plain bool, so a policy passed to WithRetryPolicy states it.
// Without WithRetryPolicy the client uses DefaultRetryPolicy, which jitters.
type RetryPolicy struct {
	// Initial is the backoff cap of the first retry; 0 means
	// DefaultInitialBackoff. The cap doubles with every retry.
	Initial time.Duration
	// Max caps the backoff; 0 means DefaultMaxBackoff. It must not be below
	// Initial.
	Max time.Duration
	// Threshold is how long after the first retriable failure the operation
	// keeps being retried; 0 means DefaultThreshold. The last wait is cut
	// short so that a final attempt happens at the threshold.
	Threshold time.Duration
	// Jitter selects full jitter: each wait is uniform in [0, cap]. Without
	// it every wait is the cap itself (deterministic; for tests).
	Jitter bool
}

// DefaultRetryPolicy returns the policy a client uses unless told
// otherwise: 20 ms doubling to 1 s with full jitter, for up to 3 minutes.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		Initial:   DefaultInitialBackoff,
		Max:       DefaultMaxBackoff,
		Threshold: DefaultThreshold,
		Jitter:    true,
	}
}

// EnsureDefaults replaces the zero durations of p with their defaults. It
// does not validate; Validate does.
func (p *RetryPolicy) EnsureDefaults() {
	if p.Initial == 0 {
		p.Initial = DefaultInitialBackoff
	}
	if p.Max == 0 {
		p.Max = max(DefaultMaxBackoff, p.Initial)
	}
	if p.Threshold == 0 {
		p.Threshold = DefaultThreshold
	}
}

// Validate reports ErrInvalid for a negative duration or Max below Initial.
func (p RetryPolicy) Validate() error {
	switch {
	case p.Initial < 0:
		return invalidf("negative RetryPolicy.Initial %s", p.Initial)
	case p.Max < 0:
		return invalidf("negative RetryPolicy.Max %s", p.Max)
	case p.Threshold < 0:
		return invalidf("negative RetryPolicy.Threshold %s", p.Threshold)
	case p.Max != 0 && p.Max < p.Initial:
		return invalidf("RetryPolicy.Max %s below Initial %s", p.Max, p.Initial)
	}
	return nil
}

// Clock is the client's time source and the way it waits between retries.
// Tests inject a fake whose Sleep returns at once and advances Now, so that
// backoff schedules run without waiting.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits for d or until ctx is done, whichever is first; it returns
	// ctx.Err() in the second case.
	Sleep(ctx context.Context, d time.Duration) error
}

// realClock is the wall clock.
type realClock struct{}

var _ Clock = realClock{}

// Now returns time.Now().
func (realClock) Now() time.Time { return time.Now() }

// Sleep waits on a timer, or until ctx is done.
func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// config is what the options set.
type config struct {
	httpClient *http.Client
	retry      RetryPolicy
	retrySet   bool
	clock      Clock
	timeout    time.Duration
	workers    int
	userAgent  string
	header     http.Header
}

// Option configures New. An option given a bad value makes New return
// ErrInvalid.
type Option func(*config) error

// WithHTTPClient makes the client send its requests through hc (its
// Transport, proxies, TLS). hc.Timeout, if set, bounds every attempt in
// addition to the per-attempt timeout.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error {
		if hc == nil {
			return invalidf("nil *http.Client")
		}
		c.httpClient = hc
		return nil
	}
}

// WithRetryPolicy replaces DefaultRetryPolicy. Zero durations mean their
// defaults; Jitter is taken as given.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(c *config) error {
		if err := p.Validate(); err != nil {
			return err
		}
		c.retry, c.retrySet = p, true
		return nil
	}
}

// WithClock replaces the wall clock (tests).
func WithClock(clk Clock) Option {
	return func(c *config) error {
		if clk == nil {
			return invalidf("nil Clock")
		}
		c.clock = clk
		return nil
	}
}

// WithTimeout sets the bound of one HTTP attempt made under a context that
// has no deadline; 0 means DefaultTimeout. It is per attempt, not per call:
// a write retried through a write-lock window outlives it by design.
func WithTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return invalidf("negative timeout %s", d)
		}
		c.timeout = d
		return nil
	}
}

// WithWorkers sets the size of Enqueue's worker pool; 0 means
// DefaultWorkers.
func WithWorkers(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return invalidf("negative worker count %d", n)
		}
		c.workers = n
		return nil
	}
}

// WithUserAgent sets the User-Agent header of every request.
func WithUserAgent(ua string) Option {
	return func(c *config) error {
		c.userAgent = ua
		return nil
	}
}

// WithHeader adds a header to every request, for example the API's
// X-Cutover-Region pin in development and tests. It cannot replace the
// headers the client sets itself (Authorization, Accept, Content-Type,
// User-Agent).
func WithHeader(name, value string) Option {
	return func(c *config) error {
		if name == "" || strings.ContainsAny(name, " \t\r\n:") || strings.ContainsAny(value, "\r\n") {
			return invalidf("header %q: %q", name, value)
		}
		if c.header == nil {
			c.header = http.Header{}
		}
		c.header.Add(name, value)
		return nil
	}
}

func (c *config) ensureDefaults() {
	if c.httpClient == nil {
		c.httpClient = &http.Client{}
	}
	if !c.retrySet {
		c.retry = DefaultRetryPolicy()
	}
	c.retry.EnsureDefaults()
	if c.clock == nil {
		c.clock = realClock{}
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.workers == 0 {
		c.workers = DefaultWorkers
	}
	if c.userAgent == "" {
		c.userAgent = "cutover-client/1"
	}
}

package natsclient

import (
	"context"
	"time"
)

// DefaultTimeout is applied to I/O in this package when the caller's context
// has no deadline.
const DefaultTimeout = 5 * time.Second

// WithRequestTimeout bounds ONE request by d even when ctx allows longer:
// a request sent on a connection that is being replaced (its server died)
// gets no reply, and must fail fast so the caller can retry on the new
// connection instead of waiting out its whole budget.
func WithRequestTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// WithDefaultTimeout returns ctx unchanged (with a cancel) when it has a
// deadline, or ctx bounded by d otherwise.
func WithDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// ValidToken reports whether name can be used as a NATS server, cluster or
// stream name or as a single subject token: printable, no whitespace, no
// '.', '*', '>', path separators. empty allows "".
func ValidToken(name string, empty bool) bool {
	if name == "" {
		return empty
	}
	for _, r := range name {
		switch {
		case r <= ' ' || r == 0x7f:
			return false
		case r == '.' || r == '*' || r == '>' || r == '/' || r == '\\':
			return false
		}
	}
	return true
}

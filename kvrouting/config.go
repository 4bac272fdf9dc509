package kvrouting

import (
	"context"
	"fmt"
	"time"
)

// LockConfig holds the lock lifecycle parameters of paper 001 Table 5. Zero
// values mean the production defaults; development and tests use seconds.
type LockConfig struct {
	// PreLockLease is the pre-lock expiry beyond the convergence delay
	// (default 48 h; paper 000 Table 1).
	PreLockLease time.Duration
	// HardDeleteLease is the hard-delete lock expiry, renewable (default 6 h).
	HardDeleteLease time.Duration
	// WriteLease is the write-lock expiry, never renewed; it is also the
	// Phase 3 abort threshold (default 5 min).
	WriteLease time.Duration
	// MaxLease caps renewals, measured from the pre-lock (default 2 weeks).
	MaxLease time.Duration
	// SecondaryLease is how long the old location stays locked after the
	// swap (default 15 days, the source cleanup window).
	SecondaryLease time.Duration
	// ConvergenceDelay is the declared max cache-tier TTL + replication
	// bound; the pre-lock's not-before is now + this (paper 000 §4.1).
	// Take it from Resolver.ConvergenceDelay. Unless FenceConvergence is
	// set, the Locker never uses less than the ConvergenceDelay of any
	// Resolver created on the same Store, so the zero value next to a
	// caching resolver is safe (a cache cannot serve its unlocked copy
	// past the pre-lock's not-before).
	ConvergenceDelay time.Duration
	// FenceConvergence declares that every enforcer of these locks also
	// checks a fence in its own store, checked atomically with every
	// mutation and read (services/store): the pre-lock's
	// not-before then waits for no cache and ConvergenceDelay is used as
	// given, even zero. Without store fences this is unsafe: a cache's
	// unlocked copy would allow writes under the write lock.
	FenceConvergence bool
	// ClockSkew is the margin by which holders stop early and enforcers hold
	// late (default 2 s).
	ClockSkew time.Duration
	// MaxAttempts bounds compare-and-swap retries after revision conflicts
	// (default 16).
	MaxAttempts int
	// Clock is the time source (default time.Now).
	Clock func() time.Time
	// BeforeCAS, if set, is called by every lock mutation between its
	// decision (the transition computed from the document it read) and its
	// conditional write: a fault-injection point for `cutover chaos`,
	// which pauses a holder there. nil in production.
	BeforeCAS func(ctx context.Context, res Resource, next *Document)
}

// EnsureDefaults fills zero fields with the documented defaults.
func (c *LockConfig) EnsureDefaults() {
	if c.PreLockLease == 0 {
		c.PreLockLease = 48 * time.Hour
	}
	if c.HardDeleteLease == 0 {
		c.HardDeleteLease = 6 * time.Hour
	}
	if c.WriteLease == 0 {
		c.WriteLease = 5 * time.Minute
	}
	if c.MaxLease == 0 {
		c.MaxLease = 14 * 24 * time.Hour
	}
	if c.SecondaryLease == 0 {
		c.SecondaryLease = 15 * 24 * time.Hour
	}
	if c.ClockSkew == 0 {
		c.ClockSkew = 2 * time.Second
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 16
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
}

// Validate reports inconsistent settings (after EnsureDefaults).
func (c *LockConfig) Validate() error {
	for name, d := range map[string]time.Duration{
		"pre-lock lease": c.PreLockLease, "hard-delete lease": c.HardDeleteLease, "write lease": c.WriteLease,
		"max lease": c.MaxLease, "secondary lease": c.SecondaryLease,
	} {
		if d <= 0 {
			return fmt.Errorf("%w: %s must be positive, got %s", ErrInvalid, name, d)
		}
	}
	if c.ConvergenceDelay < 0 || c.ClockSkew < 0 {
		return fmt.Errorf("%w: negative convergence delay or clock skew", ErrInvalid)
	}
	if c.MaxLease < c.PreLockLease {
		return fmt.Errorf("%w: max lease %s shorter than pre-lock lease %s", ErrInvalid, c.MaxLease, c.PreLockLease)
	}
	if c.WriteLease <= 2*c.ClockSkew {
		return fmt.Errorf("%w: write lease %s must exceed twice the clock skew %s", ErrInvalid, c.WriteLease, c.ClockSkew)
	}
	return nil
}

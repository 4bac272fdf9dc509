package kvrouting

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Locker performs the lock lifecycle of paper 000 §4 on routing documents.
// Every mutation is ONE conditional write presenting the token and the
// revision (paper 000 §5.4); a revision conflict re-reads from the leader
// and re-evaluates — nothing ever succeeds blindly. All methods are safe for
// concurrent use by any goroutine.
type Locker struct {
	store *Store
	cfg   LockConfig
}

// NewLocker returns a Locker over store. Errors: ErrInvalid for a bad config.
func NewLocker(store *Store, cfg LockConfig) (*Locker, error) {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Locker{store: store, cfg: cfg}, nil
}

// Config returns the effective configuration (ConvergenceDelay as the
// next pre-lock will use it).
func (l *Locker) Config() LockConfig {
	c := l.cfg
	c.ConvergenceDelay = l.convergenceDelay()
	return c
}

// convergenceDelay is the pre-lock's wait: the configured delay, and at
// least every same-store Resolver's unless FenceConvergence.
func (l *Locker) convergenceDelay() time.Duration {
	if l.cfg.FenceConvergence {
		return l.cfg.ConvergenceDelay
	}
	return max(l.cfg.ConvergenceDelay, time.Duration(l.store.resolverDelay.Load()))
}

// Store returns the routing store.
func (l *Locker) Store() *Store { return l.store }

// Grant is the result of a successful pre-lock.
type Grant struct {
	Token Token
	// NotBefore is when stronger locks may begin: now + convergence delay.
	NotBefore time.Time
	Expiry    time.Time
	// Doc is the document as written, with its revision: the holder's
	// cached document (paper 000 §8).
	Doc *Document
}

// Get reads the authoritative document from the leader. Errors: ErrNotFound,
// ErrMalformed, ErrSchemaVersion, ErrUnavailable.
func (l *Locker) Get(ctx context.Context, res Resource) (*Document, error) {
	if err := res.Validate(); err != nil {
		return nil, err
	}
	return l.store.GetLeader(ctx, res)
}

// Verify reports whether the holder of tok still holds the migration lock
// of res: the check a migration makes before each call that acts under the
// lock (an export page, an import, an authority, a validation). With the holder's
// cached document it costs no read: the holder is the only writer of its
// lock, so the document it last wrote is current unless an operator forced
// the lock off, which the next conditional write (and the stores'
// authority records, at the newer revision) reveals (paper 000 §8: "the service can safely use a cached
// document when the ETag matches", ~90 % fewer routing reads). cached nil:
// one leader read. Returns the document the decision used. Errors:
// ErrTokenMismatch, ErrExpired, and Get's.
func (l *Locker) Verify(ctx context.Context, res Resource, tok Token, cached *Document) (*Document, error) {
	d := cached
	if d == nil || d.Resource != res.String() || d.Revision == 0 || d.Primary.Lock.Token != tok {
		var err error
		if d, err = l.Get(ctx, res); err != nil {
			return nil, err
		}
	}
	if err := holds(d, l.cfg.Clock(), tok, &l.cfg); err != nil {
		return d, err
	}
	return d, nil
}

// Swapped reports whether migration id swapped res under tok, as the
// routing document records it: cur's LastSwap (cur, a leader read; nil
// reads one), or else the LastSwap of any revision the bucket still keeps
// for the key (RoutingConfig.History; each swap rewrites LastSwap and only
// a swap does). A replaying orchestrator whose swap reply or Swapped event
// was lost recognises its swap by it, even after later migrations moved
// the resource on. false for a swap older than the kept history. Errors:
// ErrUnavailable, and Get's.
func (l *Locker) Swapped(ctx context.Context, res Resource, id string, tok Token, cur *Document) (bool, error) {
	if cur == nil {
		d, err := l.Get(ctx, res)
		if err != nil {
			return false, err
		}
		cur = d
	}
	if cur.SwappedBy(id, tok) {
		return true, nil
	}
	if cur.LastSwap == nil {
		return false, nil // no swap at all since the document was created
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	hist, err := l.store.kv.History(ctx, res.Key())
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("%w: history of %s: %w", ErrUnavailable, res, err)
	}
	for _, e := range hist {
		if e.Operation() != jetstream.KeyValuePut {
			continue
		}
		d, err := DecodeDocument(e.Value(), e.Revision())
		if err == nil && d.SwappedBy(id, tok) {
			return true, nil
		}
	}
	return false, nil
}

// Register creates the routing document of a new resource at region. If
// the resource already has one it is returned with ErrExists.
func (l *Locker) Register(ctx context.Context, res Resource, region string) (*Document, error) {
	if err := res.Validate(); err != nil {
		return nil, err
	}
	if err := validRegion(region); err != nil {
		return nil, err
	}
	doc := &Document{Resource: res.String(), Primary: Location{Region: region}, UpdatedAt: l.cfg.Clock().UTC()}
	rev, err := l.store.create(ctx, res, doc)
	if errors.Is(err, errRevision) {
		cur, gerr := l.store.GetLeader(ctx, res)
		if gerr != nil {
			return nil, gerr
		}
		return cur, ErrExists
	}
	if err != nil {
		return nil, err
	}
	doc.Revision = rev
	return doc, nil
}

// PreLock acquires the pre-lock for a migration of res to target, records
// the target as a locked secondary (paper 001 Algorithm 1 line 2) and
// returns a fresh token with not-before = now + convergence delay. The
// pre-lock is exclusive: an unexpired lock under another token gives a
// *LockedError (ErrLocked). Errors also: ErrAtTarget, ErrNotFound,
// ErrConflict, ErrInvalid, ErrMalformed, ErrUnavailable.
func (l *Locker) PreLock(ctx context.Context, res Resource, target, migrationID string, opts ...PreLockOption) (Grant, error) {
	var o preLockOptions
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return Grant{}, err
		}
	}
	if err := res.Validate(); err != nil {
		return Grant{}, err
	}
	if err := validRegion(target); err != nil {
		return Grant{}, err
	}
	if migrationID == "" {
		return Grant{}, invalidf("empty migration id")
	}
	tok := o.token
	if tok == "" {
		tok = NewToken()
	}
	doc, err := l.mutate(ctx, res, nil, func(d *Document, now time.Time) (*Document, error) {
		cfg := l.cfg
		cfg.ConvergenceDelay = l.convergenceDelay()
		return preLock(d, now, tok, target, migrationID, &cfg)
	})
	if err != nil {
		return Grant{}, err
	}
	return Grant{Token: tok, NotBefore: doc.Primary.Lock.NotBefore, Expiry: doc.Primary.Lock.Expiry, Doc: doc}, nil
}

// PreLockOption is an option of PreLock.
type PreLockOption func(*preLockOptions) error

type preLockOptions struct{ token Token }

// WithToken makes PreLock use a token the caller generated (NewToken) and
// recorded beforehand, so that a retry after an unknown outcome (a timeout)
// recognises its own lock instead of finding a stranger's.
func WithToken(tok Token) PreLockOption {
	return func(o *preLockOptions) error {
		if len(tok) != 32 {
			return invalidf("token must be 32 hex digits")
		}
		if o.token != "" && o.token != tok {
			return invalidf("conflicting WithToken options")
		}
		o.token = tok
		return nil
	}
}

// EscalateHardDelete moves the pre-lock to the hard-delete lock (paper 001
// Algorithm 1 line 5). It needs the token, an unexpired pre-lock and the
// convergence delay elapsed. cached, when non-nil, is the holder's last
// document: if its revision is current, no read is needed (paper 000 §8).
// Errors: ErrTokenMismatch, ErrExpired, ErrNotConverged,
// ErrIllegalTransition, ErrConflict, ErrUnavailable.
func (l *Locker) EscalateHardDelete(ctx context.Context, res Resource, tok Token, cached *Document) (*Document, error) {
	return l.tokenOp(ctx, res, tok, cached, escalateHardDelete)
}

// EscalateWrite moves the hard-delete lock to the write lock (Algorithm 1
// line 12). The write lock is never renewed; its expiry is the Phase 3 abort
// threshold. Errors as EscalateHardDelete.
func (l *Locker) EscalateWrite(ctx context.Context, res Resource, tok Token, cached *Document) (*Document, error) {
	return l.tokenOp(ctx, res, tok, cached, escalateWrite)
}

// Renew extends the pre-lock or the hard-delete lock (and the pre-lock with
// it) up to the max lease (paper 001 §5.2). A write lock is never renewed:
// ErrIllegalTransition. Errors as EscalateHardDelete.
func (l *Locker) Renew(ctx context.Context, res Resource, tok Token, cached *Document) (*Document, error) {
	return l.tokenOp(ctx, res, tok, cached, renew)
}

// Swap is the atomic cutover (paper 001 §4.1.4, paper 000 §4.3): ONE
// conditional write makes the target primary, clears every migration lock
// and locks the old location as secondary, and records the swap in
// LastSwap. It needs the unexpired write lock. Replaying a swap that
// already happened (LastSwap names tok) changes nothing and returns the
// current document, which a later migration may have pre-locked since.
// Errors as EscalateHardDelete.
func (l *Locker) Swap(ctx context.Context, res Resource, tok Token, cached *Document) (*Document, error) {
	return l.tokenOp(ctx, res, tok, cached, swap)
}

// Release is the rollback: one conditional write back to the unlocked
// source, target forgotten. It needs the token but not an unexpired lock (a
// stale holder may clean up its own expired lock, never another's). Releasing
// a document that holds no lock is a no-op. After a swap under tok it is
// ErrIllegalTransition, even once another migration holds the lock (the
// swap is recognised by LastSwap). Errors also ErrTokenMismatch,
// ErrConflict.
func (l *Locker) Release(ctx context.Context, res Resource, tok Token, cached *Document) (*Document, error) {
	return l.tokenOp(ctx, res, tok, cached, release)
}

// ForceRelease clears the migration lock of res without its token: the
// admin escape hatch for stuck locks (paper 000 §8). It needs at least two
// distinct approvers (trimmed, case-insensitive) but authenticates none:
// the caller verifies who they are and records the audit event (the
// orchestrator: signed approvals, orchestrator/admin.go). Errors:
// ErrApprovals, ErrNotFound, ErrConflict, ErrUnavailable.
func (l *Locker) ForceRelease(ctx context.Context, res Resource, approvers []string) (*Document, error) {
	if err := res.Validate(); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, a := range approvers {
		if a = strings.TrimSpace(strings.ToLower(a)); a != "" {
			seen[a] = true
		}
	}
	if len(seen) < 2 {
		return nil, ErrApprovals
	}
	return l.mutate(ctx, res, nil, func(d *Document, now time.Time) (*Document, error) {
		if d.Primary.Lock.IsZero() && (d.Secondary == nil || d.Secondary.Lock.IsZero()) {
			return nil, nil
		}
		tok := d.Primary.Lock.Token
		d.Primary.Lock = Lock{}
		if d.Secondary != nil && (tok == "" || d.Secondary.Lock.Token == tok) {
			if d.MigrationID != "" { // pre-cutover target: forget it
				d.Secondary = nil
			} else {
				d.Secondary.Lock = Lock{}
			}
		}
		d.LastMigrationID = firstNonEmpty(d.MigrationID, d.LastMigrationID)
		clearMigration(d)
		d.ForceReleasedAt, d.UpdatedAt = now.UTC(), now.UTC()
		return d, nil
	})
}

type transition func(d *Document, now time.Time, tok Token, cfg *LockConfig) (*Document, error)

func (l *Locker) tokenOp(ctx context.Context, res Resource, tok Token, cached *Document, fn transition) (*Document, error) {
	if err := res.Validate(); err != nil {
		return nil, err
	}
	if tok == "" {
		return nil, invalidf("empty token")
	}
	return l.mutate(ctx, res, cached, func(d *Document, now time.Time) (*Document, error) {
		return fn(d, now, tok, &l.cfg)
	})
}

// mutate runs the read / evaluate / conditional-write loop. fn gets a
// private copy of the current document and returns the next one, nil when
// nothing needs to change, or an error. A decision (success without a
// write, or an error) taken on a cached document is confirmed against a
// fresh leader read first; only a write that succeeds against the cached
// revision proves the cache was current.
func (l *Locker) mutate(ctx context.Context, res Resource, cached *Document, fn func(*Document, time.Time) (*Document, error)) (*Document, error) {
	var doc *Document
	fresh := false
	if cached != nil && cached.Resource == res.String() && cached.Revision != 0 {
		doc = cached
	} else {
		d, err := l.store.GetLeader(ctx, res)
		if err != nil {
			return nil, err
		}
		doc, fresh = d, true
	}
	var lastErr error
	for attempt := 0; attempt < l.cfg.MaxAttempts; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		now := l.cfg.Clock()
		next, err := fn(doc.Clone(), now)
		if err != nil || next == nil {
			if !fresh {
				d, rerr := l.store.GetLeader(ctx, res)
				if rerr != nil {
					return nil, rerr
				}
				doc, fresh = d, true
				continue
			}
			if err != nil {
				return nil, err
			}
			return doc, nil
		}
		if h := l.cfg.BeforeCAS; h != nil {
			h(ctx, res, next)
		}
		rev, err := l.store.update(ctx, res, next, doc.Revision)
		if err == nil {
			next.Revision = rev
			return next, nil
		}
		lastErr = err
		if !errors.Is(err, errRevision) && !errors.Is(err, ErrUnavailable) {
			return nil, err
		}
		// A conflict (412), or a write whose outcome is unknown (timeout):
		// re-read and re-evaluate. The transitions are idempotent, so if our
		// write did land the re-evaluation reports "nothing to change".
		d, rerr := l.store.GetLeader(ctx, res)
		if rerr != nil {
			if errors.Is(err, errRevision) {
				return nil, rerr
			}
			return nil, err
		}
		if errors.Is(err, errRevision) && d.Revision == doc.Revision {
			// Refused although the leader still shows the revision we
			// expected: another write of this key is in flight on the R3
			// stream (nats-server answers 10164 until it applies). Re-trying
			// at once only burns the attempts (all 16 within milliseconds
			// of a leader change); wait a little, growing, for the
			// in-flight write to land.
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
			case <-time.After(min(time.Duration(attempt+1)*10*time.Millisecond, 200*time.Millisecond)):
			}
		}
		doc, fresh = d, true
	}
	if errors.Is(lastErr, errRevision) {
		return nil, fmt.Errorf("%w: %d attempts on %s", ErrConflict, l.cfg.MaxAttempts, res)
	}
	return nil, lastErr
}

// --- transitions: pure functions of (document, now, token, config) ---

func preLock(d *Document, now time.Time, tok Token, target, migrationID string, cfg *LockConfig) (*Document, error) {
	l := d.Primary.Lock
	if l.Type != LockNone && l.Token == tok {
		return nil, nil // our own pre-lock landed (a retried write whose reply was lost)
	}
	if d.Primary.Region == target {
		return nil, fmt.Errorf("%w: %s is at %s", ErrAtTarget, d.Resource, target)
	}
	// Exclusive from acquisition, not from not-before: any unexpired lock
	// under another token refuses (paper 000 Table 2, concurrent attempts).
	if l.Type != LockNone && now.Before(l.Expiry.Add(cfg.ClockSkew)) {
		return nil, &LockedError{Resource: d.Resource, Lock: l, Region: d.Primary.Region, Now: now}
	}
	expiry := now.Add(cfg.ConvergenceDelay + cfg.PreLockLease) // paper 000 Table 1: 48 h + convergence delay
	d.Primary.Lock = Lock{Type: LockPre, Token: tok, NotBefore: now.Add(cfg.ConvergenceDelay).UTC(), Expiry: expiry.UTC()}
	// paper 001 §4.1.1: record T as a locked secondary so T takes no client writes before cutover.
	d.Secondary = &Location{Region: target, Lock: Lock{Type: LockSecondary, Token: tok, NotBefore: now.UTC(), Expiry: expiry.UTC()}}
	d.MigrationID = migrationID
	d.Target = target
	d.PreLockExpiry = expiry.UTC()
	d.MaxExpiry = maxTime(now.Add(cfg.ConvergenceDelay+cfg.MaxLease), expiry).UTC()
	d.UpdatedAt = now.UTC()
	return d, nil
}

// holds checks that tok holds the document's primary lock at now, from the
// holder's side (it stops skew early).
func holds(d *Document, now time.Time, tok Token, cfg *LockConfig) error {
	l := d.Primary.Lock
	if l.Type == LockNone || l.Token != tok {
		return fmt.Errorf("%w: %s (held: %s %s)", ErrTokenMismatch, d.Resource, l.Type, l.Token.Redacted())
	}
	if !l.HeldBy(tok, now, cfg.ClockSkew) || !now.Before(d.PreLockExpiry.Add(-cfg.ClockSkew)) {
		return fmt.Errorf("%w: %s %s lock expired at %s", ErrExpired, d.Resource, l.Type, l.Expiry.Format(time.RFC3339Nano))
	}
	return nil
}

func escalateHardDelete(d *Document, now time.Time, tok Token, cfg *LockConfig) (*Document, error) {
	l := d.Primary.Lock
	if l.Token == tok {
		switch l.Type {
		case LockHardDelete:
			return nil, holds(d, now, tok, cfg) // already escalated: fine while it holds
		case LockWrite:
			return nil, fmt.Errorf("%w: %s holds a write lock; cannot go back to hard-delete", ErrIllegalTransition, d.Resource)
		}
	}
	if err := holds(d, now, tok, cfg); err != nil {
		return nil, err
	}
	// paper 000 §4.1: no stronger lock before every cache tier has converged.
	if now.Before(l.NotBefore.Add(cfg.ClockSkew)) {
		return nil, fmt.Errorf("%w: %s not before %s", ErrNotConverged, d.Resource, l.NotBefore.Add(cfg.ClockSkew).Format(time.RFC3339Nano))
	}
	d.Primary.Lock = Lock{Type: LockHardDelete, Token: tok, NotBefore: now.UTC(), Expiry: minTime(now.Add(cfg.HardDeleteLease), d.PreLockExpiry).UTC()}
	d.UpdatedAt = now.UTC()
	return d, nil
}

func escalateWrite(d *Document, now time.Time, tok Token, cfg *LockConfig) (*Document, error) {
	l := d.Primary.Lock
	if l.Token == tok && l.Type == LockWrite {
		return nil, holds(d, now, tok, cfg)
	}
	if err := holds(d, now, tok, cfg); err != nil {
		return nil, err
	}
	if l.Type != LockHardDelete {
		return nil, fmt.Errorf("%w: write lock needs the hard-delete lock, %s holds %s", ErrIllegalTransition, d.Resource, l.Type)
	}
	d.Primary.Lock = Lock{Type: LockWrite, Token: tok, NotBefore: now.UTC(), Expiry: minTime(now.Add(cfg.WriteLease), d.PreLockExpiry).UTC()}
	d.UpdatedAt = now.UTC()
	return d, nil
}

func renew(d *Document, now time.Time, tok Token, cfg *LockConfig) (*Document, error) {
	if err := holds(d, now, tok, cfg); err != nil {
		return nil, err
	}
	l := d.Primary.Lock
	switch l.Type {
	case LockWrite:
		// paper 001 §4.1.3: never extended, every second is user-visible.
		return nil, fmt.Errorf("%w: the write lock is never renewed", ErrIllegalTransition)
	case LockPre:
		exp := minTime(now.Add(cfg.PreLockLease), d.MaxExpiry)
		if !exp.After(d.PreLockExpiry) {
			return nil, nil
		}
		d.PreLockExpiry = exp.UTC()
		d.Primary.Lock.Expiry = exp.UTC()
	case LockHardDelete:
		// paper 001 §5.2: the hard-delete lock is extended together with the
		// pre-lock that bounds it, capped at the max lease.
		exp := minTime(now.Add(cfg.HardDeleteLease), d.MaxExpiry)
		if !exp.After(l.Expiry) {
			return nil, nil
		}
		d.Primary.Lock.Expiry = exp.UTC()
		d.PreLockExpiry = maxTime(d.PreLockExpiry, exp).UTC()
	default:
		return nil, fmt.Errorf("%w: cannot renew a %s lock", ErrIllegalTransition, l.Type)
	}
	if d.Secondary != nil && d.Secondary.Lock.Token == tok {
		d.Secondary.Lock.Expiry = d.PreLockExpiry
	}
	d.UpdatedAt = now.UTC()
	return d, nil
}

func swap(d *Document, now time.Time, tok Token, cfg *LockConfig) (*Document, error) {
	l := d.Primary.Lock
	if d.LastSwap != nil && d.LastSwap.Token == tok {
		// Replay: our swap already happened, and may have been followed by
		// another migration's pre-lock, which took over the secondary
		// location our token was on.
		return nil, nil
	}
	if l.Type == LockNone && d.Secondary != nil && d.Secondary.Lock.Token == tok && d.Target == "" {
		return nil, nil // replay of a swap written before documents recorded LastSwap
	}
	if err := holds(d, now, tok, cfg); err != nil {
		return nil, err
	}
	if l.Type != LockWrite {
		return nil, fmt.Errorf("%w: swap needs the write lock, %s holds %s", ErrIllegalTransition, d.Resource, l.Type)
	}
	if d.Target == "" || d.Target == d.Primary.Region {
		return nil, fmt.Errorf("%w: %s: no target recorded", ErrMalformed, d.Resource)
	}
	// paper 001 §4.1.4 / paper 000 §4.3: location, lock release and the
	// old-location lock change in this one write, or not at all.
	old := d.Primary.Region
	d.Primary = Location{Region: d.Target}
	d.Secondary = &Location{Region: old, Lock: Lock{Type: LockSecondary, Token: tok, NotBefore: now.UTC(), Expiry: now.Add(cfg.SecondaryLease).UTC()}}
	d.LastMigrationID = d.MigrationID
	// Kept by every later transition but the next swap; its reverse window
	// lasts as long as the old location's lock.
	d.LastSwap = &SwapRecord{MigrationID: d.MigrationID, Token: tok, From: old, ReverseUntil: d.Secondary.Lock.Expiry}
	clearMigration(d)
	d.UpdatedAt = now.UTC()
	return d, nil
}

func release(d *Document, now time.Time, tok Token, cfg *LockConfig) (*Document, error) {
	l := d.Primary.Lock
	if d.LastSwap != nil && d.LastSwap.Token == tok {
		// Checked before the token: a later pre-lock under another token
		// does not make our swap "not ours".
		return nil, fmt.Errorf("%w: %s was already swapped by this token", ErrIllegalTransition, d.Resource)
	}
	if l.Type == LockNone {
		if d.Secondary != nil && d.Secondary.Lock.Token == tok && d.Target == "" {
			return nil, fmt.Errorf("%w: %s was already swapped by this token", ErrIllegalTransition, d.Resource)
		}
		return nil, nil // nothing held: already released
	}
	if l.Token != tok {
		return nil, fmt.Errorf("%w: %s (held: %s %s)", ErrTokenMismatch, d.Resource, l.Type, l.Token.Redacted())
	}
	d.Primary.Lock = Lock{}
	if d.Secondary != nil && d.Secondary.Lock.Token == tok {
		d.Secondary = nil
	}
	d.LastMigrationID = d.MigrationID
	clearMigration(d)
	d.UpdatedAt = now.UTC()
	return d, nil
}

func clearMigration(d *Document) {
	d.MigrationID, d.Target = "", ""
	d.PreLockExpiry, d.MaxExpiry = time.Time{}, time.Time{}
}

func validRegion(r string) error {
	if r == "" || len(r) > 64 {
		return invalidf("region %q", r)
	}
	for _, c := range r {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return invalidf("region %q: only a-z, 0-9 and '-'", r)
		}
	}
	return nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func firstNonEmpty(s ...string) string {
	if i := slices.IndexFunc(s, func(v string) bool { return v != "" }); i >= 0 {
		return s[i]
	}
	return ""
}

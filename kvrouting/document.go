package kvrouting

import (
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// SchemaVersion is the routing-document schema this library writes and the
// only one it reads. A document with another version is refused with
// ErrSchemaVersion rather than guessed at (paper 000 Table 2).
const SchemaVersion = 1

// LockType is the kind of lock held on a location (paper 000 Table 1).
type LockType uint8

// Lock types. The order is the escalation order of the primary lock.
const (
	LockNone LockType = iota
	// LockPre marks migration intent; restricts nothing (paper 001 §4.1.1).
	LockPre
	// LockHardDelete turns deletes into tombstones (paper 001 §4.1.2).
	LockHardDelete
	// LockWrite fences updates, new writes and deletes (paper 001 §4.1.3).
	LockWrite
	// LockSecondary locks a non-primary location: the target before cutover,
	// the old source after it (paper 001 §4.1.1, §4.1.4).
	LockSecondary
	lockTypeEnd
)

var lockTypeNames = [...]string{"none", "pre", "hard-delete", "write", "secondary"}

// String returns the lock type's name.
func (t LockType) String() string {
	if t < lockTypeEnd {
		return lockTypeNames[t]
	}
	return fmt.Sprintf("LockType(%d)", uint8(t))
}

// Lock is the lock held on one location.
type Lock struct {
	Type  LockType `msgpack:"t"`
	Token Token    `msgpack:"k,omitempty"`
	// NotBefore is when the lock starts restricting anything: for a pre-lock
	// now + convergence delay, for the others the acquisition time.
	NotBefore time.Time `msgpack:"nb,omitempty"`
	Expiry    time.Time `msgpack:"ex,omitempty"`
}

// IsZero reports whether no lock is recorded.
func (l Lock) IsZero() bool { return l.Type == LockNone }

// InForce reports whether an enforcer (a service deciding a user operation)
// must honour the lock at now. Enforcers are conservative by skew on both
// ends: a lock counts from NotBefore-skew until Expiry+skew, so a holder
// whose clock runs behind by up to skew can never act after enforcers
// stopped honouring its lock (the lease asymmetry of Gray and Cheriton).
func (l Lock) InForce(now time.Time, skew time.Duration) bool {
	if l.Type == LockNone {
		return false
	}
	return !now.Before(l.NotBefore.Add(-skew)) && now.Before(l.Expiry.Add(skew))
}

// HeldBy reports whether a holder presenting tok may still act under the
// lock at now: the token matches and the lock is not within skew of its
// expiry (the holder stops early; see InForce).
func (l Lock) HeldBy(tok Token, now time.Time, skew time.Duration) bool {
	return l.Type != LockNone && tok != "" && l.Token == tok && now.Before(l.Expiry.Add(-skew))
}

// Location is one region and the lock held on it.
type Location struct {
	Region string `msgpack:"r"`
	Lock   Lock   `msgpack:"l"`
}

// Document is the routing document of one resource (paper 000 Figure 1):
// the primary location with the migration lock, the secondary location
// (the locked target during a migration, the locked old source after it),
// and the migration's bookkeeping.
type Document struct {
	SchemaVersion int       `msgpack:"v"`
	Resource      string    `msgpack:"res"`
	Primary       Location  `msgpack:"p"`
	Secondary     *Location `msgpack:"s,omitempty"`
	// MigrationID and Target are set from pre-lock until swap or release.
	MigrationID string `msgpack:"mid,omitempty"`
	Target      string `msgpack:"tgt,omitempty"`
	// PreLockExpiry is the parent lease: no lock outlives it (paper 001 §5.2).
	PreLockExpiry time.Time `msgpack:"pex,omitempty"`
	// MaxExpiry caps every renewal (paper 001 Table 5: 2 weeks).
	MaxExpiry time.Time `msgpack:"max,omitempty"`
	// LastMigrationID names the migration that last swapped or released the
	// document, so a replaying orchestrator can recognise its own work.
	LastMigrationID string `msgpack:"lmid,omitempty"`
	// LastSwap records the last swap. The swap's own CAS
	// writes it and no other transition changes it, so, unlike our token
	// on the secondary location (which the next pre-lock overwrites), it
	// still names the swap after a later migration has pre-locked: a
	// replaying orchestrator whose Swapped event (or CAS reply) was lost
	// recognises its own swap by it, and the next migration finds the
	// token of the post-swap fence to clear when it moves the resource
	// back. nil: no swap since documents carried it (an older writer).
	LastSwap *SwapRecord `msgpack:"ls,omitempty"`
	// ForceReleasedAt is when an administrator last force-released the
	// document's locks (Locker.ForceRelease); no other transition sets or
	// clears it, so a watcher can tell a force release from a release.
	ForceReleasedAt time.Time `msgpack:"frc,omitempty"`
	UpdatedAt       time.Time `msgpack:"at"`

	// Revision is the KV revision the document was read at (the paper's
	// ETag). It is not stored in the value.
	Revision uint64 `msgpack:"-"`
}

// SwapRecord names a swap: the migration and the attempt token that made it.
// The token is the one its post-swap fence was set under; like every
// token it must never be logged whole.
type SwapRecord struct {
	MigrationID string `msgpack:"m"`
	Token       Token  `msgpack:"k"`
	// From is the old location: the region the swap moved the resource
	// away from, which keeps its fenced copy until its cleanup.
	From string `msgpack:"f,omitempty"`
	// ReverseUntil ends the reverse window (the swap's time plus the
	// secondary lease, the source cleanup window): until then the primary
	// deletes as tombstones (AuthorityAt), so every change it takes after
	// the swap — deletes included — has a change sequence above the one
	// the swap left it at, and a move back to From can copy only those
	// (paper 001 §4.3 applied after the swap). Zero: no window.
	ReverseUntil time.Time `msgpack:"ru,omitempty"`
}

// SwappedBy reports whether the document's last swap is the one made by
// migration id under tok.
func (d *Document) SwappedBy(id string, tok Token) bool {
	return d.LastSwap != nil && tok != "" && d.LastSwap.Token == tok && d.LastSwap.MigrationID == id
}

// Clone returns a deep copy.
func (d *Document) Clone() *Document {
	c := *d
	if d.Secondary != nil {
		s := *d.Secondary
		c.Secondary = &s
	}
	if d.LastSwap != nil {
		ls := *d.LastSwap
		c.LastSwap = &ls
	}
	return &c
}

// ActiveLock reports whether the primary carries a lock in force at now:
// the condition under which a cached copy may not be served and the library
// reads through to the leader (paper 000 §3.2, Listing 1).
func (d *Document) ActiveLock(now time.Time, skew time.Duration) bool {
	return d.Primary.Lock.InForce(now, skew)
}

// Token returns the token of the migration holding the document, if any.
// Cacheable reports whether a cached copy of d may be served without
// reading through to the leader at now: only while its primary carries no
// lock, or a lock whose start (less the skew) is still ahead.
//
// The paper's rule serves a cached record that carries no ACTIVE lock
// (paper 000 §3.2); that misses a lock that has lapsed: a document cached
// during Phase 3 (write lock held, primary = the source) would be served as
// current once the lock expired, for the rest of the cache's lifetime,
// sending reads to the old source and writes into its post-swap fence. A
// lock, once started, means a migration may have moved the resource since,
// in force or not; only a swap or a release (which leave the primary
// unlocked) makes a document cacheable again.
func (d *Document) Cacheable(now time.Time, skew time.Duration) bool {
	l := d.Primary.Lock
	return l.Type == LockNone || now.Before(l.NotBefore.Add(-skew))
}

func (d *Document) Token() Token { return d.Primary.Lock.Token }

// Encode serialises the document (msgpack) with the current schema version.
func (d *Document) Encode() ([]byte, error) {
	d.SchemaVersion = SchemaVersion
	return msgpack.Marshal(d)
}

// DecodeDocument parses stored bytes. Garbage gives ErrMalformed, another
// schema version gives ErrSchemaVersion; neither ever yields a document, so
// a damaged entry can never read as "unlocked".
func DecodeDocument(b []byte, revision uint64) (doc *Document, err error) {
	defer func() {
		// msgpack v5.4.1 panics on a nil where a time.Time is expected
		// (reflect IsNil on a struct); a routing value written by any client
		// must never take a resolver down, so a decoder panic is ErrMalformed.
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("%w: decoder panic: %v", ErrMalformed, r)
		}
	}()
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty value", ErrMalformed)
	}
	var d Document
	if err := msgpack.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if d.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%w: %d (this library reads %d)", ErrSchemaVersion, d.SchemaVersion, SchemaVersion)
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	d.Revision = revision
	return &d, nil
}

func (d *Document) validate() error {
	bad := func(why string) error { return fmt.Errorf("%w: %s", ErrMalformed, why) }
	if d.Resource == "" {
		return bad("no resource")
	}
	if d.Primary.Region == "" {
		return bad("no primary region")
	}
	for _, loc := range []*Location{&d.Primary, d.Secondary} {
		if loc == nil {
			continue
		}
		if loc.Region == "" {
			return bad("location without region")
		}
		l := loc.Lock
		if l.Type >= lockTypeEnd {
			return bad(fmt.Sprintf("lock type %d", l.Type))
		}
		if l.Type != LockNone && (l.Token == "" || l.Expiry.IsZero()) {
			return bad("lock without token or expiry")
		}
	}
	if d.Primary.Lock.Type == LockSecondary {
		return bad("secondary lock on the primary")
	}
	if d.LastSwap != nil && (d.LastSwap.MigrationID == "" || d.LastSwap.Token == "") {
		return bad("last swap without migration or token")
	}
	if d.Secondary != nil && d.Secondary.Lock.Type != LockNone && d.Secondary.Lock.Type != LockSecondary {
		return bad("migration lock on the secondary")
	}
	return nil
}

// msgpackMarshal encodes without touching SchemaVersion (tests write
// documents of other versions with it).
func msgpackMarshal(d *Document) ([]byte, error) { return msgpack.Marshal(d) }

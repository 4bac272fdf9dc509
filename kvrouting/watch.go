package kvrouting

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	cnats "github.com/cutover/cutover/nats/natsclient"
)

// Typed lock-change subscriptions: what event-driven services
// that react to migrations read, instead of decoding the ROUTING bucket
// themselves. A Watcher is pull-based: it fetches the next change only when
// asked, so a slow consumer slows the watch (bounded prefetch) and nothing
// is dropped.

// ChangeKind is the transition a LockChange records, derived by comparing
// a routing document with the previous revision of the same resource the
// watcher saw.
type ChangeKind uint8

// Change kinds.
const (
	// Observed: the first revision of a resource this watcher saw (it
	// started mid-history, or resumed): there is nothing to compare with.
	Observed ChangeKind = iota
	// Registered: the resource's routing document was created.
	Registered
	// PreLocked: a migration took the pre-lock.
	PreLocked
	// Escalated: the migration's lock rose (pre → hard-delete → write).
	Escalated
	// Renewed: the same lock, a later expiry.
	Renewed
	// Swapped: the primary moved to the migration's target.
	Swapped
	// Released: the migration's locks were released (a rollback, or the
	// old location's lock after a swap).
	Released
	// ForceReleased: an administrator force-released the locks.
	ForceReleased
	// Deleted: the routing document was deleted or purged.
	Deleted
	// Other: any other change (a rewrite with the same locks).
	Other
	changeKindEnd
)

var changeKindNames = [...]string{"observed", "registered", "pre-locked", "escalated", "renewed", "swapped",
	"released", "force-released", "deleted", "other"}

// String returns the kind's name.
func (k ChangeKind) String() string {
	if k < changeKindEnd {
		return changeKindNames[k]
	}
	return fmt.Sprintf("ChangeKind(%d)", uint8(k))
}

// LockState is a location's region and lock as a subscriber sees it: never
// the token.
type LockState struct {
	Region string
	Lock   LockType
	// NotBefore and Expiry bound the lock (zero without one).
	NotBefore, Expiry time.Time
}

// LockChange is one revision of a resource's routing document.
type LockChange struct {
	Resource Resource
	// Revision is the KV revision (the stream sequence): resume a watch
	// after it with WithStartRevision(Revision + 1).
	Revision uint64
	Kind     ChangeKind
	Time     time.Time
	Primary  LockState
	// Secondary is the locked target before a swap, the locked old
	// location after one; zero Region without one.
	Secondary LockState
	// MigrationID is the migration holding the document (pre-lock to swap
	// or release), else the one that last swapped or released it.
	MigrationID string
	// Target is the holding migration's target ("" without one).
	Target string
	// Doc is the decoded document (nil for Deleted). Its tokens are whole:
	// never log them.
	Doc *Document
}

// ErrHistoryGone is returned by Watch when the start revision is older
// than the routing stream keeps: read the current documents (Locker.Get)
// and watch from the stream's next revision instead.
var ErrHistoryGone = errors.New("kvrouting: watch start revision no longer in the routing stream")

// Watcher is a running watch. Next blocks for the next change. Not safe for
// concurrent use; Close ends it.
type Watcher struct {
	msgs    jetstream.MessagesContext
	durable bool
	prev    map[string]*Document
	pending jetstream.Msg // a durable watch's last message, acked on the next Next
	prefix  string
	// inflight is the fetch under way: one at a time, kept across a Next
	// whose ctx ended, so no message is lost.
	inflight chan fetched
}

type fetched struct {
	m   jetstream.Msg
	err error
}

// Watch watches the routing documents filter names: "" every resource, a
// kind ("conv"), or one resource ("conv/lunch"). It reads the routing
// history mirror (cnats.ProvisionRoutingHistory: every revision, for days;
// a few milliseconds behind ROUTING) where it exists, else ROUTING's own
// stream, which keeps only a few revisions per resource: a watcher more
// than that behind on one resource misses transitions. By default it
// starts with the changes after now; WithStartRevision resumes from a revision,
// WithHistory replays what the stream keeps. WithDurable makes it a durable
// JetStream consumer that resumes where it left off after a restart and
// acknowledges a change only once the caller asks for the next one (at
// least once). Errors: ErrInvalid (bad filter or options), ErrHistoryGone,
// ErrUnavailable.
func (s *Store) Watch(ctx context.Context, filter string, opts ...WatchOption) (*Watcher, error) {
	var o watchOptions
	for _, opt := range opts {
		opt(&o)
	}
	subject, err := s.watchSubject(filter)
	if err != nil {
		return nil, err
	}
	// Every revision is in the history mirror (same sequences) when it is
	// provisioned; the bucket's own stream keeps only a few per key, so a
	// watcher behind by more would miss transitions there.
	js, name := s.js, cnats.RoutingHistoryStream
	stream, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		name = s.stream
		stream, err = js.Stream(ctx, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: watch: %w", ErrUnavailable, err)
	}
	// "From now" is the stream's next sequence as of this call, not the
	// server's DeliverNew: an ordered consumer is created asynchronously,
	// and a change between this call and its creation would be missed.
	policy, start := jetstream.DeliverByStartSequencePolicy, stream.CachedInfo().State.LastSeq+1
	switch {
	case o.start > 0:
		if first := stream.CachedInfo().State.FirstSeq; o.start < first {
			return nil, fmt.Errorf("%w: revision %d, the stream starts at %d", ErrHistoryGone, o.start, first)
		}
		policy, start = jetstream.DeliverByStartSequencePolicy, o.start
	case o.history:
		policy, start = jetstream.DeliverAllPolicy, 0
	}
	var cons jetstream.Consumer
	if o.durable != "" {
		// A durable consumer that exists resumes where it was (its start
		// cannot change).
		if cons, err = js.Consumer(ctx, name, o.durable); err == nil {
			return s.startWatch(cons, o)
		}
		if !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("%w: watch: %w", ErrUnavailable, err)
		}
		// One change in flight (MaxAckPending 1): a change not acknowledged
		// is redelivered before any later one, so the order holds.
		cc := jetstream.ConsumerConfig{Durable: o.durable, FilterSubject: subject, AckPolicy: jetstream.AckExplicitPolicy,
			MaxAckPending: 1, DeliverPolicy: policy, OptStartSeq: start, Description: "cutover lock-change watch (kvrouting.Watch)"}
		cons, err = js.CreateOrUpdateConsumer(ctx, name, cc)
	} else {
		cons, err = js.OrderedConsumer(ctx, name, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{subject}, DeliverPolicy: policy, OptStartSeq: start})
	}
	if err != nil {
		return nil, fmt.Errorf("%w: watch: %w", ErrUnavailable, err)
	}
	return s.startWatch(cons, o)
}

func (s *Store) startWatch(cons jetstream.Consumer, o watchOptions) (*Watcher, error) {
	msgs, err := cons.Messages(jetstream.PullMaxMessages(max(o.buffer, 1)))
	if err != nil {
		return nil, fmt.Errorf("%w: watch: %w", ErrUnavailable, err)
	}
	return &Watcher{msgs: msgs, durable: o.durable != "", prev: map[string]*Document{}, prefix: s.prefix}, nil
}

func (s *Store) watchSubject(filter string) (string, error) {
	switch {
	case filter == "":
		return s.prefix + ">", nil
	case strings.Contains(filter, "/"):
		res, err := ParseResource(filter)
		if err != nil {
			return "", err
		}
		return s.prefix + res.Key(), nil
	default:
		if err := (Resource{Kind: filter, ID: "x"}).Validate(); err != nil {
			return "", invalidf("watch filter %q: want \"\", a kind or kind/id", filter)
		}
		return s.prefix + filter + ".*", nil
	}
}

// Next returns the next change, waiting for it; ctx bounds the wait. A
// durable watch acknowledges the previous change first. Errors: ctx's,
// ErrUnavailable when the watch ended (Close, a lost consumer).
func (w *Watcher) Next(ctx context.Context) (LockChange, error) {
	if w.pending != nil {
		if err := w.pending.Ack(); err != nil {
			return LockChange{}, fmt.Errorf("%w: ack: %w", ErrUnavailable, err)
		}
		w.pending = nil
	}
	for {
		if w.inflight == nil {
			ch := make(chan fetched, 1)
			go func() {
				m, err := w.msgs.Next()
				ch <- fetched{m, err}
			}()
			w.inflight = ch
		}
		var r fetched
		select {
		case r = <-w.inflight:
			w.inflight = nil
		case <-ctx.Done():
			return LockChange{}, ctx.Err()
		}
		if r.err != nil {
			return LockChange{}, fmt.Errorf("%w: watch: %w", ErrUnavailable, r.err)
		}
		c, ok := w.change(r.m)
		if w.durable {
			w.pending = r.m
		}
		if ok {
			return c, nil
		}
	}
}

// Close stops the watch. A durable watch's change not yet acknowledged is
// handed back (redelivered at once to the next watcher of that name); its
// consumer stays on the server, to resume. After a crash instead the server
// redelivers it after the consumer's ack wait (30 s).
func (w *Watcher) Close() {
	if w.pending != nil {
		_ = w.pending.Nak()
		w.pending = nil
	}
	w.msgs.Stop()
}

// change decodes m and derives its kind; false for a value that is not a
// routing document (it is skipped).
func (w *Watcher) change(m jetstream.Msg) (LockChange, bool) {
	key := strings.TrimPrefix(m.Subject(), w.prefix)
	res, err := ResourceFromKey(key)
	if err != nil {
		return LockChange{}, false
	}
	meta, err := m.Metadata()
	if err != nil {
		return LockChange{}, false
	}
	c := LockChange{Resource: res, Revision: meta.Sequence.Stream, Time: meta.Timestamp}
	prev := w.prev[key]
	if op := m.Headers().Get("KV-Operation"); op == "DEL" || op == "PURGE" {
		delete(w.prev, key)
		c.Kind = Deleted
		return c, true
	}
	d, err := DecodeDocument(m.Data(), c.Revision)
	if err != nil {
		return LockChange{}, false
	}
	w.prev[key] = d
	c.Doc, c.Kind = d, changeKind(prev, d)
	c.Primary = lockState(d.Primary)
	if d.Secondary != nil {
		c.Secondary = lockState(*d.Secondary)
	}
	c.MigrationID, c.Target = firstNonEmpty(d.MigrationID, d.LastMigrationID), d.Target
	return c, true
}

func lockState(l Location) LockState {
	return LockState{Region: l.Region, Lock: l.Lock.Type, NotBefore: l.Lock.NotBefore, Expiry: l.Lock.Expiry}
}

// changeKind is the kind of the change from prev (nil: unseen) to d.
func changeKind(prev, d *Document) ChangeKind {
	if prev == nil {
		if d.Primary.Lock.IsZero() && d.Secondary == nil && d.LastMigrationID == "" && d.ForceReleasedAt.IsZero() {
			return Registered
		}
		return Observed
	}
	p, n := prev.Primary.Lock, d.Primary.Lock
	switch {
	case !d.ForceReleasedAt.Equal(prev.ForceReleasedAt):
		return ForceReleased
	case d.Primary.Region != prev.Primary.Region:
		return Swapped
	case p.IsZero() && n.Type == LockPre:
		return PreLocked
	case !p.IsZero() && n.Token == p.Token && n.Type > p.Type:
		return Escalated
	case !p.IsZero() && n.Token == p.Token && n.Type == p.Type && n.Expiry.After(p.Expiry):
		return Renewed
	case !p.IsZero() && n.IsZero():
		return Released
	case p.IsZero() && n.IsZero() && prev.Secondary != nil && !prev.Secondary.Lock.IsZero() &&
		(d.Secondary == nil || d.Secondary.Lock.IsZero()):
		return Released
	}
	return Other
}

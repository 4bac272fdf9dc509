package kvrouting

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	cnats "github.com/cutover/cutover/nats/natsclient"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultTimeout bounds a routing-store call whose context has no deadline.
const DefaultTimeout = 5 * time.Second

// Stats counts routing-store operations. Reads are what paper 000 §5.3 and
// §8 count: every one is a round trip to the store.
type Stats struct {
	LeaderReads uint64 // non-direct gets answered by the stream leader
	DirectReads uint64 // direct gets (any replica; possibly stale)
	MirrorReads uint64 // direct gets on a regional mirror
	Writes      uint64 // conditional writes attempted
	Conflicts   uint64 // conditional writes refused for a stale revision (412)
}

// Reads returns the total number of store reads.
func (s Stats) Reads() uint64 { return s.LeaderReads + s.DirectReads + s.MirrorReads }

// Store is the routing bucket in JetStream KV: the only path to the routing
// documents. It is safe for concurrent use.
type Store struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	stream string
	prefix string

	leaderReads, directReads, mirrorReads, writes, conflicts atomic.Uint64

	// resolverDelay is the largest ConvergenceDelay of the Resolvers
	// created on this store (LockConfig.ConvergenceDelay).
	resolverDelay atomic.Int64
}

// noteResolver records a Resolver's convergence delay.
func (s *Store) noteResolver(d time.Duration) {
	for {
		cur := s.resolverDelay.Load()
		if int64(d) <= cur || s.resolverDelay.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}

// NewStore binds to an existing routing bucket (see cnats.ProvisionRouting).
// Errors: ErrUnavailable when the bucket cannot be found.
func NewStore(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, bucket string) (*Store, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	if bucket == "" {
		bucket = cnats.RoutingBucket
	}
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("%w: bind bucket %s: %w", ErrUnavailable, bucket, err)
	}
	return &Store{nc: nc, js: js, kv: kv, stream: "KV_" + bucket, prefix: "$KV." + bucket + "."}, nil
}

// Stats returns the operation counters.
func (s *Store) Stats() Stats {
	return Stats{
		LeaderReads: s.leaderReads.Load(), DirectReads: s.directReads.Load(), MirrorReads: s.mirrorReads.Load(),
		Writes: s.writes.Load(), Conflicts: s.conflicts.Load(),
	}
}

// KV returns the underlying bucket (for watches and tooling).
func (s *Store) KV() jetstream.KeyValue { return s.kv }

// GetLeader reads the document with a NON-direct get, answered only by the
// bucket's stream leader (DESIGN.md "Reading the routing document"): the read
// used for anything lock-related. Errors: ErrNotFound, ErrMalformed,
// ErrSchemaVersion, ErrUnavailable.
func (s *Store) GetLeader(ctx context.Context, res Resource) (*Document, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	s.leaderReads.Add(1)
	data, seq, err := cnats.LeaderGetLast(ctx, s.nc, s.stream, s.prefix+res.Key())
	return s.decode(data, seq, err)
}

// GetDirect reads the document with a direct get, which any replica may
// answer: possibly stale, fine only for unlocked lookups.
func (s *Store) GetDirect(ctx context.Context, res Resource) (*Document, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	s.directReads.Add(1)
	e, err := s.kv.Get(ctx, res.Key())
	if err != nil {
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return DecodeDocument(e.Value(), e.Revision())
}

// GetMirror reads the document from a regional mirror stream with a direct
// get. The revision is the origin's (mirrors keep sequences).
func (s *Store) GetMirror(ctx context.Context, mirrorStream string, res Resource) (*Document, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	s.mirrorReads.Add(1)
	data, seq, err := cnats.DirectGetLast(ctx, s.nc, mirrorStream, s.prefix+res.Key())
	return s.decode(data, seq, err)
}

func (s *Store) decode(data []byte, seq uint64, err error) (*Document, error) {
	if err != nil {
		if errors.Is(err, cnats.ErrNotFound) || errors.Is(err, cnats.ErrDeleted) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return DecodeDocument(data, seq)
}

// errRevision reports a conditional write refused because the revision moved.
var errRevision = errors.New("kvrouting: revision moved")

// create writes the first revision of a document; errRevision if it exists.
func (s *Store) create(ctx context.Context, res Resource, doc *Document) (uint64, error) {
	b, err := doc.Encode()
	if err != nil {
		return 0, fmt.Errorf("%w: encode: %w", ErrInvalid, err)
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	s.writes.Add(1)
	rev, err := s.kv.Create(ctx, res.Key(), b)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			s.conflicts.Add(1)
			return 0, errRevision
		}
		return 0, fmt.Errorf("%w: create: %w", ErrUnavailable, err)
	}
	return rev, nil
}

// update is the compare-and-swap: it writes doc only if the stored revision
// is still rev (the paper's If-Match ETag, paper 000 §3.1).
func (s *Store) update(ctx context.Context, res Resource, doc *Document, rev uint64) (uint64, error) {
	b, err := doc.Encode()
	if err != nil {
		return 0, fmt.Errorf("%w: encode: %w", ErrInvalid, err)
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	s.writes.Add(1)
	nrev, err := s.kv.Update(ctx, res.Key(), b, rev)
	if err != nil {
		// R1 streams answer a stale revision with 10071 (ErrKeyExists), R3
		// streams with 10164 (ErrKeyRevisionMismatch): both are the 412.
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			s.conflicts.Add(1)
			return 0, errRevision
		}
		return 0, fmt.Errorf("%w: update: %w", ErrUnavailable, err)
	}
	return nrev, nil
}

// withTimeout bounds one store call by DefaultTimeout even when ctx has a
// later deadline: a request lost in a reconnect must fail fast and be
// re-evaluated, not hang for the caller's whole budget.
func withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= DefaultTimeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}

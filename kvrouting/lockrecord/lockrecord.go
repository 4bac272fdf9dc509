// Package lockrecord is the baseline that routing-embedded locking is
// measured against (paper 000 §5.3, §5.5): a DynamoDB-lock-client style
// design where each resource's lock is a separate record in a separate
// bucket, read authoritatively on every operation that might touch a
// migrating resource, because the service cannot know in advance which do.
// Routing itself is still cached, as it would be.
//
// It exists for `cutover bench routing` and its go benchmarks only.
package lockrecord

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cutover/cutover/kvrouting"
	cnats "github.com/cutover/cutover/nats"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/vmihailenco/msgpack/v5"
)

// Bucket is the lock-record bucket.
const Bucket = "LOCKS"

// Record is one lock record.
type Record struct {
	Type   kvrouting.LockType `msgpack:"t"`
	Token  kvrouting.Token    `msgpack:"k"`
	Expiry time.Time          `msgpack:"ex"`
}

// Checker decides operations the lock-record way: routing from the cached
// resolver, plus one authoritative lock-record read per operation.
type Checker struct {
	nc       *nats.Conn
	kv       jetstream.KeyValue
	resolver *kvrouting.Resolver
	skew     time.Duration
	reads    atomic.Uint64
}

// Provision creates the lock-record bucket with the given replicas.
func Provision(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	return js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: Bucket,
		Description: "cutover bench baseline: one lock record per resource (not used by the protocol)", Replicas: max(1, replicas), History: 1})
}

// New returns a Checker.
func New(nc *nats.Conn, kv jetstream.KeyValue, resolver *kvrouting.Resolver) *Checker {
	return &Checker{nc: nc, kv: kv, resolver: resolver, skew: resolver.Config().ClockSkew}
}

// Put writes a lock record (setup for benchmarks).
func (c *Checker) Put(ctx context.Context, res kvrouting.Resource, r Record) error {
	b, err := msgpack.Marshal(&r)
	if err != nil {
		return err
	}
	_, err = c.kv.Put(ctx, res.Key(), b)
	return err
}

// Reads returns the number of lock-record reads made.
func (c *Checker) Reads() uint64 { return c.reads.Load() }

// Decide resolves routing (cached) and then reads the lock record from the
// leader — the separate read the baseline pays on every operation.
func (c *Checker) Decide(ctx context.Context, res kvrouting.Resource, region string, op kvrouting.OpClass) (kvrouting.Decision, error) {
	rs, err := c.resolver.Resolve(ctx, res)
	if err != nil {
		return kvrouting.Decision{}, err
	}
	c.reads.Add(1)
	data, _, err := cnats.LeaderGetLast(ctx, c.nc, "KV_"+Bucket, "$KV."+Bucket+"."+res.Key())
	var lock kvrouting.Lock
	switch {
	case errors.Is(err, cnats.ErrNotFound), errors.Is(err, cnats.ErrDeleted):
	case err != nil:
		return kvrouting.Decision{}, fmt.Errorf("lockrecord: read lock: %w", err)
	default:
		var r Record
		if err := decodeRecord(data, &r); err != nil {
			return kvrouting.Decision{}, fmt.Errorf("lockrecord: decode: %w", err)
		}
		lock = kvrouting.Lock{Type: r.Type, Token: r.Token, Expiry: r.Expiry}
	}
	doc := rs.Doc.Clone()
	doc.Primary.Lock = lock
	return kvrouting.Decide(doc, region, op, time.Now(), c.skew), nil
}

// decodeRecord decodes a lock record; a decoder panic (msgpack v5.4.1 on a
// nil time) is an error, never a crash.
func decodeRecord(b []byte, r *Record) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decoder panic: %v", p)
		}
	}()
	return msgpack.Unmarshal(b, r)
}

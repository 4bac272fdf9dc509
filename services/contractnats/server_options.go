package contractnats

import (
	"fmt"
	"time"

	"github.com/cutover/cutover/services/conformance"
)

// Server defaults applied by ServeOptions.EnsureDefaults.
const (
	// DefaultHandlerTimeout bounds one request at the server when the
	// caller sent no deadline.
	DefaultHandlerTimeout = 30 * time.Second
	// DefaultMaxConcurrent is how many requests one server handles at
	// once. Every operation is idempotent and takes the store's
	// per-resource lock, so requests for different resources (and pages of
	// one) need not wait for each other's fsyncs.
	DefaultMaxConcurrent = 64
)

// ServeOptions configures Serve. Zero values mean the documented defaults.
type ServeOptions struct {
	// Checkpoints holds the import checkpoints. nil means the cursors of the
	// participant's own store when the participant exposes one (a
	// *services.StoreParticipant: StoreCheckpoints(p.Store())), so that the
	// checkpoint is as durable as the imported records; otherwise
	// MemoryCheckpoints().
	Checkpoints Checkpoints
	// HandlerTimeout bounds one request when the caller sent no deadline
	// (a Client always sends its own); 0 means DefaultHandlerTimeout.
	HandlerTimeout time.Duration
	// PublishAttempts and PublishAttemptTimeout are the page publish retry
	// policy; 0 means DefaultPublishAttempts and
	// DefaultPublishAttemptTimeout.
	PublishAttempts       int
	PublishAttemptTimeout time.Duration
	// MaxReplyBytes caps a reply body (a ReadSlice reply can be large); 0
	// means the connection's max payload. A larger reply is refused with
	// CodeTooLarge, and Client.ReadSlice then splits the slice.
	MaxReplyBytes int
	// Description is the micro service description.
	Description string
	// MaxConcurrent bounds the requests handled at once (all endpoints
	// together); 0 means DefaultMaxConcurrent, 1 handles them one at a
	// time in arrival order. A full server stops reading its
	// subscriptions, which is the back-pressure callers see as latency.
	MaxConcurrent int
	// Key is this region's contract key (RegionKey of the deployment's
	// contract secret): every reply and every published page is signed
	// with it (signing.go), and a stored page found by a deduplicated
	// publish is accepted only if it verifies. nil signs nothing
	// (development); a Client with Keys then refuses the replies.
	Key []byte
	// RoutingEpoch is the routing bucket's epoch
	// (natsclient.RoutingEpoch). When set, Serve records it in Checkpoints
	// the first time and refuses to serve (ErrRoutingEpoch) under another:
	// the store's authority records hold revisions of the stream that had
	// the recorded epoch. "" checks nothing.
	RoutingEpoch string
	// Clock is this server's wall clock, against which a request's
	// HeaderDeadline is checked (tests run a region ahead or behind); nil
	// means time.Now.
	Clock func() time.Time
	// Harness, in test mode only, serves the participant's user path
	// through the harness endpoints (HarnessOps) for `cutover
	// conformance`. nil (production) serves none.
	Harness *conformance.UserPath
}

// EnsureDefaults fills the zero fields of o, except Checkpoints, which Serve
// resolves against the participant.
func (o *ServeOptions) EnsureDefaults() {
	if o.HandlerTimeout == 0 {
		o.HandlerTimeout = DefaultHandlerTimeout
	}
	if o.PublishAttempts == 0 {
		o.PublishAttempts = DefaultPublishAttempts
	}
	if o.PublishAttemptTimeout == 0 {
		o.PublishAttemptTimeout = DefaultPublishAttemptTimeout
	}
	if o.MaxConcurrent == 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Description == "" {
		o.Description = "cutover migration contract (paper 001 §5.1)"
	}
}

// Validate reports settings EnsureDefaults cannot fix, wrapping
// ErrInvalidOptions.
func (o *ServeOptions) Validate() error {
	switch {
	case o.HandlerTimeout < 0:
		return fmt.Errorf("%w: negative HandlerTimeout", ErrInvalidOptions)
	case o.PublishAttempts < 0:
		return fmt.Errorf("%w: negative PublishAttempts", ErrInvalidOptions)
	case o.PublishAttemptTimeout < 0:
		return fmt.Errorf("%w: negative PublishAttemptTimeout", ErrInvalidOptions)
	case o.MaxReplyBytes < 0:
		return fmt.Errorf("%w: negative MaxReplyBytes", ErrInvalidOptions)
	case o.MaxConcurrent < 0:
		return fmt.Errorf("%w: negative MaxConcurrent", ErrInvalidOptions)
	case o.Key != nil && len(o.Key) < 16:
		return fmt.Errorf("%w: a contract key of %d bytes (RegionKey gives 32)", ErrInvalidOptions, len(o.Key))
	case o.Harness != nil && (o.Harness.Write == nil || o.Harness.Delete == nil || o.Harness.Read == nil):
		return fmt.Errorf("%w: a Harness without Write, Delete or Read", ErrInvalidOptions)
	}
	return nil
}

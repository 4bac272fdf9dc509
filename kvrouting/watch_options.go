package kvrouting

// WatchOption configures Store.Watch.
type WatchOption func(*watchOptions)

type watchOptions struct {
	start   uint64
	history bool
	durable string
	buffer  int
}

// WithStartRevision starts the watch at revision rev (inclusive): resume
// after a change c with WithStartRevision(c.Revision + 1). A revision the
// stream no longer keeps is ErrHistoryGone. The first revision of each
// resource seen is Observed (the one before it is not compared).
func WithStartRevision(rev uint64) WatchOption { return func(o *watchOptions) { o.start = rev } }

// WithHistory starts the watch at the oldest revision the routing stream
// keeps (the bucket keeps a few per resource) instead of at now.
func WithHistory() WatchOption { return func(o *watchOptions) { o.history = true } }

// WithDurable makes the watch a durable JetStream consumer named name: a
// watcher restarted with the same name resumes after the last change it
// acknowledged, and a change is acknowledged when the caller asks for the
// next one (at least once). A change delivered again — the one the
// previous watcher received but had not acknowledged when it stopped, or
// any change after a restart — is the first this watcher sees of its
// resource, so it arrives as Observed, not as the transition it was (the
// revision before it is not compared); a caller that needs the transition
// keeps the last state per resource itself. The consumer stays on the
// server after Close; delete it with natscli or the JetStream API when no
// longer needed.
func WithDurable(name string) WatchOption { return func(o *watchOptions) { o.durable = name } }

// WithBuffer sets how many changes the watcher prefetches (default 1: the
// next change is fetched when asked for). A full buffer makes the server
// wait, never drop.
func WithBuffer(n int) WatchOption { return func(o *watchOptions) { o.buffer = n } }

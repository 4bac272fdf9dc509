package store

import (
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/vfs"

	"github.com/cutover/cutover/services/contract"
)

// Defaults applied by Options.EnsureDefaults.
const (
	// DefaultTombstoneTTL is how long a tombstone is kept (paper 001 Table 5).
	DefaultTombstoneTTL = 30 * 24 * time.Hour
	// DefaultSliceWidth is the width of a validation time slice.
	DefaultSliceWidth = contract.SliceWidth
	// DefaultPageLimit is the page size used when a read is given limit <= 0.
	DefaultPageLimit = 500
	// MaxPageLimit caps the page size of every read.
	MaxPageLimit = 10000
)

// Options configures a Store. The zero value of every field but Dir means the
// documented default; call EnsureDefaults (Open does) to fill them in.
type Options struct {
	// Dir is the Pebble directory. Required unless FS is an in-memory
	// filesystem (*vfs.MemFS), where "" means the root.
	Dir string
	// FS is the filesystem; nil means vfs.Default. Tests may use vfs.NewMem().
	FS vfs.FS
	// TombstoneTTL is how long a tombstone is kept before SweepTombstones may
	// remove it; 0 means DefaultTombstoneTTL. The expiry is fixed when the
	// tombstone is written, so changing it affects later tombstones only.
	TombstoneTTL time.Duration
	// SliceWidth is the width of the time slices that digests and validation
	// use; 0 means DefaultSliceWidth. It is recorded on first open and a
	// later Open with another width fails (the digests would not match), and
	// the source and target of a migration must use the same width.
	SliceWidth time.Duration
	// Sync, nil meaning true, makes every commit pebble.Sync (durable once
	// the call returns). false means pebble.NoSync, for benchmarks only.
	Sync *bool
	// Clock is the store's time source; nil means time.Now. It decides when an
	// authority's Until has passed, timestamps and tombstone expiry.
	Clock func() time.Time
	// Logger receives Pebble's log lines at debug level (its fatal errors
	// at error level, then a panic); nil means slog.Default(). Nothing goes
	// to stdout or the standard log.
	Logger *slog.Logger
}

// EnsureDefaults fills the zero fields of o with their defaults. It does not
// validate; Open does.
func (o *Options) EnsureDefaults() {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.TombstoneTTL == 0 {
		o.TombstoneTTL = DefaultTombstoneTTL
	}
	if o.SliceWidth == 0 {
		o.SliceWidth = DefaultSliceWidth
	}
	if o.Sync == nil {
		t := true
		o.Sync = &t
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
}

// validate reports ErrInvalid for settings that EnsureDefaults cannot fix.
func (o *Options) validate() error {
	if o.TombstoneTTL < 0 {
		return invalidf("negative TombstoneTTL %s", o.TombstoneTTL)
	}
	if o.SliceWidth < 0 {
		return invalidf("negative SliceWidth %s", o.SliceWidth)
	}
	if o.Dir == "" {
		if _, mem := o.FS.(*vfs.MemFS); !mem {
			return invalidf("Dir is required on a real filesystem")
		}
	}
	return nil
}

package orchestrator

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/cutover/cutover/services/contract"
)

// TestWorkerOptionsConflict: a nil or repeated option is refused with
// ErrInvalid and no worker starts.
func TestWorkerOptionsConflict(t *testing.T) {
	e := mustEnv(t)
	for name, opts := range map[string][]WorkerOption{
		"nil policy":   {WithFencePolicy(nil)},
		"two policies": {WithFencePolicy(ProtocolFencing()), WithFencePolicy(ProtocolFencing())},
		"nil option":   {nil},
	} {
		if _, err := NewWorker(e.nc, e.js, e.config(), opts...); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// writeFencing is a baseline policy: writes refused from the pre-lock on.
type writeFencing struct{}

func (writeFencing) WriteFenceAtPreLock() bool        { return true }
func (writeFencing) Phase2Fence() contract.FenceLevel { return contract.FenceWrite }

// TestFencePolicy: the source is fenced as the worker's policy says before
// Phase 3, as the protocol says without one (hard-delete fence in Phase 2,
// write fence in Phase 3, the post-swap fence); without the holder cache
// the migration is the same, at the cost of routing reads.
func TestFencePolicy(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []WorkerOption
		want func([]contract.FenceLevel) bool
	}{
		{"protocol", nil, func(l []contract.FenceLevel) bool {
			return slices.Equal(l, []contract.FenceLevel{contract.FenceHardDelete, contract.FenceWrite, contract.FenceWrite})
		}},
		{"write from the pre-lock", []WorkerOption{WithFencePolicy(writeFencing{})}, func(l []contract.FenceLevel) bool {
			// One at the pre-lock (again on every early timer), Phase 2,
			// Phase 3, after the swap.
			return len(l) >= 4 && !slices.ContainsFunc(l, func(f contract.FenceLevel) bool { return f != contract.FenceWrite })
		}},
		{"without the holder cache", []WorkerOption{WithoutHolderCache()}, func(l []contract.FenceLevel) bool {
			return slices.Equal(l, []contract.FenceLevel{contract.FenceHardDelete, contract.FenceWrite, contract.FenceWrite})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := mustEnv(t)
			const res = "conv/policy"
			e.seed(res, 5)
			var (
				mu     sync.Mutex
				levels []contract.FenceLevel
			)
			e.wrap("us", "messages").onFence = func(f contract.Fence) error {
				mu.Lock()
				defer mu.Unlock()
				levels = append(levels, f.Level)
				return nil
			}
			w, err := NewWorker(e.nc, e.js, e.config(), tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = w.Run(context.Background()) }()
			t.Cleanup(func() { _ = w.Close() })
			e.migrateDone(res, "eu")
			mu.Lock()
			defer mu.Unlock()
			if !tc.want(levels) {
				t.Fatalf("fences set at the source: %v", levels)
			}
			e.assertMigrated(res)
		})
	}
}

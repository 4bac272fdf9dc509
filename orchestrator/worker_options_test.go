package orchestrator

import (
	"errors"
	"testing"
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

package bench

import "errors"

// ErrUnknownStrategy is returned by FencePolicy for a name that is not a
// fencing strategy.
var ErrUnknownStrategy = errors.New("bench: unknown fencing strategy")

package bench

import "errors"

// ErrUnknownStrategy is returned by FencePolicy for a name that is not a
// fencing strategy.
var ErrUnknownStrategy = errors.New("bench: unknown fencing strategy")

// ErrOptions is returned by a suite whose options are out of range, before
// it starts anything (the command reports it as a usage error).
var ErrOptions = errors.New("bench: invalid options")

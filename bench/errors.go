package bench

import "errors"

// ErrOptions is returned by a suite whose options are out of range, before
// it starts anything (the command reports it as a usage error).
var ErrOptions = errors.New("bench: invalid options")

package chaos

import "errors"

// ErrOptions marks options Run refuses (Options.Validate).
var ErrOptions = errors.New("chaos: invalid options")

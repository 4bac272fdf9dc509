package orchestrator

import (
	"errors"

	"github.com/cutover/cutover/eventlog"
)

var (
	// ErrConflict is returned when an append lost the race: another worker
	// advanced the migration first (wrong last subject sequence).
	ErrConflict = eventlog.ErrConflict
	// ErrNotFound is returned for a migration with no events.
	ErrNotFound = errors.New("orchestrator: migration not found")
	// ErrInvalid is returned for an invalid command or configuration.
	ErrInvalid = errors.New("orchestrator: invalid argument")
	// ErrIllegalTransition is returned by Apply (and so by every append)
	// for an event the transition table (transitions.txt) does not allow
	// in the migration's phase, or that would lead to a phase the table
	// does not list for it.
	ErrIllegalTransition = errors.New("orchestrator: illegal transition")
	// ErrClosed is returned by Run after Close.
	ErrClosed = errors.New("orchestrator: worker closed")
	// errCrash is the test hook's simulated crash: the step stops without
	// acknowledging anything.
	errCrash = errors.New("orchestrator: simulated crash")
)

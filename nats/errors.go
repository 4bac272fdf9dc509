package cnats

import (
	"errors"

	"github.com/cutover/cutover/nats/natsclient"
)

// The client-side sentinels live in natsclient (no server dependency);
// these are the same values.
var (
	ErrNotFound       = natsclient.ErrNotFound
	ErrDeleted        = natsclient.ErrDeleted
	ErrStreamNotFound = natsclient.ErrStreamNotFound
	ErrUnavailable    = natsclient.ErrUnavailable
	ErrNotMirror      = natsclient.ErrNotMirror
	ErrInvalidName    = natsclient.ErrInvalidName
	// ErrInvalidOptions is returned when options are inconsistent or out of
	// range (for example a non-loopback host, or routing replicas above
	// MaxReplicas).
	ErrInvalidOptions = natsclient.ErrInvalidOptions
)

var (
	// ErrClosed is returned by Restart after Shutdown removed the server's
	// temporary store: there is nothing left to restart from.
	ErrClosed = errors.New("cnats: server closed")

	// ErrNoLeader is returned by Cluster.StreamLeader when no running node
	// currently leads the stream.
	ErrNoLeader = errors.New("cnats: no stream leader")

	// ErrStartFailed is returned when a server failed to start (for example
	// its port was taken) or did not become ready, or a cluster did not form
	// its JetStream meta group, in time.
	ErrStartFailed = errors.New("cnats: server did not start")
)

// APIError is an error reported by the JetStream API (natsclient.APIError).
type APIError = natsclient.APIError

// translateAPIError maps a JetStream API error onto the package sentinels.
func translateAPIError(op string, e *APIError) error { return natsclient.TranslateAPIError(op, e) }

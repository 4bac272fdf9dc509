package events

import "errors"

var (
	// ErrUnknownType is returned by Decode for an envelope whose Type is not
	// registered: a newer writer, or garbage that happened to parse.
	ErrUnknownType = errors.New("events: unknown message type")
	// ErrSchemaVersion is returned by Decode for an envelope written by a
	// schema version this package does not read.
	ErrSchemaVersion = errors.New("events: unknown schema version")
	// ErrMalformed is returned by Decode for bytes that are not a valid
	// envelope or whose payload does not match its type.
	ErrMalformed = errors.New("events: malformed message")
	// ErrInvalid is returned by Encode for an envelope that cannot be
	// written (no body, empty id).
	ErrInvalid = errors.New("events: invalid message")
)

package contractnats

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cutover/cutover/services/contract"
)

var (
	// ErrInvalidName is returned by Serve, ProvisionPages and the page
	// functions for a region, service or migration id that cannot be a NATS
	// subject token (see ValidateService and ValidateMigrationID). Client methods report it as a
	// CodeInvalid *contract.Error instead.
	ErrInvalidName = errors.New("contractnats: invalid name")

	// ErrInvalidOptions is returned by Serve for inconsistent ServeOptions.
	ErrInvalidOptions = errors.New("contractnats: invalid options")

	// ErrRoutingEpoch is returned by Serve when the routing bucket's epoch
	// is not the one this participant's store served under
	// (ServeOptions.RoutingEpoch): the ROUTING stream was created again.
	ErrRoutingEpoch = errors.New("contractnats: the routing bucket was created again")
)

// invalid returns the CodeInvalid *contract.Error for a bad argument.
func invalid(format string, args ...any) *contract.Error {
	return contract.Errorf(contract.CodeInvalid, format, args...)
}

// fromNATS translates an error of a NATS request or a JetStream call into a
// *contract.Error: nobody answering and timeouts are CodeUnavailable (the
// caller may retry), a missing message CodeNotFound, a payload above the
// server's limit CodeTooLarge, anything else CodeInternal. op prefixes the
// message.
func fromNATS(op string, err error) *contract.Error {
	var se *contract.Error
	if errors.As(err, &se) {
		return se
	}
	code := contract.CodeInternal
	switch {
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, context.Canceled), errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, nats.ErrConnectionDraining), errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, jetstream.ErrStreamNotFound):
		code = contract.CodeUnavailable
	case errors.Is(err, jetstream.ErrMsgNotFound):
		code = contract.CodeNotFound
	case errors.Is(err, nats.ErrMaxPayload):
		code = contract.CodeTooLarge
	}
	return &contract.Error{Code: code, Message: fmt.Sprintf("%s: %v", op, err)}
}

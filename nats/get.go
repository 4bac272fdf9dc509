package cnats

import (
	"context"

	"github.com/nats-io/nats.go"

	"github.com/cutover/cutover/nats/natsclient"
)

// DirectGetLast is natsclient.DirectGetLast: the last message on subject
// from stream by a direct get (any replica answers: possibly stale).
func DirectGetLast(ctx context.Context, nc *nats.Conn, stream, subject string) ([]byte, uint64, error) {
	return natsclient.DirectGetLast(ctx, nc, stream, subject)
}

// LeaderGetLast is natsclient.LeaderGetLast: the last message on subject
// from stream, answered by the stream leader only (lock enforcement).
func LeaderGetLast(ctx context.Context, nc *nats.Conn, stream, subject string) ([]byte, uint64, error) {
	return natsclient.LeaderGetLast(ctx, nc, stream, subject)
}

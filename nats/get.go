package cnats

import (
	"context"
	"time"

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

// LeaderGetNext is natsclient.LeaderGetNext: the first message on subject
// at or after seq, answered by the stream leader only, with the time the
// stream stored it.
func LeaderGetNext(ctx context.Context, nc *nats.Conn, stream, subject string, seq uint64) ([]byte, uint64, time.Time, error) {
	return natsclient.LeaderGetNext(ctx, nc, stream, subject, seq)
}

package cnats

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRetryIdempotent: timeouts and missing responders are tried again while
// the caller's context allows; other errors end it at once.
func TestRetryIdempotent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	calls := 0
	err := RetryIdempotent(ctx, func(actx context.Context) error {
		calls++
		if dl, ok := actx.Deadline(); !ok || time.Until(dl) > DefaultTimeout {
			t.Errorf("attempt %d not bounded by DefaultTimeout", calls)
		}
		if calls < 3 {
			return []error{nats.ErrTimeout, nats.ErrNoResponders}[calls-1]
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("err %v after %d calls, want nil after 3", err, calls)
	}
	boom := errors.New("stream name already in use with a different configuration")
	calls = 0
	if err := RetryIdempotent(ctx, func(context.Context) error { calls++; return boom }); !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("err %v after %d calls, want boom after 1", err, calls)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	if err := RetryIdempotent(short, func(context.Context) error { return nats.ErrTimeout }); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("err %v when the caller's deadline passes, want the last timeout", err)
	}
}

// TestTransient: "no answer yet" and "cluster not ready" are transient; a
// refusal is not.
func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{nats.ErrTimeout, true},
		{nats.ErrNoResponders, true},
		{jetstream.ErrNoStreamResponse, true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008}, true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10005}, true},
		{&jetstream.APIError{Code: 400, ErrorCode: 10099}, false},
		{errors.New("other"), false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("Transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

package natsclient

// The package's pure functions: argument checks, error classification and
// translation, defaults, contexts. The tests against a live server are in
// natsclient_test.go (package natsclient_test: natstest imports package
// cnats, which imports this one).

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestTransientTable: "no answer yet" and "cluster not ready" are
// transient, however wrapped; a refusal, a missing stream or a cancel is
// not.
func TestTransientTable(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("cnats: provision: %w", err) }
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"deadline", context.DeadlineExceeded, true},
		{"wrapped deadline", wrap(context.DeadlineExceeded), true},
		{"nats timeout", nats.ErrTimeout, true},
		{"no responders", nats.ErrNoResponders, true},
		{"wrapped no responders", wrap(nats.ErrNoResponders), true},
		{"no stream response", jetstream.ErrNoStreamResponse, true},
		{"no peers for placement (10005)", &jetstream.APIError{Code: 500, ErrorCode: 10005}, true},
		{"cluster not available (10008)", &jetstream.APIError{Code: 503, ErrorCode: 10008}, true},
		{"wrapped 10008", wrap(&jetstream.APIError{Code: 503, ErrorCode: 10008}), true},
		{"joined with 10008", errors.Join(errors.New("x"), &jetstream.APIError{Code: 503, ErrorCode: 10008}), true},
		{"stream name in use (10058)", &jetstream.APIError{Code: 400, ErrorCode: 10058}, false},
		{"stream not found (10059)", &jetstream.APIError{Code: 404, ErrorCode: 10059}, false},
		{"jetstream stream not found", jetstream.ErrStreamNotFound, false},
		{"bucket exists", jetstream.ErrBucketExists, false},
		{"canceled", context.Canceled, false},
		{"connection closed", nats.ErrConnectionClosed, false},
		{"plain", errors.New("other"), false},
		{"nil", nil, false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestRetryIdempotentTable: transient failures are tried again within
// the caller's context, each attempt bounded by DefaultTimeout; anything
// else, or the caller's context ending, returns the last error.
func TestRetryIdempotentTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("transient then ok", func(t *testing.T) {
		fails := []error{nats.ErrTimeout, nats.ErrNoResponders, jetstream.ErrNoStreamResponse,
			&jetstream.APIError{Code: 500, ErrorCode: 10005}, &jetstream.APIError{Code: 503, ErrorCode: 10008}}
		calls := 0
		err := RetryIdempotent(ctx, func(actx context.Context) error {
			calls++
			dl, ok := actx.Deadline()
			if !ok {
				t.Errorf("attempt %d has no deadline", calls)
			}
			if pdl, _ := ctx.Deadline(); !dl.Before(pdl) {
				t.Errorf("attempt %d not bounded below the caller's deadline", calls)
			}
			if calls <= len(fails) {
				return fails[calls-1]
			}
			return nil
		})
		if err != nil || calls != len(fails)+1 {
			t.Fatalf("err %v after %d calls, want nil after %d", err, calls, len(fails)+1)
		}
	})
	t.Run("refusal at once", func(t *testing.T) {
		refused := &jetstream.APIError{Code: 400, ErrorCode: 10058, Description: "stream name already in use"}
		calls := 0
		err := RetryIdempotent(ctx, func(context.Context) error { calls++; return refused })
		if !errors.Is(err, refused) || calls != 1 {
			t.Fatalf("err %v after %d calls, want the refusal after 1", err, calls)
		}
	})
	t.Run("caller gives up", func(t *testing.T) {
		cctx, ccancel := context.WithCancel(ctx)
		calls := 0
		err := RetryIdempotent(cctx, func(context.Context) error {
			calls++
			if calls == 3 {
				ccancel()
			}
			return nats.ErrTimeout
		})
		if !errors.Is(err, nats.ErrTimeout) || calls != 3 {
			t.Fatalf("err %v after %d calls, want the last timeout after 3", err, calls)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		cctx, ccancel := context.WithCancel(ctx)
		ccancel()
		calls := 0
		err := RetryIdempotent(cctx, func(actx context.Context) error { calls++; return actx.Err() })
		if !errors.Is(err, context.Canceled) || calls != 1 {
			t.Fatalf("err %v after %d calls, want canceled after 1", err, calls)
		}
	})
}

// TestTranslateAPIError: JetStream's error codes map onto the sentinels,
// and the API error stays reachable with errors.As.
func TestTranslateAPIError(t *testing.T) {
	for _, tc := range []struct {
		e    *APIError
		want error // nil: no sentinel
	}{
		{&APIError{Code: 404, ErrCode: CodeNoMessageFound, Description: "no message found"}, ErrNotFound},
		{&APIError{Code: 404, ErrCode: CodeStreamNotFound, Description: "stream not found"}, ErrStreamNotFound},
		{&APIError{Code: 503, ErrCode: CodeClusterNotAvail, Description: "JetStream system temporarily unavailable"}, ErrUnavailable},
		{&APIError{Code: 503, ErrCode: 10077, Description: "no leader"}, ErrUnavailable},
		{&APIError{Code: 400, ErrCode: 10003, Description: "bad request"}, nil},
	} {
		err := TranslateAPIError("cnats: leader get S x", tc.e)
		var ae *APIError
		if !errors.As(err, &ae) || ae != tc.e {
			t.Errorf("%v: errors.As does not find the API error in %v", tc.e, err)
		}
		if !strings.HasPrefix(err.Error(), "cnats: leader get S x: ") {
			t.Errorf("%v: %q does not start with the operation", tc.e, err)
		}
		for _, s := range []error{ErrNotFound, ErrStreamNotFound, ErrUnavailable} {
			if got := errors.Is(err, s); got != (s == tc.want) {
				t.Errorf("%v: errors.Is(%v) = %v", tc.e, s, got)
			}
		}
	}
	e := &APIError{Code: 404, ErrCode: 10037, Description: "no message found"}
	if got, want := e.Error(), "jetstream api error 404 (10037): no message found"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestValidToken(t *testing.T) {
	for _, tc := range []struct {
		s           string
		empty, want bool
	}{
		{"KV_ROUTING", false, true},
		{"ROUTING_MIRROR_eu-west", false, true},
		{"ünïcode", false, true},
		{"", false, false},
		{"", true, true},
		{"a.b", false, false},
		{"a*", false, false},
		{"a>", false, false},
		{"a b", false, false},
		{"a\tb", false, false},
		{"a/b", false, false},
		{`a\b`, false, false},
		{"a\x7f", false, false},
		{"a\x00", false, false},
	} {
		if got := ValidToken(tc.s, tc.empty); got != tc.want {
			t.Errorf("ValidToken(%q, %v) = %v, want %v", tc.s, tc.empty, got, tc.want)
		}
	}
}

func TestValidateRegion(t *testing.T) {
	for _, ok := range []string{"eu-west", "us_east", "R1", strings.Repeat("a", 64)} {
		if err := ValidateRegion(ok); err != nil {
			t.Errorf("ValidateRegion(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("a", 65), "eu.west", "eu west", "eu/west", "eu*", "région"} {
		if err := ValidateRegion(bad); !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidateRegion(%q) = %v, want ErrInvalidName", bad, err)
		}
	}
}

func TestNames(t *testing.T) {
	for got, want := range map[string]string{
		RoutingStream:            "KV_ROUTING",
		RoutingSubject("conv.a"): "$KV.ROUTING.conv.a",
		MirrorBucket("eu-west"):  "ROUTING_MIRROR_eu-west",
		MirrorStream("eu-west"):  "KV_ROUTING_MIRROR_eu-west",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
	if InRegion("") != nil {
		t.Error("InRegion(\"\") is not nil")
	}
	if p := InRegion("eu-west"); p == nil || p.Cluster != "eu-west" || len(p.Tags) != 0 {
		t.Errorf("InRegion(eu-west) = %+v", p)
	}
	for nodes, want := range map[int]int{-3: 1, 0: 1, 1: 1, 2: 2, 3: 3, 4: 3, 9: 3} {
		if got := DefaultReplicas(nodes); got != want {
			t.Errorf("DefaultReplicas(%d) = %d, want %d", nodes, got, want)
		}
	}
}

// TestCheckGetArgs: the get functions refuse a bad stream or a wildcard or
// malformed subject before sending anything.
func TestCheckGetArgs(t *testing.T) {
	if err := checkGetArgs("KV_ROUTING", "$KV.ROUTING.conv.a"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range [][2]string{
		{"", "a"}, {"KV.ROUTING", "a"}, {"KV ROUTING", "a"}, {"KV_*", "a"},
		{"S", ""}, {"S", "a.*"}, {"S", "a.>"}, {"S", "a b"}, {"S", "a\nb"},
		{"S", ".a"}, {"S", "a."}, {"S", "a..b"},
	} {
		if err := checkGetArgs(tc[0], tc[1]); !errors.Is(err, ErrInvalidName) {
			t.Errorf("checkGetArgs(%q, %q) = %v, want ErrInvalidName", tc[0], tc[1], err)
		}
	}
	for _, op := range []string{"DEL", "PURGE"} {
		if !isDeleteOp(op) {
			t.Errorf("%s is not a delete", op)
		}
	}
	for _, op := range []string{"", "PUT", "del"} {
		if isDeleteOp(op) {
			t.Errorf("%q is a delete", op)
		}
	}
}

// TestRoutingConfigDefaults: zero values are the documented defaults; out
// of range values are ErrInvalidOptions.
func TestRoutingConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		in       RoutingConfig
		replicas int
		history  uint8
	}{
		{RoutingConfig{}, 1, DefaultRoutingHistory},
		{RoutingConfig{Nodes: 3}, 3, DefaultRoutingHistory},
		{RoutingConfig{Nodes: 5}, 3, DefaultRoutingHistory},
		{RoutingConfig{Nodes: 5, Replicas: 5, History: 64}, 5, 64},
		{RoutingConfig{Replicas: 2, History: 1, Storage: jetstream.MemoryStorage}, 2, 1},
	} {
		got, err := tc.in.withDefaults()
		if err != nil || got.Replicas != tc.replicas || got.History != tc.history || got.Storage != tc.in.Storage {
			t.Errorf("%+v: %+v %v, want replicas %d history %d", tc.in, got, err, tc.replicas, tc.history)
		}
	}
	for _, bad := range []RoutingConfig{{Replicas: -1}, {Replicas: MaxReplicas + 1}, {History: 65}, {Storage: 7}} {
		if _, err := bad.withDefaults(); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v, want ErrInvalidOptions", bad, err)
		}
	}
}

func TestNewEpoch(t *testing.T) {
	a, b := newEpoch(), newEpoch()
	for _, e := range []string{a, b} {
		if raw, err := hex.DecodeString(e); err != nil || len(raw) != 16 || len(e) != 32 {
			t.Errorf("epoch %q is not 32 hex digits", e)
		}
	}
	if a == b {
		t.Errorf("two epochs are equal: %s", a)
	}
}

// TestMirrorHealthFresh: an error, silence beyond the bound (or never
// heard from) or lag beyond the bound make a mirror unfit.
func TestMirrorHealthFresh(t *testing.T) {
	const lag, silence = 10, 3 * time.Second
	for _, tc := range []struct {
		h    MirrorHealth
		want bool
	}{
		{MirrorHealth{}, true},
		{MirrorHealth{Lag: lag, Active: silence}, true},
		{MirrorHealth{Lag: lag + 1, Active: time.Second}, false},
		{MirrorHealth{Active: silence + time.Nanosecond}, false},
		{MirrorHealth{Active: -1}, false},
		{MirrorHealth{Err: "stream not found"}, false},
	} {
		if got := tc.h.Fresh(lag, silence); got != tc.want {
			t.Errorf("%+v.Fresh(%d, %s) = %v, want %v", tc.h, lag, silence, got, tc.want)
		}
	}
}

// TestTimeouts: WithRequestTimeout bounds one request below a longer
// deadline and keeps a shorter one; WithDefaultTimeout only adds a
// deadline where there is none. No clock is read against a bound.
func TestTimeouts(t *testing.T) {
	long, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	short, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	longDL, _ := long.Deadline()
	shortDL, _ := short.Deadline()

	c, cc := WithRequestTimeout(long, time.Minute)
	if dl, ok := c.Deadline(); !ok || !dl.Before(longDL) {
		t.Errorf("request under an hour's deadline: %v %v, want before %v", dl, ok, longDL)
	}
	cc()
	c, cc = WithRequestTimeout(short, time.Minute)
	if dl, ok := c.Deadline(); !ok || !dl.Equal(shortDL) {
		t.Errorf("request under a second's deadline: %v, want %v", dl, shortDL)
	}
	cc()
	if c.Err() == nil {
		t.Error("the returned cancel does not cancel")
	}
	c, cc = WithRequestTimeout(context.Background(), time.Minute)
	if _, ok := c.Deadline(); !ok {
		t.Error("request without a deadline stays unbounded")
	}
	cc()

	c, cc = WithDefaultTimeout(long, time.Second)
	if dl, _ := c.Deadline(); !dl.Equal(longDL) {
		t.Errorf("default timeout replaced the caller's deadline: %v, want %v", dl, longDL)
	}
	cc()
	c, cc = WithDefaultTimeout(context.Background(), time.Minute)
	if _, ok := c.Deadline(); !ok {
		t.Error("no default deadline")
	}
	cc()
}

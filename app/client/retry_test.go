package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/app/client"
)

func locked(retryAfter time.Duration) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) { writeLocked(w, "write", retryAfter) }
}

func status(code int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, code, "unavailable", http.StatusText(code))
	}
}

// hangUp closes the connection without an answer: a transport error.
func hangUp(w http.ResponseWriter, _ *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

func wantStats(t *testing.T, got client.Stats, want client.Stats) {
	t.Helper()
	// The delay fields are checked by the tests that care.
	got.FenceDelaySum, got.FenceDelayMax = 0, 0
	want.FenceDelaySum, want.FenceDelayMax = 0, 0
	if got != want {
		t.Errorf("Stats = %+v, want %+v", got, want)
	}
}

// paper 001 (A6), §4.4: a write refused by the write lock is retried and
// completes once the lock is gone; the user sees a delay, not an error.
func TestLockedTwiceThenCreated(t *testing.T) {
	f, srv := newFakeAPI(t)
	c, clk := MustClient(t, srv)
	MustConversation(t, c, "c1")
	f.setFault(failFirst(2, http.MethodPost, "/messages", locked(time.Minute)))

	m, err := c.PostMessage(t.Context(), "c1", client.NewMessage{ID: "m1", Text: "hello"})
	if err != nil {
		t.Fatalf("PostMessage: %v", err)
	}
	if m.ID != "m1" || m.Text != "hello" || m.Author != "alice" || m.CreatedAt.IsZero() {
		t.Errorf("message = %+v", m)
	}
	if got, want := clk.Sleeps(), []time.Duration{20 * time.Millisecond, 40 * time.Millisecond}; !slices.Equal(got, want) {
		t.Errorf("sleeps = %v, want %v", got, want)
	}
	st := c.Stats()
	wantStats(t, st, client.Stats{Attempts: 4, Rejected423: 2, Fenced: 1, Recovered: 1})
	if st.FenceDelaySum != 60*time.Millisecond || st.FenceDelayMax != 60*time.Millisecond {
		t.Errorf("fence delay sum %s max %s, want 60ms both", st.FenceDelaySum, st.FenceDelayMax)
	}
}

// paper 001 §6.2: a write still refused at the threshold is an unrecovered
// lock rejection, surfaced with the last 423.
func TestLockedForeverIsUnrecovered(t *testing.T) {
	f, srv := newFakeAPI(t)
	threshold := 500 * time.Millisecond
	c, clk := MustClient(t, srv, client.WithRetryPolicy(client.RetryPolicy{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Threshold: threshold}))
	MustConversation(t, c, "c1")
	f.setFault(failFirst(1<<30, http.MethodPost, "/messages", locked(time.Minute)))

	_, err := c.PostMessage(t.Context(), "c1", client.NewMessage{ID: "m1", Text: "hello"})
	if !errors.Is(err, client.ErrUnrecovered) {
		t.Fatalf("err = %v, want ErrUnrecovered", err)
	}
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusLocked || ae.Code != client.CodeLocked || ae.Lock != "write" || ae.RetryAfter != time.Minute {
		t.Fatalf("last error = %#v, want the 423", ae)
	}
	var total time.Duration
	for _, d := range clk.Sleeps() {
		total += d
		if d > 100*time.Millisecond {
			t.Errorf("a wait of %s exceeds Max", d)
		}
	}
	if total != threshold {
		t.Errorf("waited %s in all, want exactly the threshold %s (the last wait is cut)", total, threshold)
	}
	st := c.Stats()
	// 20+40+80+100+100+100+60 = 500: 7 waits, 8 attempts, plus the create.
	wantStats(t, st, client.Stats{Attempts: 9, Rejected423: 8, Fenced: 1, Unrecovered: 1})
	if st.FenceDelayMax != threshold {
		t.Errorf("FenceDelayMax = %s, want %s", st.FenceDelayMax, threshold)
	}
}

// A server hint shorter than the backoff caps the wait: the lock is about to
// expire, there is no point waiting longer.
func TestRetryAfterHintCapsWait(t *testing.T) {
	t.Run("body", func(t *testing.T) {
		f, srv := newFakeAPI(t)
		c, clk := MustClient(t, srv, client.WithRetryPolicy(client.RetryPolicy{Initial: 200 * time.Millisecond, Max: time.Second}))
		MustConversation(t, c, "c1")
		f.setFault(failFirst(3, http.MethodPost, "/messages", locked(5*time.Millisecond)))
		if _, err := c.PostMessage(t.Context(), "c1", client.NewMessage{ID: "m1", Text: "x"}); err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{5 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond}
		if got := clk.Sleeps(); !slices.Equal(got, want) {
			t.Errorf("sleeps = %v, want %v", got, want)
		}
	})
	t.Run("header only", func(t *testing.T) {
		f, srv := newFakeAPI(t)
		c, clk := MustClient(t, srv, client.WithRetryPolicy(client.RetryPolicy{Initial: 3 * time.Second, Max: 5 * time.Second}))
		MustConversation(t, c, "c1")
		f.setFault(failFirst(1, http.MethodPost, "/messages", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusLocked, "locked", "locked")
		}))
		if _, err := c.PostMessage(t.Context(), "c1", client.NewMessage{ID: "m1", Text: "x"}); err != nil {
			t.Fatal(err)
		}
		if got, want := clk.Sleeps(), []time.Duration{time.Second}; !slices.Equal(got, want) {
			t.Errorf("sleeps = %v, want %v", got, want)
		}
	})
	t.Run("longer hint does not stretch the backoff", func(t *testing.T) {
		f, srv := newFakeAPI(t)
		c, clk := MustClient(t, srv)
		MustConversation(t, c, "c1")
		f.setFault(failFirst(1, http.MethodPost, "/messages", locked(time.Minute)))
		if _, err := c.PostMessage(t.Context(), "c1", client.NewMessage{ID: "m1", Text: "x"}); err != nil {
			t.Fatal(err)
		}
		if got, want := clk.Sleeps(), []time.Duration{20 * time.Millisecond}; !slices.Equal(got, want) {
			t.Errorf("sleeps = %v, want %v", got, want)
		}
	})
}

// Only 423 (and, for idempotent requests, transient failures) is retried;
// every other status surfaces at once.
func TestNonRetriableStatusSurfacesAtOnce(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   client.Code
	}{
		{http.StatusBadRequest, client.CodeInvalid},
		{http.StatusForbidden, client.CodeForbidden},
		{http.StatusNotFound, client.CodeNotFound},
		{http.StatusConflict, client.CodeConflict},
		{http.StatusInternalServerError, client.CodeInternal},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			f, srv := newFakeAPI(t)
			c, clk := MustClient(t, srv)
			MustConversation(t, c, "c1")
			f.setFault(failFirst(1<<30, http.MethodPost, "/messages", func(w http.ResponseWriter, _ *http.Request) {
				writeError(w, tc.status, string(tc.code), "nope")
			}))
			_, err := c.PostMessage(t.Context(), "c1", client.NewMessage{ID: "m1", Text: "x"})
			var ae *client.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *APIError", err)
			}
			if ae.Status != tc.status || ae.Code != tc.code || ae.Message != "nope" || ae.Method != http.MethodPost || ae.Path != "/v1/conversations/c1/messages" {
				t.Errorf("APIError = %#v", ae)
			}
			if errors.Is(err, client.ErrUnrecovered) || !client.HasCode(err, tc.code) {
				t.Errorf("err = %v: wrong classification", err)
			}
			if n := len(clk.Sleeps()); n != 0 {
				t.Errorf("%d retries, want none", n)
			}
			wantStats(t, c.Stats(), client.Stats{Attempts: 2})
		})
	}
}

// The real conflict: reusing a message id for other content is a 409 that is
// not retried.
func TestPostSameIDOtherContentConflicts(t *testing.T) {
	_, srv := newFakeAPI(t)
	c, _ := MustClient(t, srv)
	MustConversation(t, c, "c1")
	if _, err := c.PostMessage(t.Context(), "c1", client.NewMessage{ID: "m1", Text: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PostMessage(t.Context(), "c1", client.NewMessage{ID: "m1", Text: "a"}); err != nil {
		t.Fatalf("re-post of the same content: %v, want success (200)", err)
	}
	_, err := c.PostMessage(t.Context(), "c1", client.NewMessage{ID: "m1", Text: "b"})
	if !client.HasCode(err, client.CodeConflict) {
		t.Fatalf("err = %v, want conflict", err)
	}
}

// Transient failures are retried only where a repeat cannot duplicate.
func TestTransientRetriedOnlyWhenIdempotent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(http.ResponseWriter, *http.Request)
	}{
		{"502", status(http.StatusBadGateway)},
		{"503", status(http.StatusServiceUnavailable)},
		{"504", status(http.StatusGatewayTimeout)},
		{"hang up", hangUp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, srv := newFakeAPI(t)
			c, _ := MustClient(t, srv)
			MustConversation(t, c, "c1")

			f.setFault(failFirst(2, http.MethodPut, "/read", tc.answer))
			if err := c.MarkRead(t.Context(), "c1", "m1"); err != nil {
				t.Fatalf("idempotent PUT: %v", err)
			}
			wantStats(t, c.Stats(), client.Stats{Attempts: 4, Transient: 2})

			f.setFault(failFirst(1, http.MethodPost, "/conversations", tc.answer))
			_, err := c.CreateConversation(t.Context(), client.NewConversation{ID: "c2", Title: "t"})
			if err == nil {
				t.Fatal("non-idempotent POST succeeded after a transient failure; want the failure")
			}
			if tc.name != "hang up" && !client.HasCode(err, client.CodeUnavailable) {
				t.Errorf("err = %v, want the 50x", err)
			}
			wantStats(t, c.Stats(), client.Stats{Attempts: 5, Transient: 2})
		})
	}
}

// A post whose response was lost is retried with the same id; the server
// answers 200 with the stored message, which is success and stored once.
func TestRetriedPostAnswered200IsSuccess(t *testing.T) {
	f, srv := newFakeAPI(t)
	c, _ := MustClient(t, srv)
	MustConversation(t, c, "c1")
	var calls atomic.Int64
	f.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/conversations/c1/messages" {
			return false
		}
		switch calls.Add(1) {
		case 1:
			writeLocked(w, "write", time.Minute)
			return true
		case 2:
			// Commit, then lose the answer behind a gateway timeout.
			r.Header.Set("X-Test-User", "alice")
			r.SetPathValue("id", "c1")
			if _, m := f.storeMessage(w, r, client.NewMessage{ID: "m1", Text: "hi"}); m == nil {
				t.Error("store failed")
			}
			writeError(w, http.StatusGatewayTimeout, "unavailable", "upstream timed out")
			return true
		}
		return false
	})
	m, err := c.PostMessage(t.Context(), "c1", client.NewMessage{ID: "m1", Text: "hi"})
	if err != nil {
		t.Fatalf("PostMessage: %v", err)
	}
	if m.ID != "m1" || m.Text != "hi" {
		t.Errorf("message = %+v", m)
	}
	wantStats(t, c.Stats(), client.Stats{Attempts: 4, Rejected423: 1, Transient: 1, Fenced: 1, Recovered: 1})
	page, err := c.ListMessages(t.Context(), "c1", client.ListOptions{})
	if err != nil || len(page.Messages) != 1 {
		t.Fatalf("list = %+v, %v; want exactly one message", page, err)
	}
}

// ctx ending stops the retries; the error carries both the context's error
// and the last 423.
func TestContextCancelStopsRetries(t *testing.T) {
	f, srv := newFakeAPI(t)
	c, clk := MustClient(t, srv)
	MustConversation(t, c, "c1")
	f.setFault(failFirst(1<<30, http.MethodPost, "/messages", locked(time.Minute)))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	clk.onSleep = func(n int) {
		if n == 3 {
			cancel()
		}
	}
	_, err := c.PostMessage(ctx, "c1", client.NewMessage{ID: "m1", Text: "x"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	var ae *client.APIError
	if !errors.As(err, &ae) || !ae.Locked() {
		t.Errorf("err = %v, want the last 423 wrapped", err)
	}
	if errors.Is(err, client.ErrUnrecovered) {
		t.Error("cancelled write reported as unrecovered")
	}
	wantStats(t, c.Stats(), client.Stats{Attempts: 4, Rejected423: 3, Fenced: 1, Abandoned: 1})

	// A context that is already done sends nothing.
	before := f.requests.Load()
	if _, err := c.GetConversation(ctx, "c1"); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if f.requests.Load() != before {
		t.Error("a request was sent under a cancelled context")
	}
}

// Each attempt gets DefaultTimeout (here WithTimeout) when ctx has no
// deadline; a timed-out idempotent attempt is retried.
func TestPerAttemptTimeout(t *testing.T) {
	f, srv := newFakeAPI(t)
	c, _ := MustClient(t, srv, client.WithTimeout(50*time.Millisecond))
	MustConversation(t, c, "c1")
	f.setFault(failFirst(1, http.MethodGet, "/c1", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // hold the request until the client gives up
	}))
	conv, err := c.GetConversation(context.Background(), "c1")
	if err != nil || conv.ID != "c1" {
		t.Fatalf("GetConversation = %+v, %v", conv, err)
	}
	wantStats(t, c.Stats(), client.Stats{Attempts: 3, Transient: 1})

	// With a deadline of its own, the caller's bound wins.
	f.setFault(failFirst(1<<30, http.MethodGet, "/c1", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.GetConversation(ctx, "c1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
}

// A transport failure of a non-idempotent request is returned as is, not as
// an *APIError.
func TestTransportErrorNotAPIError(t *testing.T) {
	_, srv := newFakeAPI(t)
	c, _ := MustClient(t, srv)
	srv.Close()
	_, err := c.CreateConversation(t.Context(), client.NewConversation{Title: "t"})
	var ae *client.APIError
	var ne net.Error
	if err == nil || errors.As(err, &ae) || !errors.As(err, &ne) {
		t.Fatalf("err = %v, want a network error", err)
	}
}

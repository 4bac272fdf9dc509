package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cutover/cutover/app/client"
)

// Enqueued writes run on the worker pool at the same time, and Close waits
// for every accepted one.
func TestEnqueueRunsConcurrentlyAndCloseDrains(t *testing.T) {
	const workers = 4
	f, srv := newFakeAPI(t)
	c, _ := MustClient(t, srv, client.WithWorkers(workers))
	MustConversation(t, c, "c1")

	// The first `workers` posts are held at the server until all of them
	// have arrived: they can only complete if they run concurrently.
	var arrived atomic.Int64
	barrier := make(chan struct{})
	f.setFault(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodPost {
			return false
		}
		switch n := arrived.Add(1); {
		case n == workers:
			close(barrier)
		case n > workers:
			return false
		}
		select {
		case <-barrier:
		case <-time.After(10 * time.Second):
			writeError(w, http.StatusInternalServerError, "internal", "posts did not run concurrently")
			return true
		}
		return false
	})

	const total = 3 * workers
	var pending []*client.Pending
	for i := range total {
		id := fmt.Sprintf("m%02d", i)
		pending = append(pending, c.Enqueue(func(ctx context.Context) error {
			_, err := c.PostMessage(ctx, "c1", client.NewMessage{ID: id, Text: id})
			return err
		}))
	}
	if err := pending[0].Wait(t.Context()); err != nil {
		t.Fatalf("first post: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for i, p := range pending {
		select {
		case <-p.Done():
		default:
			t.Fatalf("pending %d not done after Close", i)
		}
		if err := p.Wait(t.Context()); err != nil {
			t.Errorf("pending %d: %v", i, err)
		}
	}
	page, err := c.ListMessages(t.Context(), "c1", client.ListOptions{Limit: 100})
	if err != nil || len(page.Messages) != total {
		t.Fatalf("stored %d messages, %v; want %d", len(page.Messages), err, total)
	}

	// After Close nothing is accepted; synchronous calls still work.
	p := c.Enqueue(func(context.Context) error { t.Error("ran after Close"); return nil })
	if err := p.Wait(t.Context()); !errors.Is(err, client.ErrClosed) {
		t.Errorf("Enqueue after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// Enqueued writes absorb the write lock in the background like synchronous
// ones.
func TestEnqueueRetriesInBackground(t *testing.T) {
	f, srv := newFakeAPI(t)
	c, _ := MustClient(t, srv)
	MustConversation(t, c, "c1")
	f.setFault(failFirst(3, http.MethodPost, "/messages", locked(time.Second)))
	p := c.Enqueue(func(ctx context.Context) error {
		_, err := c.PostMessage(ctx, "c1", client.NewMessage{ID: "m1", Text: "x"})
		return err
	})
	if err := p.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Recovered != 1 || st.Rejected423 != 3 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestPendingCancelAndWait(t *testing.T) {
	_, srv := newFakeAPI(t)
	c, _ := MustClient(t, srv, client.WithWorkers(1))

	// Occupy the only worker.
	release := make(chan struct{})
	started := make(chan struct{})
	busy := c.Enqueue(func(ctx context.Context) error {
		close(started)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	<-started

	// A queued operation cancelled before it starts finishes at once and
	// never runs.
	queued := c.Enqueue(func(context.Context) error { t.Error("cancelled op ran"); return nil })
	queued.Cancel()
	if err := queued.Wait(t.Context()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled queued op: %v", err)
	}

	// Wait gives up with its own context without affecting the operation.
	short, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if err := busy.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait with short ctx: %v", err)
	}

	// Cancelling a running operation cancels its context.
	busy.Cancel()
	if err := busy.Wait(t.Context()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled running op: %v", err)
	}
	close(release)

	// A panicking operation fails its Pending, not the process.
	p := c.Enqueue(func(context.Context) error { panic("boom") })
	if err := p.Wait(t.Context()); err == nil || err.Error() != "client: enqueued operation panicked: boom" {
		t.Errorf("panicking op: %v", err)
	}
	sentinel := errors.New("sentinel")
	p = c.Enqueue(func(context.Context) error { panic(sentinel) })
	if err := p.Wait(t.Context()); !errors.Is(err, sentinel) {
		t.Errorf("panicking op with an error: %v", err)
	}
	if err := c.Enqueue(nil).Wait(t.Context()); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("nil op: %v", err)
	}
	// The worker survived.
	if err := c.Enqueue(func(context.Context) error { return nil }).Wait(t.Context()); err != nil {
		t.Errorf("op after panics: %v", err)
	}
}

// Close on a client that never enqueued returns at once.
func TestCloseUnused(t *testing.T) {
	c, err := client.New("http://127.0.0.1:1", "user:a")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

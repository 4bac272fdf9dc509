package contractnats_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/contractnats"
)

// blocking answers Digests for "conv/slow" only once released; every other
// resource at once.
func blocking(service string, entered chan<- struct{}, release <-chan struct{}) fake {
	return fake{service: service, digests: func(r string) ([]contract.SliceDigest, error) {
		if r == "conv/slow" {
			entered <- struct{}{}
			<-release
		}
		return nil, nil
	}}
}

// TestServerHandlesRequestsConcurrently: a slow request (an export waiting
// for its synced page publish, an import for its commit) does not hold up
// the server's other requests: nats.go runs a subscription's handler one
// message at a time, so the server hands each request to a goroutine, at
// most MaxConcurrent at once. MaxConcurrent 1 restores one at a time.
func TestServerHandlesRequestsConcurrently(t *testing.T) {
	for _, tc := range []struct {
		name      string
		max       int
		overtakes bool
	}{{"default", 0, true}, {"one at a time", 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			entered, release := make(chan struct{}, 1), make(chan struct{})
			svc := "blocking" + map[bool]string{true: "a", false: "b"}[tc.overtakes]
			e.serve(t, "eu", blocking(svc, entered, release), contractnats.ServeOptions{MaxConcurrent: tc.max})
			c := contractnats.Dial(e.nc, e.js, "eu", svc)
			slow := make(chan error, 1)
			go func() {
				_, err := c.Digests(t.Context(), "conv/slow", contract.Authority{})
				slow <- err
			}()
			<-entered
			// Generous: the point is "before the slow one is released".
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			_, err := c.Digests(ctx, "conv/fast", contract.Authority{})
			cancel()
			if tc.overtakes && err != nil {
				t.Fatalf("a fast request behind a slow one: %v", err)
			}
			if !tc.overtakes && err == nil {
				t.Fatalf("MaxConcurrent 1 answered a second request while the first ran")
			}
			close(release)
			if err := <-slow; err != nil {
				t.Fatalf("the slow request: %v", err)
			}
		})
	}
}

func TestServeRejectsNegativeMaxConcurrent(t *testing.T) {
	e := newEnv(t)
	p := fake{service: "messages"}
	if _, err := contractnats.Serve(t.Context(), e.nc, e.js, "eu", p, contractnats.ServeOptions{MaxConcurrent: -1}); !errors.Is(err, contractnats.ErrInvalidOptions) {
		t.Fatalf("Serve with MaxConcurrent -1: %v", err)
	}
}

// TestEmptyPageIsNotPublished: an export with nothing in it answers Seq 0
// and adds nothing to PagesStream (no synced append for nothing); a later
// export of the same position that finds records publishes them under the
// same Msg-Id, unshadowed.
func TestEmptyPageIsNotPublished(t *testing.T) {
	e := newEnv(t)
	st := openStore(t)
	e.serve(t, "eu", services.NewStoreParticipant("messages", st, services.StoreParticipantOptions{}), contractnats.ServeOptions{})
	c := contractnats.Dial(e.nc, e.js, "eu", "messages")
	stream, err := e.js.Stream(t.Context(), contractnats.PagesStream)
	if err != nil {
		t.Fatal(err)
	}
	msgs := func() uint64 {
		info, err := stream.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	put(t, st, res, "m0", "first")
	hist, err := c.ExportToStream(t.Context(), "mig-empty", contract.ExportRequest{Resource: res, Mode: contract.Historical, Limit: 10, Authority: hardDeleted})
	if err != nil || hist.Seq == 0 || hist.Count != 1 {
		t.Fatalf("historical export: %+v, %v", hist, err)
	}
	before := msgs()
	req := contract.ExportRequest{Resource: res, Mode: contract.Delta, SyncToken: hist.SyncToken, Cursor: hist.SyncToken, Limit: 10, Authority: writeLocked}
	ref, err := c.ExportToStream(t.Context(), "mig-empty", req)
	if err != nil || ref.Seq != 0 || ref.Count != 0 || ref.More {
		t.Fatalf("empty export: %+v, %v", ref, err)
	}
	if n := msgs(); n != before {
		t.Fatalf("PAGES went from %d to %d messages for an empty page", before, n)
	}
	// The write fence lifted (a later revision) and set again: a record
	// at the same position.
	if _, err := c.Authorize(t.Context(), res, contract.Authority{Rev: writeLocked.Rev + 1, Role: contract.RolePrimary}); err != nil {
		t.Fatal(err)
	}
	put(t, st, res, "m1", "hello")
	req.Authority.Rev += 2
	ref, err = c.ExportToStream(t.Context(), "mig-empty", req)
	if err != nil || ref.Seq == 0 || ref.Count != 1 || ref.Duplicate {
		t.Fatalf("the same position with a record: %+v, %v", ref, err)
	}
}

// goroutineID is the calling goroutine's id, from its stack header.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	f := strings.Fields(string(buf))
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// TestServerReusesHandlerGoroutines: requests one after another are served
// by the same handler goroutine (its grown stack kept, not grown again per
// request), and Stop ends every handler goroutine, idle ones included.
func TestServerReusesHandlerGoroutines(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	seen := map[string]int{}
	p := fake{service: "reuse", digests: func(string) ([]contract.SliceDigest, error) {
		mu.Lock()
		seen[goroutineID()]++
		mu.Unlock()
		return nil, nil
	}}
	srv := e.serve(t, "eu", p, contractnats.ServeOptions{})
	c := contractnats.Dial(e.nc, e.js, "eu", "reuse")
	const n = 40
	for range n {
		if _, err := c.Digests(t.Context(), "conv/a", contract.Authority{}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	distinct := len(seen)
	mu.Unlock()
	// One goroutine serves them all; a second may start when a request
	// arrives before the first goroutine is back waiting.
	if distinct > n/4 {
		t.Fatalf("%d requests one after another ran on %d goroutines: handler goroutines are not reused", n, distinct)
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		if !strings.Contains(string(buf), "contractnats.(*Server).worker") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("handler goroutines still running after Stop:\n%s", buf)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

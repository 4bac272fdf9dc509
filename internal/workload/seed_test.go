package workload

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/cutover/cutover/app/client"
)

// seedServer answers conversation creates with the given statuses in turn
// (the last one repeated) and counts them.
func seedServer(t *testing.T, statuses ...int) (*client.Client, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		st := statuses[min(i, len(statuses)-1)]
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		switch st {
		case http.StatusCreated:
			_, _ = w.Write([]byte(`{"id":"c1","title":"c1","members":[]}`))
		case http.StatusConflict:
			_, _ = w.Write([]byte(`{"error":{"code":"conflict","message":"exists"}}`))
		case http.StatusServiceUnavailable:
			_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"routing store unavailable","retry_after_ms":1}}`))
		default:
			_, _ = w.Write([]byte(`{"error":{"code":"invalid","message":"bad"}}`))
		}
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, "user:seed")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, &n
}

func TestSeederRetriesACreateAnswered503(t *testing.T) {
	c, n := seedServer(t, http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusCreated)
	if err := (Seeder{Client: c}).create(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 3 {
		t.Fatalf("%d creates sent, want 3", n.Load())
	}
}

func TestSeederTakesAConflictAfterAFailedTryAsCreated(t *testing.T) {
	c, _ := seedServer(t, http.StatusServiceUnavailable, http.StatusConflict)
	if err := (Seeder{Client: c}).create(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
}

func TestSeederRefusesAConflictAtTheFirstTry(t *testing.T) {
	c, n := seedServer(t, http.StatusConflict)
	var ae *client.APIError
	if err := (Seeder{Client: c}).create(context.Background(), "c1"); !errors.As(err, &ae) || ae.Code != client.CodeConflict {
		t.Fatalf("create = %v, want the conflict", err)
	}
	if n.Load() != 1 {
		t.Fatalf("%d creates sent, want 1", n.Load())
	}
}

func TestSeederDoesNotRetryOtherErrors(t *testing.T) {
	c, n := seedServer(t, http.StatusBadRequest)
	if err := (Seeder{Client: c}).create(context.Background(), "c1"); err == nil {
		t.Fatal("create succeeded on a 400")
	}
	if n.Load() != 1 {
		t.Fatalf("%d creates sent, want 1", n.Load())
	}
}

func TestSeederGivesUpWhenTheContextEnds(t *testing.T) {
	c, _ := seedServer(t, http.StatusServiceUnavailable)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Seeder{Client: c}).create(ctx, "c1"); err == nil {
		t.Fatal("create succeeded")
	}
}

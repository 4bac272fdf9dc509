package workload

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/cutover/cutover/services/api"
)

// servedKey carries a *served in a request's context.
type servedKey struct{}

// served is where one operation was served: the ServedByHeader of its last
// response (the SDK retries a 423; the last answer is the one that counts).
type served struct {
	mu     sync.Mutex
	region string
}

func (s *served) get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.region
}

// withServed returns a context whose requests record, through
// servedTransport, the region that served them.
func withServed(ctx context.Context) (context.Context, *served) {
	s := &served{}
	return context.WithValue(ctx, servedKey{}, s), s
}

// servedTransport records each response's api.ServedByHeader in the
// request context's *served, if any.
type servedTransport struct{ base http.RoundTripper }

func (t servedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if s, ok := req.Context().Value(servedKey{}).(*served); ok && resp != nil {
		if region := resp.Header.Get(api.ServedByHeader); region != "" {
			s.mu.Lock()
			s.region = region
			s.mu.Unlock()
		}
	}
	return resp, err
}

// Served is one acknowledged write and where it was accepted: Region
// accepted it at some instant between Start (the call) and End (the
// acknowledgement).
type Served struct {
	Region     string
	Start, End time.Time
	// What names the operation (for a checker's sample).
	What string
}

// ServedWrite records that an acknowledged write on conv, described by
// what, was accepted at region between start and end.
func (l *Ledger) ServedWrite(conv, region string, start, end time.Time, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.served == nil {
		l.served = map[string][]Served{}
	}
	l.served[conv] = append(l.served[conv], Served{Region: region, Start: start, End: end, What: what})
}

// ServedWrites returns the acknowledged writes on conv whose serving region
// is known, in the order they were acknowledged.
func (l *Ledger) ServedWrites(conv string) []Served {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Served(nil), l.served[conv]...)
}

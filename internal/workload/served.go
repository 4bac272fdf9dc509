package workload

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cutover/cutover/app/api"
)

// servedKey carries a *served in a request's context.
type servedKey struct{}

// served is where one operation was served: the ServedByHeader of its last
// response (the SDK retries a 423; the last answer is the one that counts).
type served struct {
	mu     sync.Mutex
	region string
	// refused are the 423 answers to a new message, each with when its
	// request was sent and answered.
	refused []Interval
}

// Interval is a span of time: a request's send and its answer; Why is,
// for a refusal, the answer's body (its error code and message).
type Interval struct {
	Start, End time.Time
	Why        string
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
	start := time.Now()
	resp, err := t.base.RoundTrip(req)
	if s, ok := req.Context().Value(servedKey{}).(*served); ok && resp != nil {
		s.mu.Lock()
		if region := resp.Header.Get(api.ServedByHeader); region != "" {
			s.region = region
		}
		if resp.StatusCode == http.StatusLocked && req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/messages") {
			// The body says why (for a checker's sample); it is read and
			// put back for the SDK.
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			_ = resp.Body.Close()
			resp.Body = io.NopCloser(bytes.NewReader(b))
			s.refused = append(s.refused, Interval{Start: start, End: time.Now(), Why: string(b)})
		}
		s.mu.Unlock()
	}
	return resp, err
}

func (s *served) refusals() []Interval {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Served is one acknowledged write and where it was accepted: Region
// accepted it at some instant between Start (the call) and End (the
// acknowledgement).
type Served struct {
	Region     string
	Start, End time.Time
	// API is the index of the API (TrafficConfig.APIs) it went through.
	API int
	// What names the operation (for a checker's sample).
	What string
}

// ServedWrite records that an acknowledged write on conv, described by
// what, was accepted at region between start and end.
func (l *Ledger) ServedWrite(conv, region string, api int, start, end time.Time, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.served == nil {
		l.served = map[string][]Served{}
	}
	l.served[conv] = append(l.served[conv], Served{Region: region, API: api, Start: start, End: end, What: what})
}

// Refused records that a new message on conv, sent through API api, was
// refused with 423 (a write lock, or a store's write fence) by the request
// of r.
func (l *Ledger) Refused(conv string, api int, r Interval) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.refused == nil {
		l.refused = map[string][]Refusal{}
	}
	l.refused[conv] = append(l.refused[conv], Refusal{Interval: r, API: api})
}

// Refusal is one new message refused with 423.
type Refusal struct {
	Interval
	API int
}

// Refusals returns the 423 refusals of new messages on conv.
func (l *Ledger) Refusals(conv string) []Refusal {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Refusal(nil), l.refused[conv]...)
}

// ServedWrites returns the acknowledged writes on conv whose serving region
// is known, in the order they were acknowledged.
func (l *Ledger) ServedWrites(conv string) []Served {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Served(nil), l.served[conv]...)
}

package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to cutover's user-facing HTTP API as one user. It is safe for
// concurrent use by any number of goroutines. Close it when done if Enqueue
// was used.
type Client struct {
	base     string // scheme://host[/prefix], without a trailing slash
	auth     string // the Authorization header value
	cfg      config
	counters counters
	queue    queue
}

// New returns a client for the API at baseURL (an absolute http or https
// URL, optionally with a path prefix) that authenticates every request with
// "Authorization: Bearer <token>" (dev tokens look like "user:alice"). It
// returns ErrInvalid for a bad URL, an empty token or a bad option. New
// sends no request.
func New(baseURL string, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, invalidf("base URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, invalidf("base URL %q: want an absolute http(s) URL", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, invalidf("base URL %q: no query or fragment allowed", baseURL)
	}
	if strings.TrimSpace(token) == "" {
		return nil, invalidf("empty token")
	}
	if strings.ContainsAny(token, "\r\n") {
		return nil, invalidf("token contains a line break")
	}
	c := &Client{
		base: strings.TrimRight(u.String(), "/"),
		auth: "Bearer " + token,
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c.cfg); err != nil {
			return nil, err
		}
	}
	c.cfg.ensureDefaults()
	c.queue.init(c.cfg.workers)
	return c, nil
}

// request is one API call, replayable across retries.
type request struct {
	method      string
	path        string // escaped, starting with "/"
	query       url.Values
	body        []byte
	contentType string
	// idempotent allows retries on transport errors and 502/503/504 (PUT,
	// DELETE and posting a message); 423 is retried for every request.
	idempotent bool
}

// response is a fully read response.
type response struct {
	status int
	header http.Header
	body   []byte
}

// path joins escaped segments: path("v1", "conversations", id) is
// "/v1/conversations/<id escaped>".
func path(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// jsonRequest builds a request with a JSON body.
func jsonRequest(method, p string, body any, idempotent bool) (*request, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("client: encoding %s %s: %w", method, p, err)
	}
	return &request{method: method, path: p, body: b, contentType: "application/json", idempotent: idempotent}, nil
}

// attempt sends r once. A non-nil error is a transport failure, except for
// one matching ErrBadResponse (an oversize body), which is final.
func (c *Client) attempt(ctx context.Context, r *request) (*response, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.timeout)
		defer cancel()
	}
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, invalidf("%s %s: %w", r.method, r.path, err)
	}
	for k, v := range c.cfg.header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", c.auth)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.cfg.userAgent)
	if r.body != nil {
		req.Header.Set("Content-Type", r.contentType)
	}
	c.counters.attempts.Add(1)
	resp, err := c.cfg.httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	if len(b) > MaxResponseBytes {
		return nil, badResponsef("%s %s: response body over %d bytes", r.method, r.path, MaxResponseBytes)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// errorBody is the API's error envelope.
type errorBody struct {
	Error *struct {
		Code         Code   `json:"code"`
		Message      string `json:"message"`
		Lock         string `json:"lock"`
		RetryAfterMS int64  `json:"retry_after_ms"`
	} `json:"error"`
}

// apiError decodes a non-2xx response.
func apiError(r *request, resp *response) *APIError {
	ae := &APIError{Status: resp.status, Method: r.method, Path: r.path}
	var eb errorBody
	if err := json.Unmarshal(resp.body, &eb); err == nil && eb.Error != nil {
		ae.Code = eb.Error.Code
		ae.Message = eb.Error.Message
		ae.Lock = eb.Error.Lock
		if eb.Error.RetryAfterMS > 0 {
			ae.RetryAfter = time.Duration(eb.Error.RetryAfterMS) * time.Millisecond
		}
	} else {
		ae.Message = snippet(resp.body)
	}
	if ae.RetryAfter == 0 {
		ae.RetryAfter = parseRetryAfter(resp.header.Get("Retry-After"))
	}
	return ae
}

// parseRetryAfter reads a Retry-After header: delay-seconds (what the API
// sends) or an HTTP date. Anything else is 0.
func parseRetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 || s > int64(24*time.Hour/time.Second) {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// snippet is a printable prefix of a body for an error message.
func snippet(b []byte) string {
	const n = 200
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' {
			return ' '
		}
		return r
	}, s)
}

// decode unmarshals a 2xx JSON body into v, reporting garbage as
// ErrBadResponse.
func decode(r *request, resp *response, v any) error {
	if len(bytes.TrimSpace(resp.body)) == 0 {
		return badResponsef("%s %s: empty body (status %d)", r.method, r.path, resp.status)
	}
	if err := json.Unmarshal(resp.body, v); err != nil {
		return badResponsef("%s %s: decoding the body (status %d, %q): %w", r.method, r.path, resp.status, snippet(resp.body), err)
	}
	return nil
}

// call runs r with retries and decodes the JSON answer into v (nil: ignore
// the body).
func (c *Client) call(ctx context.Context, r *request, v any) (*response, error) {
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	if v != nil {
		if err := decode(r, resp, v); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// isTransientStatus reports the statuses an idempotent request retries.
func isTransientStatus(s int) bool {
	return s == http.StatusBadGateway || s == http.StatusServiceUnavailable || s == http.StatusGatewayTimeout
}

// Package client is the Go client SDK for cutover's user-facing HTTP API
// (conversations, members, messages, reactions, read state, media and the
// routing document).
//
// # Retriable lock rejections
//
// While a resource is in its write-lock window (paper 001 §4.1.3), or a
// request reaches the locked old location after cutover (§4.1.4), the server
// refuses writes with HTTP 423. The client absorbs these rejections as
// assumption (A6) and §4.4 require: the rejected write is retried in the
// background with exponential backoff and full jitter, never waiting longer
// than the server's retry_after_ms hint, until RetryPolicy.Threshold has
// passed since the first rejection. Only then is the failure surfaced, as an
// error matching ErrUnrecovered that carries the last *APIError.
//
// Idempotent operations (every PUT and DELETE, and posting a message, which
// the client-chosen message id makes idempotent) are also retried on
// transport errors and on HTTP 502, 503 and 504. Every other status surfaces
// at once as an *APIError.
//
// # Counting what users felt
//
// Stats reports the counters of paper 001 §6.2: requests rejected with 423,
// writes that recovered after a rejection and writes whose rejections went
// unrecovered (the service-side measure of user-visible errors), with the
// latency the retries added.
//
// # Synchronous calls and the queue
//
// Every API method blocks until the operation succeeds or fails, retrying
// inside and honouring ctx. A UI-style caller that must not block can hand
// operations to Enqueue, which runs them on a bounded pool of workers and
// returns a *Pending to wait on; Close drains the queue.
//
// A *Client is safe for concurrent use by any number of goroutines.
package client

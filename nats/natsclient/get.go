package natsclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// JetStream API subjects used by the get functions.
const (
	apiDirectGet = "$JS.API.DIRECT.GET."
	apiMsgGet    = "$JS.API.STREAM.MSG.GET."
)

// Headers JetStream and KV put on stored and directly fetched messages.
const (
	hdrStatus      = "Status"
	hdrDescription = "Description"
	hdrSequence    = "Nats-Sequence"
	hdrKVOperation = "KV-Operation"
)

// checkGetArgs validates a stream name and a (non-wildcard) subject.
func checkGetArgs(stream, subject string) error {
	if !ValidToken(stream, false) {
		return fmt.Errorf("%w: stream %q", ErrInvalidName, stream)
	}
	if subject == "" || strings.ContainsAny(subject, " \t\r\n*>") ||
		strings.HasPrefix(subject, ".") || strings.HasSuffix(subject, ".") || strings.Contains(subject, "..") {
		return fmt.Errorf("%w: subject %q", ErrInvalidName, subject)
	}
	return nil
}

// isDeleteOp reports whether a KV-Operation header value marks a delete.
func isDeleteOp(op string) bool { return op == "DEL" || op == "PURGE" }

// DirectGetLast fetches the last message on subject from stream with a direct
// get ($JS.API.DIRECT.GET.<stream>.<subject>). Any replica of stream may
// answer — the leader, a follower, or (for KV_ROUTING) a mirror of it, see
// ProvisionMirror — so the answer can be stale: fine for unlocked lookups and
// for reading a region's mirror by its own stream name, never for lock
// enforcement (use LeaderGetLast).
// It returns the data and sequence; ErrNotFound when the subject has no
// message; ErrDeleted (with the marker's sequence) when the latest message
// is a KV delete or purge; ErrUnavailable when nobody answers (the stream
// does not exist, or does not allow direct gets); ErrInvalidName for a bad
// stream or subject. It applies DefaultTimeout when ctx has no deadline.
// Safe for concurrent use.
func DirectGetLast(ctx context.Context, nc *nats.Conn, stream, subject string) ([]byte, uint64, error) {
	if err := checkGetArgs(stream, subject); err != nil {
		return nil, 0, err
	}
	ctx, cancel := WithRequestTimeout(ctx, DefaultTimeout)
	defer cancel()
	op := "cnats: direct get " + stream + " " + subject

	msg, err := nc.RequestWithContext(ctx, apiDirectGet+stream+"."+subject, nil)
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) {
		return nil, 0, fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", op, err)
	}
	switch status := msg.Header.Get(hdrStatus); status {
	case "":
	case "404":
		return nil, 0, fmt.Errorf("%s: %w", op, ErrNotFound)
	default:
		return nil, 0, fmt.Errorf("%s: status %s %s", op, status, msg.Header.Get(hdrDescription))
	}
	seq, err := strconv.ParseUint(msg.Header.Get(hdrSequence), 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: bad %s header: %w", op, hdrSequence, err)
	}
	if isDeleteOp(msg.Header.Get(hdrKVOperation)) {
		return nil, seq, fmt.Errorf("%s: %w", op, ErrDeleted)
	}
	return msg.Data, seq, nil
}

// msgGetResponse is the JSON answer to $JS.API.STREAM.MSG.GET.
type msgGetResponse struct {
	Error   *APIError `json:"error,omitempty"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Time     time.Time `json:"time"`
		Header   []byte    `json:"hdrs,omitempty"` // base64 in JSON
		Data     []byte    `json:"data,omitempty"` // base64 in JSON
	} `json:"message,omitempty"`
}

// LeaderGetLast fetches the last message on subject from stream with a
// NON-direct get ($JS.API.STREAM.MSG.GET.<stream>, {"last_by_subj": ...}).
// In a cluster only the stream leader answers it, which makes it the read
// for lock enforcement (DESIGN.md "Reading the routing document"). A deposed
// leader cut off from the majority may still answer until it steps down;
// the fence at the resource covers that case.
//
// It returns the data and sequence (the KV revision); ErrNotFound when the
// subject has no message; ErrDeleted (with the marker's sequence) when the
// latest message is a KV delete or purge; ErrStreamNotFound; ErrUnavailable
// when nobody answers or the stream has no leader (retry); ErrInvalidName for
// a bad stream or subject; other API errors as *APIError. It applies
// DefaultTimeout when ctx has no deadline. Safe for concurrent use.
func LeaderGetLast(ctx context.Context, nc *nats.Conn, stream, subject string) (data []byte, seq uint64, err error) {
	data, seq, _, err = leaderGet(ctx, nc, "cnats: leader get "+stream+" "+subject, stream, subject, struct {
		LastBySubject string `json:"last_by_subj"`
	}{subject})
	return data, seq, err
}

// LeaderGetNext fetches the first message on subject at or after sequence
// seq from stream, with the same NON-direct get as LeaderGetLast (only the
// stream leader answers: a mirror that still holds what the leader dropped
// never does). Walking a KV key's revisions with it (seq = the last one's
// + 1) reads what the bucket keeps without a consumer. It returns the data,
// the sequence and the time the stream stored the message; ErrNotFound when
// subject has no message at or after seq; ErrDeleted (with the marker's
// sequence and time) for a KV delete or purge; the other errors as
// LeaderGetLast. It applies DefaultTimeout when ctx has no deadline. Safe
// for concurrent use.
func LeaderGetNext(ctx context.Context, nc *nats.Conn, stream, subject string, seq uint64) (data []byte, at uint64, stored time.Time, err error) {
	return leaderGet(ctx, nc, fmt.Sprintf("cnats: leader get %s %s from %d", stream, subject, seq), stream, subject, struct {
		Seq           uint64 `json:"seq"`
		NextBySubject string `json:"next_by_subj"`
	}{seq, subject})
}

// leaderGet sends the message get request req to stream's leader and
// decodes the answer (LeaderGetLast, LeaderGetNext).
func leaderGet(ctx context.Context, nc *nats.Conn, op, stream, subject string, req any) ([]byte, uint64, time.Time, error) {
	if err := checkGetArgs(stream, subject); err != nil {
		return nil, 0, time.Time{}, err
	}
	ctx, cancel := WithRequestTimeout(ctx, DefaultTimeout)
	defer cancel()
	body, err := json.Marshal(req)
	if err != nil {
		return nil, 0, time.Time{}, fmt.Errorf("%s: %w", op, err)
	}
	msg, err := nc.RequestWithContext(ctx, apiMsgGet+stream, body)
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) {
		return nil, 0, time.Time{}, fmt.Errorf("%s: %w: %w", op, ErrUnavailable, err)
	}
	if err != nil {
		return nil, 0, time.Time{}, fmt.Errorf("%s: %w", op, err)
	}
	var resp msgGetResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, 0, time.Time{}, fmt.Errorf("%s: decode response: %w", op, err)
	}
	if resp.Error != nil {
		return nil, 0, time.Time{}, TranslateAPIError(op, resp.Error)
	}
	if resp.Message == nil {
		return nil, 0, time.Time{}, fmt.Errorf("%s: response has no message", op)
	}
	m := resp.Message
	if len(m.Header) > 0 {
		hdr, err := nats.DecodeHeadersMsg(m.Header)
		if err != nil {
			return nil, 0, time.Time{}, fmt.Errorf("%s: decode headers: %w", op, err)
		}
		if isDeleteOp(hdr.Get(hdrKVOperation)) {
			return nil, m.Sequence, m.Time, fmt.Errorf("%s: %w", op, ErrDeleted)
		}
	}
	return m.Data, m.Sequence, m.Time, nil
}

package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"iter"
	"net/http"
	"net/url"
	"strconv"
)

// NewMessageID returns a random 128-bit message id (32 hex digits) for
// NewMessage.ID. Choose it once per message the user writes and reuse it for
// every re-post of that message.
func NewMessageID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

func messagesPath(conversation string, rest ...string) string {
	return path(append([]string{"v1", "conversations", conversation, "messages"}, rest...)...)
}

// PostMessage posts msg to the conversation and returns the stored message.
// msg.ID is the idempotency key, so the post is retried on 423 and also on
// transport errors and 502/503/504: a retry that finds the same id and
// content already stored gets 200 with the stored message, which is success.
//
// Errors: ErrInvalid for an empty conversation or message id; an *APIError
// with CodeConflict when the id is already used for other content or was
// deleted; another *APIError for any non-retriable status; ErrUnrecovered
// past the retry threshold (wrapping the last *APIError); ErrBadResponse;
// ctx's error.
func (c *Client) PostMessage(ctx context.Context, conversation string, msg NewMessage) (Message, error) {
	if err := needAll("conversation id", conversation, "message id", msg.ID); err != nil {
		return Message{}, err
	}
	for _, m := range msg.Media {
		if err := need("media id", m); err != nil {
			return Message{}, err
		}
	}
	r, err := jsonRequest(http.MethodPost, messagesPath(conversation), msg, true)
	if err != nil {
		return Message{}, err
	}
	var out Message
	_, err = c.call(ctx, r, &out)
	return out, err
}

// ListMessages returns one page of the conversation's messages.
//
// Errors: ErrInvalid for an empty id or a negative limit; an *APIError;
// ErrBadResponse; ctx's error.
func (c *Client) ListMessages(ctx context.Context, conversation string, opts ListOptions) (MessagePage, error) {
	if err := need("conversation id", conversation); err != nil {
		return MessagePage{}, err
	}
	if opts.Limit < 0 {
		return MessagePage{}, invalidf("negative limit %d", opts.Limit)
	}
	q := url.Values{}
	if opts.After != "" {
		q.Set("after", opts.After)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	r := &request{method: http.MethodGet, path: messagesPath(conversation), query: q, idempotent: true}
	var out MessagePage
	_, err := c.call(ctx, r, &out)
	return out, err
}

// AllMessages iterates over the conversation's messages from opts.After,
// fetching pages of opts.Limit on demand. An error ends the iteration after
// being yielded once, with a zero Message. A server whose Next does not
// advance is reported as ErrBadResponse rather than looping.
func (c *Client) AllMessages(ctx context.Context, conversation string, opts ListOptions) iter.Seq2[Message, error] {
	return func(yield func(Message, error) bool) {
		for {
			page, err := c.ListMessages(ctx, conversation, opts)
			if err != nil {
				yield(Message{}, err)
				return
			}
			for _, m := range page.Messages {
				if !yield(m, nil) {
					return
				}
			}
			if page.Next == "" || len(page.Messages) == 0 {
				return
			}
			if page.Next == opts.After {
				yield(Message{}, badResponsef("list messages: next cursor %q does not advance", page.Next))
				return
			}
			opts.After = page.Next
		}
	}
}

// GetMessage returns one message.
//
// Errors: ErrInvalid for an empty id; an *APIError (CodeNotFound for an
// unknown or deleted message); ErrBadResponse; ctx's error.
func (c *Client) GetMessage(ctx context.Context, conversation, messageID string) (Message, error) {
	if err := needAll("conversation id", conversation, "message id", messageID); err != nil {
		return Message{}, err
	}
	r := &request{method: http.MethodGet, path: messagesPath(conversation, messageID), idempotent: true}
	var out Message
	_, err := c.call(ctx, r, &out)
	return out, err
}

// EditMessage replaces the text of a message and returns the edited
// message. It is a PATCH and is retried only on 423.
//
// Errors: ErrInvalid for an empty id; an *APIError; ErrUnrecovered past the
// retry threshold; ErrBadResponse; ctx's error.
func (c *Client) EditMessage(ctx context.Context, conversation, messageID, text string) (Message, error) {
	if err := needAll("conversation id", conversation, "message id", messageID); err != nil {
		return Message{}, err
	}
	r, err := jsonRequest(http.MethodPatch, messagesPath(conversation, messageID),
		struct {
			Text string `json:"text"`
		}{text}, false)
	if err != nil {
		return Message{}, err
	}
	var out Message
	_, err = c.call(ctx, r, &out)
	return out, err
}

// Delete outcomes in the X-Cutover-Delete header.
const (
	deleteTombstone = "tombstone"
	deleteHard      = "hard"
)

// DeleteMessage deletes a message and reports whether the server kept a
// tombstone (the resource is under a hard-delete lock, paper 001 §4.3)
// rather than deleting it physically; to the user both are a delete. It is
// idempotent and also retried on transport errors and 502/503/504; a retry
// after an attempt whose outcome was unknown may therefore answer 404.
//
// Errors: ErrInvalid for an empty id; an *APIError (CodeNotFound);
// ErrUnrecovered past the retry threshold; ErrBadResponse when the delete
// succeeded but X-Cutover-Delete is missing or unknown; ctx's error.
func (c *Client) DeleteMessage(ctx context.Context, conversation, messageID string) (tombstone bool, err error) {
	if err := needAll("conversation id", conversation, "message id", messageID); err != nil {
		return false, err
	}
	r := &request{method: http.MethodDelete, path: messagesPath(conversation, messageID), idempotent: true}
	resp, err := c.call(ctx, r, nil)
	if err != nil {
		return false, err
	}
	switch h := resp.header.Get("X-Cutover-Delete"); h {
	case deleteTombstone:
		return true, nil
	case deleteHard:
		return false, nil
	default:
		return false, badResponsef("DELETE %s: deleted (status %d) but X-Cutover-Delete is %q", r.path, resp.status, h)
	}
}

// React adds the caller's emoji reaction to a message. It is a PUT:
// idempotent, so also retried on transport errors and 502/503/504.
//
// Errors: ErrInvalid for an empty id or emoji; an *APIError; ErrUnrecovered
// past the retry threshold; ctx's error.
func (c *Client) React(ctx context.Context, conversation, messageID, emoji string) error {
	return c.reaction(ctx, http.MethodPut, conversation, messageID, emoji)
}

// Unreact removes the caller's emoji reaction from a message. It is a
// DELETE: idempotent, so also retried on transport errors and 502/503/504.
//
// Errors: ErrInvalid for an empty id or emoji; an *APIError; ErrUnrecovered
// past the retry threshold; ctx's error.
func (c *Client) Unreact(ctx context.Context, conversation, messageID, emoji string) error {
	return c.reaction(ctx, http.MethodDelete, conversation, messageID, emoji)
}

func (c *Client) reaction(ctx context.Context, method, conversation, messageID, emoji string) error {
	if err := needAll("conversation id", conversation, "message id", messageID, "emoji", emoji); err != nil {
		return err
	}
	r := &request{method: method, path: messagesPath(conversation, messageID, "reactions", emoji), idempotent: true}
	_, err := c.call(ctx, r, nil)
	return err
}

// Reactions returns the reactions to a message.
//
// Errors: ErrInvalid for an empty id; an *APIError; ErrBadResponse; ctx's
// error.
func (c *Client) Reactions(ctx context.Context, conversation, messageID string) ([]Reaction, error) {
	if err := needAll("conversation id", conversation, "message id", messageID); err != nil {
		return nil, err
	}
	r := &request{method: http.MethodGet, path: messagesPath(conversation, messageID, "reactions"), idempotent: true}
	var out struct {
		Reactions []Reaction `json:"reactions"`
	}
	if _, err := c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	return out.Reactions, nil
}

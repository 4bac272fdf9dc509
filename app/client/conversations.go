package client

import (
	"context"
	"net/http"
)

// need returns ErrInvalid naming what when v is empty.
func need(what, v string) error {
	if v == "" {
		return invalidf("empty %s", what)
	}
	return nil
}

// needAll is need over pairs of (what, value).
func needAll(kv ...string) error {
	for i := 0; i+1 < len(kv); i += 2 {
		if err := need(kv[i], kv[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// CreateConversation creates a conversation with the caller as creator and
// returns it. It is a POST and is retried only on 423 (a transport error
// leaves its outcome unknown; giving NewConversation.ID makes a manual retry
// answer 409 instead of creating a second conversation).
//
// Errors: ErrInvalid for an empty member id (no request is sent); an
// *APIError for any non-retriable status; ErrUnrecovered past the retry
// threshold; ErrBadResponse; ctx's error.
func (c *Client) CreateConversation(ctx context.Context, conv NewConversation) (Conversation, error) {
	for _, m := range conv.Members {
		if err := need("member id", m); err != nil {
			return Conversation{}, err
		}
	}
	if conv.Members == nil {
		conv.Members = []string{}
	}
	r, err := jsonRequest(http.MethodPost, path("v1", "conversations"), conv, false)
	if err != nil {
		return Conversation{}, err
	}
	var out Conversation
	_, err = c.call(ctx, r, &out)
	return out, err
}

// GetConversation returns the conversation id.
//
// Errors: ErrInvalid for an empty id; an *APIError (CodeNotFound,
// CodeForbidden, ...); ErrBadResponse; ctx's error.
func (c *Client) GetConversation(ctx context.Context, id string) (Conversation, error) {
	if err := need("conversation id", id); err != nil {
		return Conversation{}, err
	}
	r := &request{method: http.MethodGet, path: path("v1", "conversations", id), idempotent: true}
	var out Conversation
	_, err := c.call(ctx, r, &out)
	return out, err
}

// membersBody is the members document.
type membersBody struct {
	Members []string `json:"members"`
}

// AddMember adds user to the conversation and returns the members after
// the change. It is a POST and is retried only on 423.
//
// Errors: ErrInvalid for an empty id; an *APIError; ErrUnrecovered past the
// retry threshold; ErrBadResponse; ctx's error.
func (c *Client) AddMember(ctx context.Context, conversation, user string) ([]string, error) {
	if err := needAll("conversation id", conversation, "user id", user); err != nil {
		return nil, err
	}
	r, err := jsonRequest(http.MethodPost, path("v1", "conversations", conversation, "members"),
		struct {
			User string `json:"user"`
		}{user}, false)
	if err != nil {
		return nil, err
	}
	var out membersBody
	if _, err := c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	return out.Members, nil
}

// Members returns the members of the conversation.
//
// Errors: ErrInvalid for an empty id; an *APIError; ErrBadResponse; ctx's
// error.
func (c *Client) Members(ctx context.Context, conversation string) ([]string, error) {
	if err := need("conversation id", conversation); err != nil {
		return nil, err
	}
	r := &request{method: http.MethodGet, path: path("v1", "conversations", conversation, "members"), idempotent: true}
	var out membersBody
	if _, err := c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	return out.Members, nil
}

// MarkRead records that the caller has read the conversation up to
// messageID. It is a PUT: idempotent, so also retried on transport errors
// and 502/503/504.
//
// Errors: ErrInvalid for an empty id; an *APIError; ErrUnrecovered past the
// retry threshold; ctx's error.
func (c *Client) MarkRead(ctx context.Context, conversation, messageID string) error {
	if err := needAll("conversation id", conversation, "message id", messageID); err != nil {
		return err
	}
	r, err := jsonRequest(http.MethodPut, path("v1", "conversations", conversation, "read"),
		struct {
			MessageID string `json:"message_id"`
		}{messageID}, true)
	if err != nil {
		return err
	}
	_, err = c.call(ctx, r, nil)
	return err
}

// ReadState returns, per member, the id of the last message they marked
// read.
//
// Errors: ErrInvalid for an empty id; an *APIError; ErrBadResponse; ctx's
// error.
func (c *Client) ReadState(ctx context.Context, conversation string) (map[string]string, error) {
	if err := need("conversation id", conversation); err != nil {
		return nil, err
	}
	r := &request{method: http.MethodGet, path: path("v1", "conversations", conversation, "read"), idempotent: true}
	var out struct {
		Read map[string]string `json:"read"`
	}
	if _, err := c.call(ctx, r, &out); err != nil {
		return nil, err
	}
	if out.Read == nil {
		out.Read = map[string]string{}
	}
	return out.Read, nil
}

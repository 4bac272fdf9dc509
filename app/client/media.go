package client

import (
	"context"
	"net/http"
)

// UploadMedia stores data with its MIME type in the conversation and
// returns its description; attach it to a message through NewMessage.Media.
// It is a POST and is retried only on 423 (data is resent from memory).
//
// Errors: ErrInvalid for an empty conversation id or content type; an
// *APIError (CodeTooLarge, ...); ErrUnrecovered past the retry threshold;
// ErrBadResponse; ctx's error.
func (c *Client) UploadMedia(ctx context.Context, conversation, contentType string, data []byte) (Media, error) {
	if err := needAll("conversation id", conversation, "content type", contentType); err != nil {
		return Media{}, err
	}
	if data == nil {
		data = []byte{}
	}
	r := &request{method: http.MethodPost, path: path("v1", "conversations", conversation, "media"),
		body: data, contentType: contentType}
	var out Media
	_, err := c.call(ctx, r, &out)
	return out, err
}

// GetMedia returns the content of a media object and its Content-Type.
//
// Errors: ErrInvalid for an empty id; an *APIError (CodeNotFound, ...);
// ErrBadResponse for a body over MaxResponseBytes; ctx's error.
func (c *Client) GetMedia(ctx context.Context, id string) (data []byte, contentType string, err error) {
	if err := need("media id", id); err != nil {
		return nil, "", err
	}
	r := &request{method: http.MethodGet, path: path("v1", "media", id), idempotent: true}
	resp, err := c.call(ctx, r, nil)
	if err != nil {
		return nil, "", err
	}
	return resp.body, resp.header.Get("Content-Type"), nil
}

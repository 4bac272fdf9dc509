package client

import (
	"encoding/json"
	"fmt"
	"time"
)

// Conversation is a conversation as the API returns it.
type Conversation struct {
	// ID identifies the conversation.
	ID string `json:"id"`
	// Title is the display title.
	Title string `json:"title"`
	// Members are the user ids allowed in the conversation.
	Members []string `json:"members"`
	// CreatedBy is the user that created it.
	CreatedBy string `json:"created_by"`
	// CreatedAt is the server's creation time, in UTC; zero if the server
	// sent none.
	CreatedAt time.Time `json:"created_at"`
	// Region is the region that is currently authoritative for it.
	Region string `json:"region"`
}

// UnmarshalJSON decodes the API's conversation object; created_at may be
// absent, null or "".
func (c *Conversation) UnmarshalJSON(b []byte) error {
	type plain Conversation // without this method
	var w struct {
		plain
		CreatedAt *string `json:"created_at"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = Conversation(w.plain)
	if w.CreatedAt != nil {
		t, err := parseTime("created_at", *w.CreatedAt)
		if err != nil {
			return err
		}
		c.CreatedAt = t
	}
	return nil
}

// NewConversation is the body of CreateConversation.
type NewConversation struct {
	// ID is optional; the server picks one when it is empty.
	ID string `json:"id,omitempty"`
	// Title is the display title.
	Title string `json:"title"`
	// Members are the initial members besides the creator.
	Members []string `json:"members"`
}

// Message is a message as the API returns it.
type Message struct {
	// ID is the client-chosen id the message was posted with.
	ID string
	// Conversation is the id of the conversation it belongs to.
	Conversation string
	// Author is the user that posted it.
	Author string
	// Text is the message text.
	Text string
	// Media are the ids of attached media (see UploadMedia).
	Media []string
	// CreatedAt is the server's timestamp of the post, in UTC.
	CreatedAt time.Time
	// EditedAt is the time of the last edit, in UTC; zero if never edited.
	EditedAt time.Time
}

// messageJSON is the wire form of Message; the timestamps are RFC 3339 with
// nanoseconds and edited_at may be absent, null or "".
type messageJSON struct {
	ID           string   `json:"id"`
	Conversation string   `json:"conversation"`
	Author       string   `json:"author"`
	Text         string   `json:"text"`
	Media        []string `json:"media"`
	CreatedAt    string   `json:"created_at"`
	EditedAt     *string  `json:"edited_at,omitempty"`
}

// UnmarshalJSON decodes the API's message object.
func (m *Message) UnmarshalJSON(b []byte) error {
	var w messageJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	created, err := parseTime("created_at", w.CreatedAt)
	if err != nil {
		return err
	}
	var edited time.Time
	if w.EditedAt != nil {
		if edited, err = parseTime("edited_at", *w.EditedAt); err != nil {
			return err
		}
	}
	*m = Message{
		ID:           w.ID,
		Conversation: w.Conversation,
		Author:       w.Author,
		Text:         w.Text,
		Media:        w.Media,
		CreatedAt:    created,
		EditedAt:     edited,
	}
	return nil
}

// MarshalJSON encodes m in the API's form, omitting edited_at when zero.
func (m Message) MarshalJSON() ([]byte, error) {
	w := messageJSON{
		ID:           m.ID,
		Conversation: m.Conversation,
		Author:       m.Author,
		Text:         m.Text,
		Media:        m.Media,
	}
	if !m.CreatedAt.IsZero() {
		w.CreatedAt = m.CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	if !m.EditedAt.IsZero() {
		s := m.EditedAt.UTC().Format(time.RFC3339Nano)
		w.EditedAt = &s
	}
	return json.Marshal(w)
}

func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", field, err)
	}
	return t.UTC(), nil
}

// NewMessage is the body of PostMessage.
type NewMessage struct {
	// ID is the client's idempotency key and becomes the message id. It is
	// required, and must stay the same when a caller re-posts a message
	// after an error, so that the server can recognise the repeat; see
	// NewMessageID.
	ID string `json:"id"`
	// Text is the message text.
	Text string `json:"text"`
	// Media are ids of media uploaded to the same conversation.
	Media []string `json:"media,omitempty"`
}

// MessagePage is one page of ListMessages.
type MessagePage struct {
	// Messages are in the server's order (oldest first).
	Messages []Message `json:"messages"`
	// Next is the After of the next page; empty on the last page.
	Next string `json:"next"`
}

// ListOptions pages ListMessages.
type ListOptions struct {
	// After is the Next of the previous page; empty starts at the beginning.
	After string
	// Limit caps the page size; 0 means the server's default.
	Limit int
}

// Reaction is one user's emoji reaction to a message.
type Reaction struct {
	// User is the reacting user.
	User string `json:"user"`
	// Emoji is the reaction.
	Emoji string `json:"emoji"`
}

// Media describes an uploaded media object.
type Media struct {
	// ID identifies the media object (GetMedia, NewMessage.Media).
	ID string `json:"id"`
	// Conversation is the conversation it was uploaded to.
	Conversation string `json:"conversation"`
	// ContentType is the MIME type given at upload.
	ContentType string `json:"content_type"`
	// Size is the length of the content in bytes.
	Size int64 `json:"size"`
}

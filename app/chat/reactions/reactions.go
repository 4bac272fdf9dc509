// Package reactions is the chat service that owns the emoji reactions to a
// conversation's messages. Its records live under the conversation's
// resource "conv/<id>", kind "reaction", with id "<messageID>:<user>:<emoji>"
// (see ID for the exceptions).
package reactions

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cutover/cutover/app/chat/internal/core"
	"github.com/cutover/cutover/kvrouting"
	"github.com/cutover/cutover/services"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/store"
	"github.com/vmihailenco/msgpack/v5"
)

// ServiceName is the service's name in the migration contract.
const ServiceName = "reactions"

// KindReaction is the kind of a reaction record.
const KindReaction = "reaction"

// MaxEmojiBytes is the longest emoji (or emoji name) accepted.
const MaxEmojiBytes = 64

// Generations is how many times one user may react with one emoji to one
// message again after un-reacting under a hard-delete lock: each such
// un-react leaves a tombstone on the reaction's id, which the store never
// reuses (paper 001 §4.3), so a re-react takes the id of the next
// generation.
const Generations = 4

// Options configures a Service. Zero values mean the defaults.
type Options struct {
	// Clock is the store's clock (default time.Now).
	Clock func() time.Time
}

// Reaction is one user's emoji on one message.
type Reaction struct {
	MessageID string
	User      string
	Emoji     string
	CreatedAt time.Time
}

// Service is the reactions service at one region. It implements
// contract.Participant through the embedded contract. Safe for concurrent
// use.
type Service struct {
	*core.Participant
	c *core.Core
}

var _ contract.Participant = (*Service)(nil)

// New returns the service over st, which it does not own.
func New(st *store.Store, opts Options) *Service {
	c := core.New(ServiceName, st, opts.Clock, services.StoreParticipantOptions{})
	return &Service{Participant: c.Participant(), c: c}
}

type reactionData struct {
	Message string `msgpack:"m"`
	User    string `msgpack:"u"`
	Emoji   string `msgpack:"e"`
}

// ID returns the record id of generation gen (1..Generations) of a reaction.
// Generation 1 is "<messageID>:<user>:<emoji>" when none of the three
// contains ':' and the id fits the store's 128 bytes; later generations
// append ":<gen>". Otherwise the id is ":" followed by a SHA-256 of the
// three (and ":<gen>" after generation 1); it starts with ':', which no
// readable id does, so the two forms never collide.
func ID(messageID, user, emoji string, gen int) string {
	suffix := ""
	if gen > 1 {
		suffix = ":" + strconv.Itoa(gen)
	}
	plain := messageID + ":" + user + ":" + emoji
	if !strings.Contains(messageID, ":") && !strings.Contains(user, ":") && !strings.Contains(emoji, ":") &&
		len(plain)+len(":00") <= core.MaxIDLen {
		return plain + suffix
	}
	h := sha256.New()
	for _, s := range []string{messageID, user, emoji} {
		_, _ = h.Write(binary.AppendUvarint(nil, uint64(len(s))))
		_, _ = h.Write([]byte(s))
	}
	return ":" + hex.EncodeToString(h.Sum(nil)[:24]) + suffix
}

// ValidEmoji returns a CodeInvalid *contract.Error unless emoji is a
// non-empty UTF-8 string of at most MaxEmojiBytes without control characters
// or '/'.
func ValidEmoji(emoji string) error {
	if emoji == "" || len(emoji) > MaxEmojiBytes || !utf8.ValidString(emoji) || strings.Contains(emoji, "/") {
		return contract.Errorf(contract.CodeInvalid, "emoji must be 1 to %d bytes of UTF-8 without '/'", MaxEmojiBytes)
	}
	return core.ValidID("emoji", emoji)
}

func validate(conv, mid, user, emoji string) error {
	if err := core.ValidID("conversation id", conv); err != nil {
		return err
	}
	if err := core.ValidID("message id", mid); err != nil {
		return err
	}
	if err := core.ValidID("user", user); err != nil {
		return err
	}
	return ValidEmoji(emoji)
}

// React records user's emoji on message mid under decision d (a new write).
// Reacting twice is not an error. Errors: *contract.Error — invalid,
// conflict (every generation's id is tombstoned), locked, internal.
func (s *Service) React(ctx context.Context, d kvrouting.Decision, conv, mid, user, emoji string) (Reaction, error) {
	if err := core.Check(d, kvrouting.OpNewWrite); err != nil {
		return Reaction{}, err
	}
	if err := validate(conv, mid, user, emoji); err != nil {
		return Reaction{}, err
	}
	res := core.ConvResource(conv)
	// A live generation may sit above a tombstoned one that was swept since;
	// look for it first so a reaction is never recorded twice.
	for g := 1; g <= Generations; g++ {
		rec, err := s.c.Get(ctx, res, ID(mid, user, emoji, g))
		if err == nil {
			return decode(rec)
		}
		if services.ToError(err).Code != contract.CodeNotFound {
			return Reaction{}, err
		}
	}
	data, err := msgpack.Marshal(&reactionData{Message: mid, User: user, Emoji: emoji})
	if err != nil {
		return Reaction{}, services.ToError(err)
	}
	for g := 1; g <= Generations; g++ {
		rec, err := s.c.Create(ctx, d, res, store.Record{ID: ID(mid, user, emoji, g), Kind: KindReaction, Data: data})
		switch {
		case err == nil, errors.Is(err, store.ErrExists):
			return decode(rec)
		case errors.Is(err, store.ErrDeleted):
			continue
		default:
			return Reaction{}, services.ToError(err)
		}
	}
	return Reaction{}, contract.Errorf(contract.CodeConflict, "reaction %q removed too often during a migration; retry later", emoji)
}

// Unreact removes user's emoji from message mid under decision d (a
// delete), and reports whether it became a tombstone. Errors:
// *contract.Error — not_found, invalid, locked, internal.
func (s *Service) Unreact(ctx context.Context, d kvrouting.Decision, conv, mid, user, emoji string) (tombstoned bool, err error) {
	if err := core.Check(d, kvrouting.OpDelete); err != nil {
		return false, err
	}
	if err := validate(conv, mid, user, emoji); err != nil {
		return false, err
	}
	res := core.ConvResource(conv)
	found := false
	for g := 1; g <= Generations; g++ {
		r, err := s.c.Delete(ctx, d, res, ID(mid, user, emoji, g))
		if err != nil {
			if services.ToError(err).Code == contract.CodeNotFound {
				continue
			}
			return tombstoned, err
		}
		found = true
		tombstoned = tombstoned || r.Tombstoned
	}
	if !found {
		return false, contract.Errorf(contract.CodeNotFound, "no reaction %q by %q on message %q", emoji, user, mid)
	}
	return tombstoned, nil
}

// List returns the reactions to message mid in the order they were made.
// Errors: *contract.Error — invalid, internal.
func (s *Service) List(ctx context.Context, conv, mid string) ([]Reaction, error) {
	if err := core.ValidID("conversation id", conv); err != nil {
		return nil, err
	}
	recs, err := s.c.ListAll(ctx, core.ConvResource(conv), KindReaction)
	if err != nil {
		return nil, err
	}
	out := []Reaction{}
	for _, r := range recs {
		re, err := decode(r)
		if err != nil {
			return nil, err
		}
		if re.MessageID == mid {
			out = append(out, re)
		}
	}
	return out, nil
}

// RemoveAll deletes every reaction to message mid under decision d (the
// cascade of a message delete) and returns how many it removed. Errors:
// *contract.Error — invalid, locked, internal.
func (s *Service) RemoveAll(ctx context.Context, d kvrouting.Decision, conv, mid string) (int, error) {
	if err := core.Check(d, kvrouting.OpDelete); err != nil {
		return 0, err
	}
	if err := core.ValidID("conversation id", conv); err != nil {
		return 0, err
	}
	res := core.ConvResource(conv)
	recs, err := s.c.ListAll(ctx, res, KindReaction)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		re, err := decode(r)
		if err != nil {
			return n, err
		}
		if re.MessageID != mid {
			continue
		}
		if _, err := s.c.Delete(ctx, d, res, r.ID); err != nil {
			if services.ToError(err).Code == contract.CodeNotFound {
				continue
			}
			return n, err
		}
		n++
	}
	return n, nil
}

func decode(r store.Record) (Reaction, error) {
	var rd reactionData
	if err := msgpack.Unmarshal(r.Data, &rd); err != nil {
		return Reaction{}, contract.Errorf(contract.CodeInternal, "reaction %q: corrupt record: %v", r.ID, err)
	}
	return Reaction{MessageID: rd.Message, User: rd.User, Emoji: rd.Emoji, CreatedAt: time.Unix(0, r.CreatedAt).UTC()}, nil
}

package workload

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cutover/cutover/services/client"
)

// SeedID is the id of a conversation's i-th seeded message; ReactTo
// (SeedID(0)) is the message the traffic reacts to.
func SeedID(i int) string { return fmt.Sprintf("s%05d", i) }

// SeedText is the text of conv's i-th seeded message.
func SeedText(conv string, i int) string { return fmt.Sprintf("seed message %d of %s", i, conv) }

// Seeder creates conversations and posts their seeded messages through the
// SDK, recording every post in Ledger (when not nil).
type Seeder struct {
	Client *client.Client
	// Users are the members of every conversation.
	Users  []string
	Ledger *Ledger
}

// Conversation creates cv and posts its messages one by one. A post that
// fails is recorded as uncertain and the rest are still posted (under
// faults, chaos keeps going); the first error is returned.
func (s Seeder) Conversation(ctx context.Context, cv Conv) error {
	if _, err := s.Client.CreateConversation(ctx, client.NewConversation{ID: cv.ID, Title: cv.ID, Members: s.Users}); err != nil {
		return fmt.Errorf("create %s: %w", cv.ID, err)
	}
	var first error
	for j := range cv.Size {
		if err := s.post(ctx, cv.ID, j); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// All creates every conversation, then posts their messages in batches of
// 50 through the client's queue (client.WithWorkers sets how many run at
// once). progress, when not nil, is called every 5,000 messages. It stops
// at the first error.
func (s Seeder) All(ctx context.Context, convs []Conv, progress func(posted, total int)) error {
	for _, cv := range convs {
		if _, err := s.Client.CreateConversation(ctx, client.NewConversation{ID: cv.ID, Title: cv.ID, Members: s.Users}); err != nil {
			return fmt.Errorf("seed %s: %w", cv.ID, err)
		}
	}
	total := Messages(convs)
	var done atomic.Int64
	var pend []*client.Pending
	for _, cv := range convs {
		for k := 0; k < cv.Size; k += 50 {
			lo, hi, conv := k, min(cv.Size, k+50), cv.ID
			pend = append(pend, s.Client.Enqueue(func(ctx context.Context) error {
				for j := lo; j < hi; j++ {
					if err := s.post(ctx, conv, j); err != nil {
						return err
					}
					if v := done.Add(1); v%5000 == 0 && progress != nil {
						progress(int(v), total)
					}
				}
				return nil
			}))
		}
	}
	for _, p := range pend {
		if err := p.Wait(ctx); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	return nil
}

func (s Seeder) post(ctx context.Context, conv string, j int) error {
	id, text := SeedID(j), SeedText(conv, j)
	start := time.Now()
	_, err := s.Client.PostMessage(ctx, conv, client.NewMessage{ID: id, Text: text})
	if s.Ledger != nil {
		s.Ledger.TimedOp(conv, TimedOp{ID: id, Text: text, Start: start, End: time.Now(), Acked: err == nil})
		if err == nil {
			s.Ledger.Acked(conv, id, text)
		} else {
			s.Ledger.Uncertain(conv, id, text, false)
		}
	}
	return err
}

package workload

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cutover/cutover/app/client"
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
	if err := s.create(ctx, cv.ID); err != nil {
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
		if err := s.create(ctx, cv.ID); err != nil {
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

// create creates conversation id. A create is a POST the client does not
// retry; the seeder does, on 503 (a routing store still electing its
// leader right after start answers so), for up to createAttempts tries.
// The id is the seeder's own, so a 409 after a failed try means that try
// created it.
func (s Seeder) create(ctx context.Context, id string) error {
	var err error
	for try := range createAttempts {
		_, err = s.Client.CreateConversation(ctx, client.NewConversation{ID: id, Title: id, Members: s.Users})
		var ae *client.APIError
		switch {
		case err == nil:
			return nil
		case try > 0 && errors.As(err, &ae) && ae.Code == client.CodeConflict:
			return nil
		case !errors.As(err, &ae) || ae.Code != client.CodeUnavailable:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(try+1) * 250 * time.Millisecond):
		}
	}
	return err
}

// createAttempts bounds the seeder's tries of one create (about 50 s of
// waiting in all).
const createAttempts = 20

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

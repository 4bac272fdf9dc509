package workload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cutover/cutover/app/client"
)

// Mix is the live traffic's operation mix, in percent of operations; the
// rest are reads (ListMessages, newest 20). Each operation picks a random
// conversation. Edits and deletes touch only the user's own live messages
// in it and become reads when there is none; a reaction goes to the
// conversation's first seeded message (SeedID(0)). Posts, edits and deletes
// are written to the Ledger, reactions too (half adds, half removes: a
// removal is a physical delete at the reactions service).
type Mix struct {
	Post, Edit, Delete, React int
}

// DefaultMix is the one mix every run uses unless it says otherwise: 40 %
// posts, 15 % edits, 10 % deletes, 10 % reactions, 25 % reads — a chat
// that writes more than production does, so that every migration meets
// writes in every phase.
var DefaultMix = Mix{Post: 40, Edit: 15, Delete: 10, React: 10}

// DefaultThink is the mean pause between one user's operations.
const DefaultThink = 5 * time.Millisecond

// TrafficConfig configures StartTraffic.
type TrafficConfig struct {
	// APIs are the API base URLs; user i talks to APIs[i % len(APIs)]
	// (chaos sends every second user to a stale-routing API). APIs[0] must
	// route with an up-to-date view: a checker holds the refusals met
	// through it to the write locks of the routing history.
	APIs []string
	// Users are the users, one SDK client and goroutine each.
	Users []string
	// Convs are the conversations to pick from.
	Convs *ConvSet
	// Mix is the operation mix (zero: DefaultMix).
	Mix Mix
	// Think is the mean pause between one user's operations, drawn
	// uniformly from [Think/2, 3·Think/2) (zero: DefaultThink).
	Think time.Duration
	Seed  uint64
	// Ledger records posts, edits and deletes (nil: not recorded).
	Ledger *Ledger
	// OnClient, when set, sees each user's client once created (metrics).
	OnClient func(user string, c *client.Client)
	// Token, when set, is user's bearer token (a gateway with signed
	// tokens); nil sends the development token "user:<id>".
	Token func(user string) (string, error)
}

// Stats are what the users saw: their operations and the SDK's counters
// of 423s (paper 001 §6.2).
type Stats struct {
	Attempted, Acknowledged, Reads, FailedOther int64
	// FailedBy breaks FailedOther down by operation and error ("post 404
	// not_found", "read transport", ...).
	FailedBy                                    map[string]int64
	Rejected423, Fenced, Recovered, Unrecovered int64
	FenceDelaySum, FenceDelayMax                time.Duration
}

// MaxFenceMs is the longest delay 423s added to one operation.
func (s Stats) MaxFenceMs() float64 { return float64(s.FenceDelayMax.Microseconds()) / 1000 }

// AvgFenceMs is the mean delay 423s added to a fenced operation.
func (s Stats) AvgFenceMs() float64 {
	if s.Fenced == 0 {
		return 0
	}
	return float64(s.FenceDelaySum.Microseconds()) / 1000 / float64(s.Fenced)
}

// Traffic is live user traffic through the SDK until Stop.
type Traffic struct {
	mu       sync.Mutex
	failures map[string]int64
	stop     context.CancelFunc
	wg       sync.WaitGroup
	clients  []*client.Client
	// idle closes the users' kept connections (Stop).
	idle func()

	attempted, acked, reads, failed atomic.Int64
}

// StartTraffic starts one goroutine per user. Errors: a client that cannot
// be created, or a config without users, APIs or conversations.
func StartTraffic(ctx context.Context, cfg TrafficConfig) (*Traffic, error) {
	if len(cfg.Users) == 0 || len(cfg.APIs) == 0 || cfg.Convs == nil {
		return nil, errors.New("workload: traffic needs users, APIs and conversations")
	}
	if cfg.Mix == (Mix{}) {
		cfg.Mix = DefaultMix
	}
	if m := cfg.Mix; m.Post < 0 || m.Edit < 0 || m.Delete < 0 || m.React < 0 || m.Post+m.Edit+m.Delete+m.React > 100 {
		return nil, fmt.Errorf("workload: mix %+v does not add up to at most 100 %%", m)
	}
	if cfg.Think <= 0 {
		cfg.Think = DefaultThink
	}
	tctx, stop := context.WithCancel(ctx)
	t := &Traffic{stop: stop, idle: func() {}}
	// One transport keeping a connection per user and API: the default
	// keeps two per host, so users beyond two per API dialled a new
	// connection for nearly every request (2.4 % of the CPU of `cutover
	// bench throughput`, a cost no real client pays).
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = len(cfg.Users)
	t.idle = base.CloseIdleConnections
	for ui, u := range cfg.Users {
		// The transport records which region served each request, so
		// that every acknowledged write is ledgered with where it was
		// accepted (ServedWrite).
		tok := "user:" + u
		if cfg.Token != nil {
			var err error
			if tok, err = cfg.Token(u); err != nil {
				t.Stop()
				return nil, err
			}
		}
		c, err := client.New(cfg.APIs[ui%len(cfg.APIs)], tok,
			client.WithHTTPClient(&http.Client{Transport: servedTransport{base: base}}))
		if err != nil {
			t.Stop()
			return nil, err
		}
		t.clients = append(t.clients, c)
		if cfg.OnClient != nil {
			cfg.OnClient(u, c)
		}
		t.wg.Go(func() { t.user(tctx, cfg, ui, u, c) })
	}
	return t, nil
}

// listLimit is the page size of the traffic's list reads: a conversation
// of the chaos and demo sizes fits in one page, so most reads are whole.
const listLimit = 200

// user is one user's loop.
func (t *Traffic) user(ctx context.Context, cfg TrafficConfig, ui int, u string, c *client.Client) {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(ui)+100))
	own := map[string][]string{}  // conversation → this user's live messages
	gone := map[string][]string{} // conversation → this user's last deleted messages
	led := cfg.Ledger
	m := cfg.Mix
	n := 0
	for ctx.Err() == nil {
		conv := cfg.Convs.pick(rng)
		if conv == "" {
			sleep(ctx, cfg.Think)
			continue
		}
		x := rng.IntN(100)
		var err error
		write := true
		octx, srv := withServed(ctx)
		start, what := time.Now(), ""
		var op TimedOp // a post, edit or delete, for the read checks
		switch {
		case x < m.Post:
			n++
			id, text := fmt.Sprintf("%s-%06d", u, n), fmt.Sprintf("live %d from %s", n, u)
			t.attempted.Add(1)
			what = "post " + id
			op = TimedOp{ID: id, Text: text}
			if _, err = c.PostMessage(octx, conv, client.NewMessage{ID: id, Text: text}); err == nil {
				led.ack(conv, id, text)
				own[conv] = append(own[conv], id)
			} else {
				led.uncertain(conv, id, text, false)
			}
		case x < m.Post+m.Edit && len(own[conv]) > 0:
			id := own[conv][rng.IntN(len(own[conv]))]
			text := fmt.Sprintf("edited %d by %s", rng.IntN(1e6), u)
			t.attempted.Add(1)
			what = "edit " + id
			op = TimedOp{ID: id, Text: text}
			if _, err = c.EditMessage(octx, conv, id, text); err == nil {
				led.ack(conv, id, text)
			} else {
				led.uncertain(conv, id, text, false)
			}
		case x < m.Post+m.Edit+m.Delete && len(own[conv]) > 0:
			i := rng.IntN(len(own[conv]))
			id := own[conv][i]
			t.attempted.Add(1)
			what = "delete " + id
			op = TimedOp{ID: id, Delete: true}
			if _, err = c.DeleteMessage(octx, conv, id); err == nil {
				led.ackDelete(conv, id)
				own[conv] = slices.Delete(own[conv], i, i+1)
				gone[conv] = append(gone[conv], id)
				if len(gone[conv]) > 5 {
					gone[conv] = gone[conv][1:]
				}
			} else {
				led.uncertain(conv, id, "", true)
			}
		case x >= m.Post+m.Edit+m.Delete && x < m.Post+m.Edit+m.Delete+m.React:
			// Half adds, half removes (a physical delete at the reactions
			// service): both are ledgered, so a removed reaction that comes
			// back counts as resurrected.
			k := ReactionKey{Message: SeedID(0), User: u, Emoji: []string{"tada", "eyes", "rocket"}[rng.IntN(3)]}
			add := rng.IntN(2) == 0
			t.attempted.Add(1)
			what = "reaction " + k.Emoji + " of " + u
			if add {
				err = c.React(octx, conv, k.Message, k.Emoji)
			} else {
				err = c.Unreact(octx, conv, k.Message, k.Emoji)
			}
			if err == nil {
				led.ackReaction(conv, k, add)
			} else {
				led.uncertainReaction(conv, k)
			}
		case len(own[conv])+len(gone[conv]) > 0 && rng.IntN(2) == 0:
			// Read one of this user's own messages, live or deleted: its
			// result is ledgered and checked against the user's own
			// acknowledged operations (read your writes, and no deleted
			// message found again).
			write = false
			t.reads.Add(1)
			ids := append(slices.Clone(own[conv]), gone[conv]...)
			id := ids[rng.IntN(len(ids))]
			var msg client.Message
			msg, err = c.GetMessage(ctx, conv, id)
			var ae *client.APIError
			switch {
			case err == nil:
				led.readByWriter(conv, id, true, msg.Text)
			case errors.As(err, &ae) && ae.Code == client.CodeNotFound:
				led.readByWriter(conv, id, false, "")
				err = nil
			}
		default:
			// A read of the whole conversation by any user: kept, and
			// checked against every write acknowledged before it started
			// (check: stale_reads).
			write = false
			t.reads.Add(1)
			var page client.MessagePage
			page, err = c.ListMessages(octx, conv, client.ListOptions{Limit: listLimit})
			if err == nil && led != nil && page.Next == "" {
				items := make(map[string]string, len(page.Messages))
				for _, m := range page.Messages {
					items[m.ID] = m.Text
				}
				led.ListRead(conv, ListRead{Start: start, End: time.Now(), Items: items, Region: srv.get(), API: ui % len(cfg.APIs)})
			}
		}
		if led != nil {
			for _, r := range srv.refusals() {
				led.Refused(conv, ui%len(cfg.APIs), r)
			}
			if op.ID != "" {
				op.Start, op.End, op.Acked, op.Region = start, time.Now(), err == nil, srv.get()
				led.TimedOp(conv, op)
			}
		}
		switch {
		case err == nil:
			if write {
				t.acked.Add(1)
				if region := srv.get(); region != "" && led != nil {
					led.ServedWrite(conv, region, ui%len(cfg.APIs), start, time.Now(), what)
				}
			}
		case ctx.Err() != nil, errors.Is(err, client.ErrUnrecovered):
		default:
			t.failed.Add(1)
			t.failedBy(opName(what, write), err)
		}
		sleep(ctx, cfg.Think/2+time.Duration(rng.Int64N(int64(cfg.Think))))
	}
}

// Stop stops the traffic, waits for the users, closes their clients and
// returns what they saw. It may be called more than once.
func (t *Traffic) Stop() Stats {
	t.stop()
	t.wg.Wait()
	t.idle()
	s := Stats{Attempted: t.attempted.Load(), Acknowledged: t.acked.Load(), Reads: t.reads.Load(), FailedOther: t.failed.Load()}
	t.mu.Lock()
	s.FailedBy = maps.Clone(t.failures)
	t.mu.Unlock()
	for _, c := range t.clients {
		st := c.Stats()
		s.Rejected423 += st.Rejected423
		s.Fenced += st.Fenced
		s.Recovered += st.Recovered
		s.Unrecovered += st.Unrecovered
		s.FenceDelaySum += st.FenceDelaySum
		s.FenceDelayMax = max(s.FenceDelayMax, st.FenceDelayMax)
		_ = c.Close()
	}
	return s
}

func (l *Ledger) ack(conv, id, text string) {
	if l != nil {
		l.Acked(conv, id, text)
	}
}

func (l *Ledger) ackDelete(conv, id string) {
	if l != nil {
		l.AckedDelete(conv, id)
	}
}

func (l *Ledger) uncertain(conv, id, text string, deleted bool) {
	if l != nil {
		l.Uncertain(conv, id, text, deleted)
	}
}

func (l *Ledger) ackReaction(conv string, k ReactionKey, present bool) {
	if l != nil {
		l.AckedReaction(conv, k, present)
	}
}

func (l *Ledger) uncertainReaction(conv string, k ReactionKey) {
	if l != nil {
		l.UncertainReaction(conv, k)
	}
}

func (l *Ledger) readByWriter(conv, id string, found bool, text string) {
	if l != nil {
		l.ReadByWriter(conv, id, found, text)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// opName is the first word of a traffic operation's description ("post",
// "edit", "delete", "react"), or "read".
func opName(what string, write bool) string {
	if !write {
		return "read"
	}
	if op, _, ok := strings.Cut(what, " "); ok {
		return op
	}
	return what
}

// failedBy counts a failure of op by its status and code, or "transport".
func (t *Traffic) failedBy(op string, err error) {
	key := op + " transport"
	var ae *client.APIError
	if errors.As(err, &ae) {
		key = fmt.Sprintf("%s %d %s", op, ae.Status, ae.Code)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failures == nil {
		t.failures = map[string]int64{}
	}
	t.failures[key]++
}

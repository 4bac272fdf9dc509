package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RawConfig configures StartRaw: plain HTTP clients that never retry
// (a browser, curl, a client in another language). Each posts new messages
// as fast as its answers come; a 423 is an answer they show their user.
type RawConfig struct {
	// API is the base URL.
	API string
	// Users are the clients' identities (members of every conversation);
	// client i posts as Users[i % len(Users)].
	Users []string
	// Clients is how many run at once.
	Clients int
	// Convs are the conversations they post to.
	Convs *ConvSet
	Seed  uint64
	// Ledger, if set, records every acknowledged post (and every post
	// whose outcome is unknown), for the checker.
	Ledger *Ledger
	// Think is the pause between two posts of one client (default 20 ms).
	Think time.Duration
}

// RawStats are the raw clients' outcomes (the demo's raw.* keys).
type RawStats struct {
	WritesAttempted int64 `json:"writes_attempted"`
	Acknowledged    int64 `json:"acknowledged"`
	Saw423          int64 `json:"saw_423"`
	// SawMoved are the 423s that said the conversation had moved ("moved",
	// "locked secondary", "not authoritative"): a server that can
	// re-resolve never sends one (docs/api.md), so this is 0.
	SawMoved int64 `json:"saw_moved"`
	// Queued is how many acknowledged writes the server had parked
	// (Cutover-Queued-Ms present).
	Queued int64 `json:"queued"`
	// FailedOther are answers other than 2xx and 423, and transport errors.
	FailedOther int64 `json:"failed_other"`
}

// Raw is a running set of raw clients.
type Raw struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	attempted, acked, saw423, sawMoved, queued, failed atomic.Int64
}

// StartRaw starts cfg.Clients raw clients.
func StartRaw(ctx context.Context, cfg RawConfig) *Raw {
	if cfg.Think <= 0 {
		cfg.Think = 20 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Raw{cancel: cancel}
	hc := &http.Client{Timeout: 30 * time.Second}
	for i := range cfg.Clients {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.run(ctx, cfg, hc, i)
		}()
	}
	return r
}

func (r *Raw) run(ctx context.Context, cfg RawConfig, hc *http.Client, i int) {
	u := cfg.Users[i%len(cfg.Users)]
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)+7000))
	for n := 1; ctx.Err() == nil; n++ {
		conv := cfg.Convs.pick(rng)
		if conv == "" {
			sleep(ctx, cfg.Think)
			continue
		}
		id, text := fmt.Sprintf("raw%d-%s-%06d", i, u, n), fmt.Sprintf("raw %d from %s", n, u)
		body, _ := json.Marshal(map[string]string{"id": id, "text": text})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(cfg.API, "/")+"/v1/conversations/"+conv+"/messages", bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer user:"+u)
		req.Header.Set("Content-Type", "application/json")
		r.attempted.Add(1)
		res, err := hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				r.attempted.Add(-1) // stopped, not answered
			} else {
				r.failed.Add(1)
			}
			if cfg.Ledger != nil {
				cfg.Ledger.Uncertain(conv, id, text, false)
			}
			continue
		}
		answer, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		_ = res.Body.Close()
		switch {
		case res.StatusCode/100 == 2:
			r.acked.Add(1)
			if res.Header.Get("Cutover-Queued-Ms") != "" {
				r.queued.Add(1)
			}
			if cfg.Ledger != nil {
				cfg.Ledger.Acked(conv, id, text)
			}
		case res.StatusCode == http.StatusLocked:
			r.saw423.Add(1)
			if movedLock(answer) {
				r.sawMoved.Add(1)
			}
		default:
			r.failed.Add(1)
			if cfg.Ledger != nil && res.StatusCode >= 500 {
				cfg.Ledger.Uncertain(conv, id, text, false)
			}
		}
		sleep(ctx, cfg.Think)
	}
}

// Stop stops the clients, waits for them and returns their outcomes.
func (r *Raw) Stop() RawStats {
	r.once.Do(func() {
		r.cancel()
		r.wg.Wait()
	})
	return RawStats{WritesAttempted: r.attempted.Load(), Acknowledged: r.acked.Load(),
		Saw423: r.saw423.Load(), SawMoved: r.sawMoved.Load(), Queued: r.queued.Load(), FailedOther: r.failed.Load()}
}

// movedLock reports whether a 423's body says the resource has moved.
func movedLock(body []byte) bool {
	var b struct {
		Error struct {
			Lock string `json:"lock"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	switch b.Error.Lock {
	case "moved", "locked secondary", "not authoritative":
		return true
	}
	return false
}

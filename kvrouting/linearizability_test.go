package kvrouting

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/cutover/cutover/internal/testutil"
	cnats "github.com/cutover/cutover/nats"
	"github.com/cutover/cutover/nats/natstest"
)

// Linearizability of the routing lock operations (docs/verification.md):
// concurrent clients drive the Locker against a 3-node R3 cluster while the
// ROUTING stream leader is killed and restarted; porcupine then checks the
// recorded history against a sequential model that runs the very transition
// functions of locks.go on one document per resource (paper 000 §5.4: every
// mutation is one conditional write on (token, revision)).

type linOp uint8

const (
	linGet linOp = iota // authoritative resolve: Store.GetLeader
	linPreLock
	linEscalateHD
	linEscalateWrite
	linRenew
	linSwap
	linRelease
)

var linOpNames = [...]string{"get", "pre-lock", "escalate-hd", "escalate-write", "renew", "swap", "release"}

type linInput struct {
	op     linOp
	res    string
	tok    Token
	target string // pre-lock only
}

type linOutcome uint8

const (
	linOK linOutcome = iota
	linErr
	linUnknown // ErrUnavailable / timeout: possibly applied
)

type linOutput struct {
	outcome linOutcome
	class   string // error class when outcome == linErr
	doc     string // encoded document (without revision) when ok
	sum     string // human summary for the visualization
	rev     uint64
}

// linState is the model's document. rev is exact, or (exact == false) a
// strict lower bound: an unknown-outcome write may have moved it.
type linState struct {
	doc   string
	rev   uint64
	exact bool
}

// errClass maps an error to the class the model must reproduce.
func errClass(err error) string {
	for _, c := range []struct {
		err  error
		name string
	}{
		{ErrUnavailable, "unavailable"}, {ErrConflict, "conflict"}, {ErrLocked, "locked"},
		{ErrTokenMismatch, "token-mismatch"}, {ErrExpired, "expired"}, {ErrNotConverged, "not-converged"},
		{ErrIllegalTransition, "illegal"}, {ErrAtTarget, "at-target"}, {ErrMalformed, "malformed"},
		{ErrNotFound, "not-found"}, {ErrInvalid, "invalid"},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "other: " + err.Error()
}

func encodeDoc(d *Document) string {
	c := d.Clone()
	c.Revision = 0
	b, err := c.Encode()
	if err != nil {
		panic(err) // documents built by the transitions always encode
	}
	return string(b)
}

func summarize(d *Document) string {
	s := fmt.Sprintf("%s %s/%s", d.Primary.Region, d.Primary.Lock.Type, d.Primary.Lock.Token.Redacted())
	if d.Secondary != nil {
		s += fmt.Sprintf(" sec=%s %s/%s", d.Secondary.Region, d.Secondary.Lock.Type, d.Secondary.Lock.Token.Redacted())
	}
	return s
}

// linModel is the sequential specification: the locks.go transitions at a
// fixed instant (the test clock never moves, so time decides nothing).
func linModel(cfg LockConfig, now time.Time, init map[string]linState) porcupine.Model {
	apply := func(doc string, in linInput) (*Document, error) {
		d, err := DecodeDocument([]byte(doc), 1)
		if err != nil {
			return nil, err
		}
		switch in.op {
		case linPreLock:
			return preLock(d, now, in.tok, in.target, "m-"+string(in.tok[:8]), &cfg)
		case linEscalateHD:
			return escalateHardDelete(d, now, in.tok, &cfg)
		case linEscalateWrite:
			return escalateWrite(d, now, in.tok, &cfg)
		case linRenew:
			return renew(d, now, in.tok, &cfg)
		case linSwap:
			return swap(d, now, in.tok, &cfg)
		case linRelease:
			return release(d, now, in.tok, &cfg)
		}
		return nil, nil
	}
	revMatches := func(s linState, rev uint64) bool {
		if s.exact {
			return rev == s.rev
		}
		return rev > s.rev
	}
	nm := porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			var keys []string
			for _, op := range h {
				r := op.Input.(linInput).res
				if _, ok := by[r]; !ok {
					keys = append(keys, r)
				}
				by[r] = append(by[r], op)
			}
			var out [][]porcupine.Operation
			for _, k := range keys {
				out = append(out, by[k])
			}
			return out
		},
		Init: func() []any {
			// One state per resource would need a map; the partitions are
			// checked separately, so the initial state is looked up lazily.
			return []any{linState{}}
		},
		Step: func(st, input, output any) []any {
			in, out := input.(linInput), output.(linOutput)
			s := st.(linState)
			if s.doc == "" { // first step of this partition
				s = init[in.res]
			}
			next, err := apply(s.doc, in)
			switch out.outcome {
			case linUnknown:
				if in.op != linGet && err == nil && next != nil {
					return []any{s, linState{doc: encodeDoc(next), rev: s.rev, exact: false}}
				}
				return []any{s}
			case linErr:
				if out.class == "conflict" { // every CAS was refused: no effect
					return []any{s}
				}
				if err != nil && errClass(err) == out.class {
					return []any{s}
				}
				return nil
			}
			if err != nil {
				return nil
			}
			if next == nil { // a read, or a transition with nothing to change
				if out.doc == s.doc && revMatches(s, out.rev) {
					return []any{linState{doc: s.doc, rev: out.rev, exact: true}}
				}
				return nil
			}
			if out.doc == encodeDoc(next) && out.rev > s.rev {
				return []any{linState{doc: out.doc, rev: out.rev, exact: true}}
			}
			return nil
		},
		DescribeOperation: func(input, output any) string {
			in, out := input.(linInput), output.(linOutput)
			s := fmt.Sprintf("%s(%s, %s", linOpNames[in.op], in.res, in.tok.Redacted())
			if in.op == linPreLock {
				s += " → " + in.target
			}
			s += ") = "
			switch out.outcome {
			case linUnknown:
				return s + "unknown"
			case linErr:
				return s + out.class
			}
			return s + fmt.Sprintf("%s @%d", out.sum, out.rev)
		},
		DescribeState: func(st any) string {
			s := st.(linState)
			if s.doc == "" {
				return "initial"
			}
			d, err := DecodeDocument([]byte(s.doc), s.rev)
			if err != nil {
				return err.Error()
			}
			if s.exact {
				return fmt.Sprintf("%s @%d", summarize(d), s.rev)
			}
			return fmt.Sprintf("%s @>%d", summarize(d), s.rev)
		},
	}
	return nm.ToModel()
}

// TestLinearizability checks that the lock operations and the authoritative
// read are linearizable per resource across stream-leader failovers.
func TestLinearizability(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	cl := natstest.RunCluster(t, 3)
	e := mustEnvURL(t, cl.ClientURLs(), 3)
	// Long leases, no convergence delay, no skew and a clock that never
	// moves: no outcome depends on time, so the model can be exact.
	e.lk.cfg.ConvergenceDelay = 0
	e.lk.cfg.ClockSkew = 0
	e.lk.cfg.PreLockLease = time.Hour
	e.lk.cfg.HardDeleteLease = time.Hour
	e.lk.cfg.WriteLease = time.Hour
	cfg := e.lk.cfg

	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			kills := 1 + int(seed%2) // seeds 1 and 3 kill the leader twice
			runLinearizability(t, e, cl, cfg, seed, kills)
		})
	}
}

func runLinearizability(t *testing.T, e *env, cl *cnats.Cluster, cfg LockConfig, seed uint64, kills int) {
	const clients, nres, opsPerClient = 6, 3, 50
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	init := map[string]linState{}
	var resources []Resource
	for i := 0; i < nres; i++ {
		res := Resource{Kind: "conv", ID: fmt.Sprintf("lin-%d-%d", seed, i)}
		d, err := retryUnavailable(ctx, func() (*Document, error) { return e.lk.Register(ctx, res, "us-east") })
		if err != nil {
			t.Fatalf("register %s: %v", res, err)
		}
		resources = append(resources, res)
		init[res.String()] = linState{doc: encodeDoc(d), rev: d.Revision, exact: true}
	}

	start := time.Now()
	var (
		mu      sync.Mutex
		history []porcupine.Operation
		done    atomic.Int64
		unknown atomic.Int64
		applied atomic.Int64
	)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			toks := map[string]Token{}       // the token this client believes it holds per resource
			cached := map[string]*Document{} // its last document per resource
			for i := 0; i < opsPerClient && ctx.Err() == nil; i++ {
				res := resources[rng.IntN(nres)]
				key := res.String()
				in := linInput{op: linOp(rng.IntN(len(linOpNames))), res: key, tok: toks[key]}
				if in.op == linPreLock {
					in.tok = NewToken()
					in.target = []string{"eu-west", "ap-south", "us-east"}[rng.IntN(3)]
				}
				if in.tok == "" { // no token yet: act as a stranger with a fresh one
					in.tok = NewToken()
				}
				var cache *Document
				if rng.IntN(2) == 0 {
					cache = cached[key]
				}
				opCtx, opCancel := context.WithTimeout(ctx, 3*time.Second)
				call := time.Since(start).Nanoseconds()
				var d *Document
				var err error
				switch in.op {
				case linGet:
					d, err = e.store.GetLeader(opCtx, res)
				case linPreLock:
					var g Grant
					g, err = e.lk.PreLock(opCtx, res, in.target, "m-"+string(in.tok[:8]), WithToken(in.tok))
					d = g.Doc
				case linEscalateHD:
					d, err = e.lk.EscalateHardDelete(opCtx, res, in.tok, cache)
				case linEscalateWrite:
					d, err = e.lk.EscalateWrite(opCtx, res, in.tok, cache)
				case linRenew:
					d, err = e.lk.Renew(opCtx, res, in.tok, cache)
				case linSwap:
					d, err = e.lk.Swap(opCtx, res, in.tok, cache)
				case linRelease:
					d, err = e.lk.Release(opCtx, res, in.tok, cache)
				}
				ret := time.Since(start).Nanoseconds()
				opCancel()
				var out linOutput
				switch {
				case err == nil:
					out = linOutput{outcome: linOK, doc: encodeDoc(d), sum: summarize(d), rev: d.Revision}
					cached[key] = d
					if in.op != linGet {
						applied.Add(1)
					}
					switch {
					case in.op == linPreLock:
						toks[key] = in.tok
					case in.op == linSwap || in.op == linRelease:
						delete(toks, key)
					}
				case errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded):
					out = linOutput{outcome: linUnknown}
					unknown.Add(1)
					if in.op == linPreLock { // it may hold: keep the token to finish or release
						toks[key] = in.tok
					}
					if in.op == linGet {
						continue // a read with no answer constrains nothing
					}
					ret = -1 // set to the end of the history below
				default:
					out = linOutput{outcome: linErr, class: errClass(err)}
				}
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
				done.Add(1)
			}
		}(c)
	}

	// Kill the ROUTING stream leader mid-run, wait for a successor, restart.
	total := int64(clients * opsPerClient)
	for k := 0; k < kills; k++ {
		waitFor(ctx, func() bool { return done.Load() >= total*int64(k+1)/int64(kills+2) })
		leader, err := cl.StreamLeader(ctx, "KV_ROUTING")
		if err != nil {
			leader, err = cl.WaitStreamLeader(ctx, "KV_ROUTING")
			if err != nil {
				t.Fatal(err)
			}
		}
		cl.KillNode(leader)
		if _, err := cl.WaitStreamLeader(ctx, "KV_ROUTING"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if err := cl.RestartNode(leader); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("run did not finish: %v", ctx.Err())
	}

	end := time.Since(start).Nanoseconds() + 1
	for i := range history {
		if history[i].Return < 0 {
			history[i].Return = end
		}
	}
	model := linModel(cfg, e.clock.Now(), init)
	res, info := porcupine.CheckOperationsVerbose(model, history, 20*time.Second)
	if res != porcupine.Ok {
		f, err := os.CreateTemp("", "kvrouting-linearizability-*.html")
		if err == nil {
			f.Close()
			if verr := porcupine.VisualizePath(model, info, f.Name()); verr == nil {
				t.Logf("visualization: %s", f.Name())
			}
		}
		t.Fatalf("seed %d: history of %d ops is %s", seed, len(history), res)
	}
	t.Logf("seed %d: %d ops (%d lock ops ok, %d unknown outcome) over %d resources, %d leader kill(s): linearizable",
		seed, len(history), applied.Load(), unknown.Load(), nres, kills)
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) {
	for !cond() && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLinearizabilityModelRejects shows the model is not vacuous: two
// clients both told they hold the pre-lock, or a read that misses an
// acknowledged write, are not linearizable.
func TestLinearizabilityModelRejects(t *testing.T) {
	clk := testutil.NewClock()
	cfg := testLockConfig(clk)
	cfg.ConvergenceDelay, cfg.ClockSkew = 0, 0
	cfg.EnsureDefaults()
	now := clk.Now()
	res := "conv/x"
	d0 := &Document{Resource: res, Primary: Location{Region: "us-east"}, UpdatedAt: now}
	init := map[string]linState{res: {doc: encodeDoc(d0), rev: 1, exact: true}}
	a, b := NewToken(), NewToken()
	lockedBy := func(tok Token, rev uint64) linOutput {
		d, err := preLock(d0.Clone(), now, tok, "eu-west", "m-"+string(tok[:8]), &cfg)
		if err != nil {
			t.Fatal(err)
		}
		return linOutput{outcome: linOK, doc: encodeDoc(d), rev: rev}
	}
	op := func(c int, in linInput, out linOutput, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: in, Output: out, Call: call, Return: ret}
	}
	model := linModel(cfg, now, init)
	good := []porcupine.Operation{
		op(0, linInput{op: linPreLock, res: res, tok: a, target: "eu-west"}, lockedBy(a, 2), 0, 10),
		op(1, linInput{op: linPreLock, res: res, tok: b, target: "eu-west"}, linOutput{outcome: linErr, class: "locked"}, 5, 15),
		op(1, linInput{op: linGet, res: res}, lockedBy(a, 2), 20, 30),
	}
	if !porcupine.CheckOperations(model, good) {
		t.Fatal("a linearizable history was rejected")
	}
	for name, h := range map[string][]porcupine.Operation{
		"two holders": {
			op(0, linInput{op: linPreLock, res: res, tok: a, target: "eu-west"}, lockedBy(a, 2), 0, 10),
			op(1, linInput{op: linPreLock, res: res, tok: b, target: "eu-west"}, lockedBy(b, 3), 20, 30),
		},
		"stale read": {
			op(0, linInput{op: linPreLock, res: res, tok: a, target: "eu-west"}, lockedBy(a, 2), 0, 10),
			op(1, linInput{op: linGet, res: res}, linOutput{outcome: linOK, doc: encodeDoc(d0), rev: 1}, 20, 30),
		},
	} {
		if porcupine.CheckOperations(model, h) {
			t.Errorf("%s: a non-linearizable history was accepted", name)
		}
	}
}

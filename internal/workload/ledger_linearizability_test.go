package workload

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/anishathalye/porcupine"
)

// The ledger against a linearizability checker (porcupine, as
// kvrouting/linearizability_test.go uses it): concurrent users
// post, edit, delete and read their own messages in a linearizable
// in-memory store that loses replies and lands some writes late, recording
// every operation both into a Ledger, as the traffic does, and into a
// porcupine history. For every message and every final read it could have
// returned, the ledger's verdict (internal/check's switch over Messages)
// must match porcupine's: is the history plus that final read linearizable
// under the chat's sequential model?
//
// The match is exact for messages their writer never read. Messages and
// History summarise per message and forget what a read revealed of when an
// uncertain write landed (an uncertain edit seen by a read and overwritten
// by an acked edit cannot show again, yet stays in Maybe), so for read
// messages the ledger must only accept every linearizable outcome (no
// false alarm); its writer-read verdict likewise.

// chatOp is an operation of the model.
type chatOp uint8

const (
	chatPost chatOp = iota
	chatEdit
	chatDelete
	chatRead
)

type chatIn struct {
	op   chatOp
	id   string
	text string // post and edit
}

// chatOut is an operation's result: a write acknowledged, or (unknown) one
// whose reply never came or was an error — it may have applied at any
// instant after its call; a read's found and text.
type chatOut struct {
	unknown bool
	found   bool
	text    string
}

// chatState is one message: never posted, live with text, or deleted (a
// tombstone: the id is never reused).
type chatState struct {
	live, deleted bool
	text          string
}

// chatStep is the chat's sequential specification (app/chat/messages):
// a post creates an unused id, or is an idempotent retry of the same text;
// an edit and a delete apply to a live message only; a delete is final.
// ok is whether the operation succeeds from s.
func chatStep(s chatState, in chatIn) (next chatState, ok bool) {
	switch in.op {
	case chatPost:
		switch {
		case !s.live && !s.deleted:
			return chatState{live: true, text: in.text}, true
		case s.live && s.text == in.text:
			return s, true
		}
	case chatEdit:
		if s.live {
			return chatState{live: true, text: in.text}, true
		}
	case chatDelete:
		if s.live {
			return chatState{deleted: true}, true
		}
	}
	return s, false
}

// chatModel checks one message's operations (the tests partition by id
// themselves). An unknown write is stepped as if it applied where it is
// linearized; that it never applied is covered by linearizing it after
// everything else, which its unbounded Return allows.
var chatModel = porcupine.Model{
	Init: func() any { return chatState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(chatState), input.(chatIn), output.(chatOut)
		if in.op == chatRead {
			return out.found == s.live && (!s.live || out.text == s.text), s
		}
		next, ok := chatStep(s, in)
		return ok || out.unknown, next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(chatIn), output.(chatOut)
		switch {
		case in.op == chatRead:
			return fmt.Sprintf("read %s -> found=%v %q", in.id, out.found, out.text)
		case out.unknown:
			return fmt.Sprintf("%s %s %q -> unknown", [...]string{"post", "edit", "delete"}[in.op], in.id, in.text)
		}
		return fmt.Sprintf("%s %s %q -> acked", [...]string{"post", "edit", "delete"}[in.op], in.id, in.text)
	},
}

// fakeStore is a linearizable message store: each operation applies
// atomically under mu.
type fakeStore struct {
	mu   sync.Mutex
	msgs map[string]chatState
}

func (f *fakeStore) apply(in chatIn) (ok bool, s chatState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in.op == chatRead {
		return true, f.msgs[in.id]
	}
	next, ok := chatStep(f.msgs[in.id], in)
	f.msgs[in.id] = next
	return ok, next
}

// chatRun is one recorded run: per message id, its conversation, its
// operations (unknown ones with Return still unset: -1), the texts ever
// written to it, and its final state in the store.
type chatRun struct {
	mu    sync.Mutex
	conv  map[string]string
	ops   map[string][]porcupine.Operation
	texts map[string][]string
	final map[string]chatState
	clock atomic.Int64
}

func (r *chatRun) record(id string, op porcupine.Operation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops[id] = append(r.ops[id], op)
}

// runUsers drives users concurrent users, each with its own generator
// seeded from (seed, user), against one store and one recorder. Each user
// behaves as the traffic does (traffic.go): it posts new ids; edits,
// deletes and reads only its own messages; stops touching a message whose
// post was not acknowledged or whose delete was; records every error as an
// unknown outcome. A write whose reply is lost applied now, lands later
// (at one of the user's later steps, or after the run), or never.
func runUsers(rec messageRecorder, seed uint64, users, steps int) *chatRun {
	run := &chatRun{conv: map[string]string{}, ops: map[string][]porcupine.Operation{}, texts: map[string][]string{}}
	store := &fakeStore{msgs: map[string]chatState{}}
	var late sync.Mutex
	var leftover []chatIn // writes still to land after the run
	var wg sync.WaitGroup
	for u := range users {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(u)))
			var own, gone []string // acked posts not acked deleted; acked deletes
			var pending []chatIn   // this user's writes that will land late
			// unknowns counts each message's writes of unknown outcome; at
			// maxUnknown the user leaves the message alone. Porcupine's
			// search grows with 2^(unknown writes), which never return; a
			// message deleted by a late delete would otherwise collect an
			// unknown (failed) write at every later edit.
			unknowns := map[string]int{}
			read := map[string]bool{}
			n := 0
			write := func(conv string, in chatIn) (acked bool) {
				call := run.clock.Add(1)
				mode := rng.IntN(10) // 0-5 reply arrives, 6 applied but reply lost, 7-8 lands late, 9 never applies
				ok := false
				switch {
				case mode <= 6:
					ok, _ = store.apply(in)
				case mode <= 8:
					pending = append(pending, in)
				}
				ret := run.clock.Add(1)
				acked = ok && mode <= 5
				op := porcupine.Operation{ClientId: u, Input: in, Call: call, Output: chatOut{unknown: !acked}, Return: ret}
				if !acked {
					op.Return = -1 // unbounded: set past the final read
				}
				run.record(in.id, op)
				if !acked {
					if unknowns[in.id]++; unknowns[in.id] == maxUnknown {
						if i := slices.Index(own, in.id); i >= 0 {
							own = slices.Delete(own, i, i+1)
						}
					}
				}
				switch {
				case !acked && in.op == chatDelete:
					rec.Uncertain(conv, in.id, "", true)
				case !acked:
					rec.Uncertain(conv, in.id, in.text, false)
				case in.op == chatDelete:
					rec.AckedDelete(conv, in.id)
				default:
					rec.Acked(conv, in.id, in.text)
				}
				return acked
			}
			convOf := map[string]string{}
			for range steps {
				if len(pending) > 0 && rng.IntN(3) == 0 {
					i := rng.IntN(len(pending))
					store.apply(pending[i])
					pending = slices.Delete(pending, i, i+1)
				}
				x := rng.IntN(100)
				switch {
				case x < 30 || len(own) == 0:
					n++
					id, conv := fmt.Sprintf("u%d-%d", u, n), fmt.Sprintf("c%d", rng.IntN(2))
					text := fmt.Sprintf("post %d by u%d", n, u)
					convOf[id] = conv
					read[id] = rng.IntN(2) == 0 // half the messages are never read: exact verdicts
					run.mu.Lock()
					run.conv[id] = conv
					run.texts[id] = append(run.texts[id], text)
					run.mu.Unlock()
					if write(conv, chatIn{op: chatPost, id: id, text: text}) {
						own = append(own, id)
					}
				case x < 60:
					id := own[rng.IntN(len(own))]
					text := fmt.Sprintf("edit %d of %s", rng.IntN(1000), id)
					run.mu.Lock()
					run.texts[id] = append(run.texts[id], text)
					run.mu.Unlock()
					write(convOf[id], chatIn{op: chatEdit, id: id, text: text})
				case x < 75:
					i := rng.IntN(len(own))
					id := own[i]
					if write(convOf[id], chatIn{op: chatDelete, id: id}) {
						own = slices.Delete(own, i, i+1)
						gone = append(gone, id)
					}
				default:
					var ids []string
					for _, id := range append(slices.Clone(own), gone...) {
						if read[id] {
							ids = append(ids, id)
						}
					}
					if len(ids) == 0 {
						continue
					}
					id := ids[rng.IntN(len(ids))]
					in := chatIn{op: chatRead, id: id}
					call := run.clock.Add(1)
					_, s := store.apply(in)
					ret := run.clock.Add(1)
					run.record(id, porcupine.Operation{ClientId: u, Input: in, Call: call, Output: chatOut{found: s.live, text: s.text}, Return: ret})
					rec.ReadByWriter(convOf[id], id, s.live, s.text)
				}
			}
			late.Lock()
			leftover = append(leftover, pending...)
			late.Unlock()
		})
	}
	wg.Wait()
	// Half the writes still pending land after the run, in an order fixed
	// by the seed; the rest never do.
	slices.SortFunc(leftover, func(a, b chatIn) int { return cmpChatIn(a, b) })
	rng := rand.New(rand.NewPCG(seed, 1<<32))
	for _, in := range leftover {
		if rng.IntN(2) == 0 {
			store.apply(in)
		}
	}
	run.final = store.msgs
	return run
}

func cmpChatIn(a, b chatIn) int {
	if a.id != b.id {
		if a.id < b.id {
			return -1
		}
		return 1
	}
	switch {
	case a.op != b.op:
		return int(a.op) - int(b.op)
	case a.text < b.text:
		return -1
	case a.text > b.text:
		return 1
	}
	return 0
}

// disagreements compares, for every message of run, the ledger's verdicts
// with porcupine's and returns where they differ. It fails t at once if
// the run itself is not linearizable (the store or the model is wrong, not
// the ledger).
func disagreements(t *testing.T, rec messageRecorder, run *chatRun) []string {
	t.Helper()
	end := run.clock.Load()
	var out []string
	msgs, hists := map[string]map[string]Msg{}, map[string]map[string][]Event{}
	for _, id := range slices.Sorted(maps.Keys(run.ops)) {
		conv := run.conv[id]
		if msgs[conv] == nil {
			msgs[conv], hists[conv] = rec.Messages(conv), rec.History(conv)
		}
		ops := slices.Clone(run.ops[id])
		hasReads := false
		for i := range ops {
			if ops[i].Return < 0 {
				ops[i].Return = end + 3 // past the final read at end+1..end+2
			}
			hasReads = hasReads || ops[i].Input.(chatIn).op == chatRead
		}
		if hasReads {
			if !porcupine.CheckOperations(chatModel, ops) {
				t.Fatalf("seeded run of %s not linearizable without a final read: %+v", id, ops)
			}
			if i := writerReadsAccept(hists[conv][id]); i >= 0 {
				out = append(out, fmt.Sprintf("%s/%s: linearizable writer reads, ledger finds read %d stale in %+v", conv, id, i, hists[conv][id]))
			}
		}
		st, known := msgs[conv][id]
		final := run.final[id]
		cands := []chatOut{{}, {found: true, text: "never written"}}
		for _, text := range run.texts[id] {
			cands = append(cands, chatOut{found: true, text: text})
		}
		for _, c := range cands {
			h := append(slices.Clone(ops), porcupine.Operation{ClientId: 99, Input: chatIn{op: chatRead, id: id}, Call: end + 1, Output: c, Return: end + 2})
			lin := porcupine.CheckOperations(chatModel, h)
			led := finalAccepts(st, known, c.found, c.text)
			if c.found == final.live && (!c.found || c.text == final.text) && !lin {
				t.Fatalf("%s: the store's own final state %+v not linearizable: %+v", id, final, h)
			}
			if lin != led && (!hasReads || lin) {
				out = append(out, fmt.Sprintf("%s/%s: final found=%v %q: porcupine linearizable=%v, ledger accepts=%v (ledger %+v, known %v; ops %s)",
					conv, id, c.found, c.text, lin, led, st, known, describe(ops)))
			}
		}
	}
	return out
}

func describe(ops []porcupine.Operation) string {
	s := ""
	for _, op := range ops {
		s += fmt.Sprintf("[%d,%d] %s; ", op.Call, op.Return, chatModel.DescribeOperation(op.Input, op.Output))
	}
	return s
}

// maxUnknown bounds the writes of unknown outcome per message.
const maxUnknown = 4

// linSeeds are the fixed seeds of the agreement runs: enough that every
// broken variant below meets the situation it gets wrong.
const linSeeds, linUsers, linSteps = 12, 4, 60

// agreement records linSeeds runs into fresh recorders from mk and returns
// the disagreements of all.
func agreement(t *testing.T, mk func() messageRecorder) (bad []string, messages int) {
	t.Helper()
	for seed := range uint64(linSeeds) {
		rec := mk()
		run := runUsers(rec, seed, linUsers, linSteps)
		messages += len(run.ops)
		for _, d := range disagreements(t, rec, run) {
			bad = append(bad, fmt.Sprintf("seed %d: %s", seed, d))
		}
	}
	return bad, messages
}

// The ledger's verdict on every final read, and on its writer's reads,
// agrees with porcupine's linearizability verdict on random concurrent
// histories.
func TestLedgerVerdictAgreesWithPorcupineOnFinalReads(t *testing.T) {
	bad, n := agreement(t, func() messageRecorder { return NewLedger() })
	if len(bad) > 0 {
		t.Fatalf("%d disagreements over %d messages, first: %s", len(bad), n, bad[0])
	}
	if n < linSeeds*linUsers*5 {
		t.Fatalf("only %d messages over %d seeds: the runs exercise too little", n, linSeeds)
	}
}

// Broken variants of the ledger, each wrong in one way a checker must
// notice. They wrap a real Ledger (same package: they may reach its state).

// dropsMaybe reports no Maybe texts: an uncertain write that landed looks
// lost.
type dropsMaybe struct{ *Ledger }

func (b dropsMaybe) Messages(conv string) map[string]Msg {
	out := b.Ledger.Messages(conv)
	for id, m := range out {
		m.Maybe = nil
		out[id] = m
	}
	return out
}

// uncertainDeleteAsAcked records a delete of unknown outcome as
// acknowledged: a message whose delete never applied looks resurrected.
type uncertainDeleteAsAcked struct{ *Ledger }

func (b uncertainDeleteAsAcked) Uncertain(conv, id, text string, deleted bool) {
	if deleted {
		b.AckedDelete(conv, id)
		return
	}
	b.Ledger.Uncertain(conv, id, text, deleted)
}

// uncertainPostAsAcked records a post of unknown outcome as acknowledged:
// a post that never applied looks lost.
type uncertainPostAsAcked struct{ *Ledger }

func (b uncertainPostAsAcked) Uncertain(conv, id, text string, deleted bool) {
	if _, known := b.Messages(conv)[id]; !known && !deleted {
		b.Acked(conv, id, text)
		return
	}
	b.Ledger.Uncertain(conv, id, text, deleted)
}

// forgetsOnAck is the ledger before its fix: an acknowledged write drops
// the outcomes earlier uncertain writes may still have when they land late.
type forgetsOnAck struct{ *Ledger }

func (b forgetsOnAck) Acked(conv, id, text string) {
	b.Ledger.Acked(conv, id, text)
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.msgs[conv][id]
	m.Maybe, m.MaybeDeleted = nil, false
}

// ackedDeleteAsUncertain errs the other way: an acknowledged delete is
// recorded as of unknown outcome, so a resurrected message is accepted.
// Only the exact comparison (messages never read) can catch a ledger that
// is too lenient.
type ackedDeleteAsUncertain struct{ *Ledger }

func (b ackedDeleteAsUncertain) AckedDelete(conv, id string) { b.Uncertain(conv, id, "", true) }

// The agreement check fails on every broken variant: it is not vacuous.
func TestLedgerVerdictDisagreesWithPorcupineOnBrokenLedgers(t *testing.T) {
	for _, tc := range []struct {
		name string
		mk   func() messageRecorder
	}{
		{"drops Maybe texts", func() messageRecorder { return dropsMaybe{NewLedger()} }},
		{"uncertain delete recorded as acked", func() messageRecorder { return uncertainDeleteAsAcked{NewLedger()} }},
		{"uncertain post recorded as acked", func() messageRecorder { return uncertainPostAsAcked{NewLedger()} }},
		{"acked write forgets earlier uncertain outcomes (the fixed bug)", func() messageRecorder { return forgetsOnAck{NewLedger()} }},
		{"acked delete recorded as uncertain (too lenient)", func() messageRecorder { return ackedDeleteAsUncertain{NewLedger()} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad, n := agreement(t, tc.mk)
			if len(bad) == 0 {
				t.Fatalf("broken ledger %q agrees with porcupine on all %d messages: the check cannot see it", tc.name, n)
			}
			t.Logf("%d disagreements, e.g. %s", len(bad), bad[0])
		})
	}
}

package workload

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cutover/cutover/app/api"
)

// lop is one operation a test records into a ledger, on conversation lconv
// unless conv is set.
type lop struct {
	kind  lopKind
	conv  string
	id    string
	text  string
	found bool
}

type lopKind uint8

const (
	lAck    lopKind = iota // Acked
	lAckDel                // AckedDelete
	lUnc                   // Uncertain post or edit
	lUncDel                // Uncertain delete
	lRead                  // ReadByWriter
)

const lconv = "c1"

func ack(id, text string) lop         { return lop{kind: lAck, id: id, text: text} }
func ackDel(id string) lop            { return lop{kind: lAckDel, id: id} }
func unc(id, text string) lop         { return lop{kind: lUnc, id: id, text: text} }
func uncDel(id string) lop            { return lop{kind: lUncDel, id: id} }
func read(id string, text string) lop { return lop{kind: lRead, id: id, found: true, text: text} }
func readMissing(id string) lop       { return lop{kind: lRead, id: id} }
func (o lop) in(conv string) lop      { o.conv = conv; return o }
func (o lop) String() string {
	return fmt.Sprintf("%s(%s/%s %q found=%v)", [...]string{"ack", "ackDel", "unc", "uncDel", "read"}[o.kind], o.conv, o.id, o.text, o.found)
}
func recordAll(l messageRecorder, ops ...lop) {
	for _, o := range ops {
		conv := o.conv
		if conv == "" {
			conv = lconv
		}
		switch o.kind {
		case lAck:
			l.Acked(conv, o.id, o.text)
		case lAckDel:
			l.AckedDelete(conv, o.id)
		case lUnc:
			l.Uncertain(conv, o.id, o.text, false)
		case lUncDel:
			l.Uncertain(conv, o.id, "", true)
		case lRead:
			l.ReadByWriter(conv, o.id, o.found, o.text)
		}
	}
}

// messageRecorder is what the traffic records of message operations and
// what a checker reads back: *Ledger, or a deliberately broken variant of
// it (ledger_linearizability_test.go).
type messageRecorder interface {
	Acked(conv, id, text string)
	AckedDelete(conv, id string)
	Uncertain(conv, id, text string, deleted bool)
	ReadByWriter(conv, id string, found bool, text string)
	Messages(conv string) map[string]Msg
	History(conv string) map[string][]Event
}

// finalAccepts is internal/check's final-state verdict (Config.check: the
// switch over Ledger.Messages) for one message: whether a final read that
// found it with text, or did not find it, is acceptable. known is whether
// the ledger has the message at all (a message it does not know, found,
// is "unacknowledged"). It is mirrored here because internal/check imports
// this package; keep the two in step.
func finalAccepts(st Msg, known, found bool, text string) bool {
	if !known {
		return !found
	}
	switch {
	case !found && (st.Deleted || st.MaybeDeleted):
		return true
	case found && !st.Deleted && text == st.Text:
		return true
	case found && slices.Contains(st.Maybe, text):
		return true // counted as Uncertain, not as a violation
	}
	return false // Resurrected or LostWrites
}

// writerReadsAccept is internal/check's writer-read verdict (writerReads)
// on one message's History: every read shows the state after the last
// acknowledged operation before it, or one a write of unknown outcome
// before it could have left. It returns the index of the first stale read,
// or -1.
func writerReadsAccept(es []Event) int {
	type state struct {
		found bool
		text  string
	}
	cur := state{}
	var maybe []state
	for i, e := range es {
		switch e.Kind {
		case EventWrite, EventDelete:
			s := state{found: e.Kind == EventWrite, text: e.Text}
			if e.Acked {
				cur = s
			} else {
				maybe = append(maybe, s)
			}
		case EventRead:
			obs := state{found: e.Found, text: e.Text}
			if obs != cur && !slices.Contains(maybe, obs) {
				return i
			}
		}
	}
	return -1
}

// The state Messages reports after a sequence of one writer's operations:
// the last acknowledged state, plus every outcome a write of unknown
// outcome may still have left.
func TestLedgerMessagesReportAckedStatePlusPossibleOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []lop
		want map[string]Msg
	}{
		{"empty ledger knows nothing", nil, map[string]Msg{}},
		{"acked post", []lop{ack("m", "a")}, map[string]Msg{"m": {Text: "a"}}},
		{"acked edit replaces acked text", []lop{ack("m", "a"), ack("m", "b")}, map[string]Msg{"m": {Text: "b"}}},
		{"acked delete", []lop{ack("m", "a"), ackDel("m")}, map[string]Msg{"m": {Deleted: true}}},
		{"uncertain post of a new id: absent or its text",
			[]lop{unc("m", "a")}, map[string]Msg{"m": {Deleted: true, Maybe: []string{"a"}}}},
		{"uncertain edit after acked post keeps acked text and adds a Maybe",
			[]lop{ack("m", "a"), unc("m", "b")}, map[string]Msg{"m": {Text: "a", Maybe: []string{"b"}}}},
		{"uncertain edits accumulate in order",
			[]lop{ack("m", "a"), unc("m", "b"), unc("m", "c")}, map[string]Msg{"m": {Text: "a", Maybe: []string{"b", "c"}}}},
		{"uncertain delete after acked post keeps acked text",
			[]lop{ack("m", "a"), uncDel("m")}, map[string]Msg{"m": {Text: "a", MaybeDeleted: true}}},
		// A delete is terminal (an edit of a deleted message fails, a
		// deleted id is never posted again), so nothing uncertain before
		// it can show afterwards.
		{"acked delete after uncertain edit leaves only absence",
			[]lop{ack("m", "a"), unc("m", "b"), ackDel("m")}, map[string]Msg{"m": {Deleted: true}}},
		// A write of unknown outcome may land late, after the writer's
		// next acknowledged write (the Event doc; check's writerReads
		// keeps it possible too), so an acked write keeps it.
		{"uncertain edit stays possible after a later acked edit",
			[]lop{ack("m", "a"), unc("m", "b"), ack("m", "c")}, map[string]Msg{"m": {Text: "c", Maybe: []string{"b"}}}},
		{"uncertain delete stays possible after a later acked edit",
			[]lop{ack("m", "a"), uncDel("m"), ack("m", "c")}, map[string]Msg{"m": {Text: "c", MaybeDeleted: true}}},
		{"retried post acked after an uncertain one",
			[]lop{unc("m", "a"), ack("m", "a")}, map[string]Msg{"m": {Text: "a", Maybe: []string{"a"}}}},
		{"reads change nothing", []lop{ack("m", "a"), read("m", "a"), readMissing("x")}, map[string]Msg{"m": {Text: "a"}}},
		{"messages are independent",
			[]lop{ack("m", "a"), unc("n", "b"), ack("o", "c"), ackDel("o")},
			map[string]Msg{"m": {Text: "a"}, "n": {Deleted: true, Maybe: []string{"b"}}, "o": {Deleted: true}}},
		{"conversations are independent",
			[]lop{ack("m", "a"), ack("m", "z").in("c2")}, map[string]Msg{"m": {Text: "a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger()
			recordAll(l, tc.ops...)
			if got := l.Messages(lconv); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("after %v: Messages = %+v, want %+v", tc.ops, got, tc.want)
			}
		})
	}
}

// The check's final-state verdict on what the ledger reports: every
// outcome the operations may have left is accepted, and nothing else.
func TestLedgerFinalVerdictAcceptsExactlyThePossibleOutcomes(t *testing.T) {
	type obs struct {
		found bool
		text  string
	}
	absent := obs{}
	shows := func(text string) obs { return obs{true, text} }
	for _, tc := range []struct {
		name         string
		ops          []lop
		accept, deny []obs
	}{
		{"acked post must show", []lop{ack("m", "a")}, []obs{shows("a")}, []obs{absent, shows("b")}},
		{"acked edit must show, not the old text", []lop{ack("m", "a"), ack("m", "b")}, []obs{shows("b")}, []obs{shows("a"), absent}},
		{"acked delete must stay absent", []lop{ack("m", "a"), ackDel("m")}, []obs{absent}, []obs{shows("a")}},
		{"uncertain post of a new id makes absence acceptable", []lop{unc("m", "a")}, []obs{absent, shows("a")}, []obs{shows("b")}},
		{"uncertain edit: old or new text, not absence", []lop{ack("m", "a"), unc("m", "b")}, []obs{shows("a"), shows("b")}, []obs{absent, shows("c")}},
		{"uncertain delete: text or absence", []lop{ack("m", "a"), uncDel("m")}, []obs{shows("a"), absent}, []obs{shows("b")}},
		{"uncertain edit landing after a later acked edit", []lop{ack("m", "a"), unc("m", "b"), ack("m", "c")}, []obs{shows("c"), shows("b")}, []obs{shows("a"), absent}},
		{"uncertain delete landing after a later acked edit", []lop{ack("m", "a"), uncDel("m"), ack("m", "c")}, []obs{shows("c"), absent}, []obs{shows("a")}},
		{"acked delete after uncertain edit: the edit cannot resurrect it", []lop{ack("m", "a"), unc("m", "b"), ackDel("m")}, []obs{absent}, []obs{shows("a"), shows("b")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger()
			recordAll(l, tc.ops...)
			st, known := l.Messages(lconv)["m"]
			for _, o := range tc.accept {
				if !finalAccepts(st, known, o.found, o.text) {
					t.Fatalf("after %v (ledger %+v): final %+v rejected, want accepted", tc.ops, st, o)
				}
			}
			for _, o := range tc.deny {
				if finalAccepts(st, known, o.found, o.text) {
					t.Fatalf("after %v (ledger %+v): final %+v accepted, want rejected", tc.ops, st, o)
				}
			}
		})
	}
	// A message the ledger never heard of may only be absent.
	if finalAccepts(Msg{}, false, true, "x") || !finalAccepts(Msg{}, false, false, "") {
		t.Fatalf("unknown message: want absent accepted and present rejected")
	}
}

// History holds, for messages their writer read, every operation and read
// in the writer's order, with unknown outcomes not Acked.
func TestLedgerHistoryKeepsWriterOrderOfReadMessagesOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []lop
		want map[string][]Event
	}{
		{"unread messages have no history", []lop{ack("m", "a"), unc("n", "b"), ackDel("m")}, map[string][]Event{}},
		{"one read message", []lop{ack("m", "a"), unc("m", "b"), read("m", "b"), uncDel("m"), ack("m", "c"), ackDel("m"), readMissing("m")},
			map[string][]Event{"m": {
				{Kind: EventWrite, Acked: true, Text: "a"},
				{Kind: EventWrite, Text: "b"},
				{Kind: EventRead, Found: true, Text: "b"},
				{Kind: EventDelete},
				{Kind: EventWrite, Acked: true, Text: "c"},
				{Kind: EventDelete, Acked: true},
				{Kind: EventRead},
			}}},
		{"only the read one of two", []lop{ack("m", "a"), ack("n", "b"), read("n", "b")},
			map[string][]Event{"n": {{Kind: EventWrite, Acked: true, Text: "b"}, {Kind: EventRead, Found: true, Text: "b"}}}},
		{"a read of a message never written", []lop{readMissing("x")}, map[string][]Event{"x": {{Kind: EventRead}}}},
		{"other conversations stay out", []lop{ack("m", "a").in("c2"), read("m", "a").in("c2")}, map[string][]Event{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger()
			recordAll(l, tc.ops...)
			if got := l.History(lconv); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("after %v: History = %+v, want %+v", tc.ops, got, tc.want)
			}
		})
	}
}

// The check's writer-read verdict on History: read-your-writes, no deleted
// message found again, and a write of unknown outcome stays possible.
func TestLedgerHistoryVerdictOnWriterReads(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ops       []lop
		wantStale int // index of the first stale read in History, or -1
	}{
		{"reads its acked post", []lop{ack("m", "a"), read("m", "a")}, -1},
		{"misses its acked post", []lop{ack("m", "a"), readMissing("m")}, 1},
		{"reads an old text after an acked edit", []lop{ack("m", "a"), ack("m", "b"), read("m", "a")}, 2},
		{"finds its acked delete again", []lop{ack("m", "a"), ackDel("m"), read("m", "a")}, 2},
		{"uncertain post: either", []lop{unc("m", "a"), readMissing("m"), read("m", "a")}, -1},
		{"uncertain edit may land after a later acked edit", []lop{ack("m", "a"), unc("m", "b"), ack("m", "c"), read("m", "b"), read("m", "c")}, -1},
		{"uncertain delete may land late", []lop{ack("m", "a"), uncDel("m"), ack("m", "c"), readMissing("m")}, -1},
		{"a text never written", []lop{ack("m", "a"), unc("m", "b"), read("m", "z")}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger()
			recordAll(l, tc.ops...)
			h := l.History(lconv)["m"]
			if got := writerReadsAccept(h); got != tc.wantStale {
				t.Fatalf("after %v: first stale read of %+v at %d, want %d", tc.ops, h, got, tc.wantStale)
			}
		})
	}
}

// Conversations lists, sorted, those with a ledgered post, edit or delete
// (what the final-state check walks); reads and reactions alone add none.
func TestLedgerConversationsSortedWithMessageWritesOnly(t *testing.T) {
	l := NewLedger()
	if got := l.Conversations(); len(got) != 0 {
		t.Fatalf("empty ledger: Conversations = %v", got)
	}
	recordAll(l, ack("m", "a").in("zz"), unc("m", "a").in("aa"), ackDel("m").in("mm"), ack("m", "b").in("zz"), readMissing("m").in("reads-only"))
	l.AckedReaction("reactions-only", ReactionKey{"m", "u", "tada"}, true)
	if got, want := l.Conversations(), []string{"aa", "mm", "zz"}; !slices.Equal(got, want) {
		t.Fatalf("Conversations = %v, want %v", got, want)
	}
}

// Reactions report the last acknowledged state, or Maybe when a change of
// unknown outcome came after it (either state then acceptable).
func TestLedgerReactionsReportLastAckedStateOrMaybe(t *testing.T) {
	k := ReactionKey{Message: "m", User: "u", Emoji: "tada"}
	k2 := ReactionKey{Message: "m", User: "v", Emoji: "tada"}
	type rop struct {
		k       ReactionKey
		acked   bool
		present bool
	}
	add, remove, uncertain := func(k ReactionKey) rop { return rop{k, true, true} },
		func(k ReactionKey) rop { return rop{k, true, false} },
		func(k ReactionKey) rop { return rop{k: k} }
	for _, tc := range []struct {
		name string
		ops  []rop
		want map[ReactionKey]Reaction
	}{
		{"none", nil, map[ReactionKey]Reaction{}},
		{"acked add", []rop{add(k)}, map[ReactionKey]Reaction{k: {Present: true}}},
		{"acked remove after add", []rop{add(k), remove(k)}, map[ReactionKey]Reaction{k: {}}},
		{"uncertain after acked add keeps Present", []rop{add(k), uncertain(k)}, map[ReactionKey]Reaction{k: {Present: true, Maybe: true}}},
		{"uncertain first", []rop{uncertain(k)}, map[ReactionKey]Reaction{k: {Maybe: true}}},
		// Documented: only the last change's outcome may be unknown.
		{"acked change after uncertain settles it", []rop{uncertain(k), remove(k)}, map[ReactionKey]Reaction{k: {}}},
		{"keys independent", []rop{add(k), uncertain(k2)}, map[ReactionKey]Reaction{k: {Present: true}, k2: {Maybe: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := NewLedger()
			for _, o := range tc.ops {
				if o.acked {
					l.AckedReaction(lconv, o.k, o.present)
				} else {
					l.UncertainReaction(lconv, o.k)
				}
			}
			l.AckedReaction("c2", k, true) // another conversation stays out
			if got := l.Reactions(lconv); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("after %+v: Reactions = %+v, want %+v", tc.ops, got, tc.want)
			}
		})
	}
}

// ServedWrites, Refusals, TimedOps and ListReads return what was recorded
// for the one conversation, in recording order.
func TestLedgerServedRefusedTimedAndListReadsKeepOrderPerConversation(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0) // fixed instants: no wall clock
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	l := NewLedger()
	for _, tc := range []struct {
		name string
		get  func() any
		want any
	}{
		{"ServedWrites empty", func() any { return l.ServedWrites(lconv) }, []Served(nil)},
		{"Refusals empty", func() any { return l.Refusals(lconv) }, []Refusal(nil)},
		{"TimedOps empty", func() any { return l.TimedOps(lconv) }, []TimedOp(nil)},
		{"ListReads empty", func() any { return l.ListReads(lconv) }, []ListRead(nil)},
	} {
		if got := tc.get(); !reflect.DeepEqual(got, tc.want) {
			t.Fatalf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
	l.ServedWrite(lconv, "eu", 0, at(0), at(5), "post m1")
	l.ServedWrite("c2", "us", 1, at(1), at(2), "post x")
	l.ServedWrite(lconv, "us", 1, at(3), at(4), "edit m1")
	l.Refused(lconv, 1, Interval{Start: at(6), End: at(7), Why: "locked"})
	l.Refused("c2", 0, Interval{Start: at(8), End: at(9)})
	op1 := TimedOp{ID: "m1", Text: "a", Start: at(0), End: at(5), Acked: true, Region: "eu"}
	op2 := TimedOp{ID: "m1", Delete: true, Start: at(6), End: at(9)}
	l.TimedOp(lconv, op1)
	l.TimedOp("c2", TimedOp{ID: "x"})
	l.TimedOp(lconv, op2)
	lr := ListRead{Start: at(10), End: at(11), Items: map[string]string{"m1": "a"}, Region: "eu", API: 1}
	l.ListRead(lconv, lr)
	l.ListRead("c2", ListRead{})
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"ServedWrites", l.ServedWrites(lconv), []Served{
			{Region: "eu", API: 0, Start: at(0), End: at(5), What: "post m1"},
			{Region: "us", API: 1, Start: at(3), End: at(4), What: "edit m1"}}},
		{"Refusals", l.Refusals(lconv), []Refusal{{Interval: Interval{Start: at(6), End: at(7), Why: "locked"}, API: 1}}},
		{"TimedOps", l.TimedOps(lconv), []TimedOp{op1, op2}},
		{"ListReads", l.ListReads(lconv), []ListRead{lr}},
		{"nothing in an unknown conversation", l.TimedOps("nope"), []TimedOp(nil)},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Fatalf("%s: got %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
}

// What the ledger returns is the caller's: changing it, or recording more
// afterwards, changes neither the ledger nor the copy.
func TestLedgerReturnsCopiesIndependentOfLaterWrites(t *testing.T) {
	l := NewLedger()
	k := ReactionKey{"m", "u", "tada"}
	recordAll(l, ack("m", "a"), unc("m", "b"), read("m", "b"))
	l.AckedReaction(lconv, k, true)
	l.ServedWrite(lconv, "eu", 0, time.Time{}, time.Time{}, "post m")
	l.Refused(lconv, 0, Interval{Why: "locked"})
	l.TimedOp(lconv, TimedOp{ID: "m", Text: "a"})
	l.ListRead(lconv, ListRead{Region: "eu", Items: map[string]string{"m": "a"}})

	msgs, hist, reacts := l.Messages(lconv), l.History(lconv), l.Reactions(lconv)
	served, refused, ops, lists := l.ServedWrites(lconv), l.Refusals(lconv), l.TimedOps(lconv), l.ListReads(lconv)
	// Later writes to the ledger.
	recordAll(l, unc("m", "c"), uncDel("m"), read("m", "c"), ack("n", "x"))
	l.UncertainReaction(lconv, k)
	l.ServedWrite(lconv, "us", 1, time.Time{}, time.Time{}, "edit m")
	l.Refused(lconv, 1, Interval{})
	l.TimedOp(lconv, TimedOp{ID: "m", Text: "c"})
	l.ListRead(lconv, ListRead{Region: "us"})
	if m := msgs["m"]; len(msgs) != 1 || m.Text != "a" || !slices.Equal(m.Maybe, []string{"b"}) || m.MaybeDeleted {
		t.Fatalf("Messages copy changed by later writes: %+v", msgs)
	}
	if len(hist["m"]) != 3 {
		t.Fatalf("History copy changed by later writes: %+v", hist)
	}
	if reacts[k] != (Reaction{Present: true}) {
		t.Fatalf("Reactions copy changed by later writes: %+v", reacts)
	}
	if len(served) != 1 || len(refused) != 1 || len(ops) != 1 || len(lists) != 1 {
		t.Fatalf("slice copies changed by later writes: served %+v refused %+v ops %+v lists %+v", served, refused, ops, lists)
	}
	// Changes to the copies.
	mm := msgs["m"]
	mm.Maybe[0] = "mutated"
	hist["m"][0].Text = "mutated"
	reacts[k] = Reaction{}
	served[0].Region, refused[0].Why, ops[0].Text, lists[0].Region = "x", "x", "x", "x"
	if m := l.Messages(lconv)["m"]; m.Maybe[0] != "b" {
		t.Fatalf("Messages' Maybe shares its array with the ledger: %+v", m)
	}
	if e := l.History(lconv)["m"][0]; e.Text != "a" {
		t.Fatalf("History shares its events with the ledger: %+v", e)
	}
	if r := l.Reactions(lconv)[k]; r != (Reaction{Present: true, Maybe: true}) {
		t.Fatalf("Reactions shares with the ledger: %+v", r)
	}
	if l.ServedWrites(lconv)[0].Region != "eu" || l.Refusals(lconv)[0].Why != "locked" || l.TimedOps(lconv)[0].Text != "a" || l.ListReads(lconv)[0].Region != "eu" {
		t.Fatalf("a slice copy shares its array with the ledger")
	}
}

// The traffic's helpers record nothing, and do not panic, without a ledger
// (TrafficConfig.Ledger nil).
func TestNilLedgerHelpersRecordNothing(t *testing.T) {
	var l *Ledger
	l.ack("c", "m", "a")
	l.ackDelete("c", "m")
	l.uncertain("c", "m", "a", false)
	l.uncertain("c", "m", "", true)
	l.readByWriter("c", "m", true, "a")
	l.ackReaction("c", ReactionKey{}, true)
	l.uncertainReaction("c", ReactionKey{})
}

// Users record concurrently while a checker reads: no race (run with
// -race), and nothing recorded is lost or misplaced.
func TestLedgerConcurrentUseIsSafeAndLosesNothing(t *testing.T) {
	const users, perUser = 8, 200
	l := NewLedger()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, c := range l.Conversations() {
				_ = l.Messages(c)
				_ = l.History(c)
				_ = l.Reactions(c)
				_ = l.ServedWrites(c)
				_ = l.Refusals(c)
				_ = l.TimedOps(c)
				_ = l.ListReads(c)
			}
		}
	})
	for u := range users {
		wg.Go(func() {
			conv := fmt.Sprintf("c%d", u%3)
			for i := range perUser {
				id := fmt.Sprintf("u%d-%d", u, i)
				text := "t" + id
				switch i % 4 {
				case 0:
					l.Acked(conv, id, text)
				case 1:
					l.Acked(conv, id, text)
					l.AckedDelete(conv, id)
				case 2:
					l.Uncertain(conv, id, text, false)
				case 3:
					l.Acked(conv, id, text)
					l.Uncertain(conv, id, "", true)
				}
				l.ReadByWriter(conv, id, true, text)
				k := ReactionKey{Message: "m", User: id, Emoji: "tada"}
				if i%2 == 0 {
					l.AckedReaction(conv, k, true)
				} else {
					l.UncertainReaction(conv, k)
				}
				l.ServedWrite(conv, "eu", u, time.Time{}, time.Time{}, id)
				l.Refused(conv, u, Interval{Why: id})
				l.TimedOp(conv, TimedOp{ID: id})
				l.ListRead(conv, ListRead{Region: id})
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()

	total := map[string]int{}
	for _, c := range l.Conversations() {
		msgs := l.Messages(c)
		for id, m := range msgs {
			var u, i int
			if _, err := fmt.Sscanf(id, "u%d-%d", &u, &i); err != nil || fmt.Sprintf("c%d", u%3) != c {
				t.Fatalf("message %s in conversation %s", id, c)
			}
			text := "t" + id
			want := []Msg{{Text: text}, {Deleted: true}, {Deleted: true, Maybe: []string{text}}, {Text: text, MaybeDeleted: true}}[i%4]
			if !reflect.DeepEqual(m, want) {
				t.Fatalf("%s/%s = %+v, want %+v", c, id, m, want)
			}
		}
		total["messages"] += len(msgs)
		total["history"] += len(l.History(c))
		total["reactions"] += len(l.Reactions(c))
		total["served"] += len(l.ServedWrites(c))
		total["refused"] += len(l.Refusals(c))
		total["ops"] += len(l.TimedOps(c))
		total["lists"] += len(l.ListReads(c))
	}
	for _, k := range slices.Sorted(maps.Keys(total)) {
		if total[k] != users*perUser {
			t.Fatalf("%s: %d recorded, want %d (all: %v)", k, total[k], users*perUser, total)
		}
	}
}

// servedTransport records the region that served the last answer and, for
// a new message refused with 423, the refusal with its body, which the
// caller still reads whole.
func TestServedTransportRecordsRegionAndNewMessageRefusals(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(api.ServedByHeader, "eu-"+r.Method)
		if strings.HasSuffix(r.URL.Path, "/messages") || r.Method == http.MethodPatch {
			w.WriteHeader(http.StatusLocked)
			_, _ = w.Write([]byte(`{"error":{"code":"locked"}}`))
		}
	}))
	defer srv.Close()
	hc := &http.Client{Transport: servedTransport{base: http.DefaultTransport}}
	for _, tc := range []struct {
		method, path string
		wantRegion   string
		wantRefusals int
	}{
		{http.MethodPost, "/v1/conversations/c/messages", "eu-POST", 1},
		{http.MethodPatch, "/v1/conversations/c/messages/m", "eu-PATCH", 0}, // a 423 on an edit is no new-message refusal
		{http.MethodGet, "/v1/conversations/c/messages", "eu-GET", 0},
	} {
		ctx, s := withServed(t.Context())
		req, err := http.NewRequestWithContext(ctx, tc.method, srv.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatalf("%s %s: body: %v", tc.method, tc.path, err)
		}
		rs := s.refusals()
		if s.get() != tc.wantRegion || len(rs) != tc.wantRefusals {
			t.Fatalf("%s %s: region %q refusals %+v, want %q and %d", tc.method, tc.path, s.get(), rs, tc.wantRegion, tc.wantRefusals)
		}
		if len(rs) == 1 && (rs[0].Why != string(b) || rs[0].End.Before(rs[0].Start)) {
			t.Fatalf("%s %s: refusal %+v, caller read body %q", tc.method, tc.path, rs[0], b)
		}
	}
}

package workload

import (
	"maps"
	"slices"
	"sync"
)

// Msg is what the clients know of one message: its last acknowledged state
// (Text, or Deleted), plus the outcomes of writes whose reply never came
// (cancelled in flight when the traffic stopped, or failed without a clear
// answer). Those may or may not have committed, so a checker accepts them
// too, and only them.
type Msg struct {
	Text    string
	Deleted bool
	// Maybe are texts of posts and edits with unknown outcome;
	// MaybeDeleted is a delete with unknown outcome.
	Maybe        []string
	MaybeDeleted bool
}

// Ledger records every message operation the clients attempted and how it
// ended: the ground truth of "nothing acknowledged is lost or resurrected".
// Safe for concurrent use.
type Ledger struct {
	mu     sync.Mutex
	msgs   map[string]map[string]*Msg // conversation → message id → state
	reacts map[string]map[ReactionKey]*Reaction
	// hist is every operation and read of a message in the order its one
	// writer (the user who posted it) did them.
	hist map[string]map[string][]Event
	// served is, per conversation, every acknowledged write with the
	// region that accepted it (served.go).
	served map[string][]Served
	// refused is, per conversation, every new message refused with 423.
	refused map[string][]Refusal
	// ops and lists are the timed operations and the whole-conversation
	// reads of every user (timed.go).
	ops   map[string][]TimedOp
	lists map[string][]ListRead
}

// EventKind is what an Event did.
type EventKind uint8

// Event kinds.
const (
	EventWrite  EventKind = iota // a post or an edit (Text)
	EventDelete                  // a delete
	EventRead                    // a read by the message's writer (Found, Text)
)

// Event is one operation on a message, or one read of it by its writer.
// A write or delete not Acked has an unknown outcome (it may have applied,
// even later than the writer's next operation).
type Event struct {
	Kind  EventKind
	Acked bool
	Text  string
	Found bool
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{msgs: map[string]map[string]*Msg{}} }

// Acked records an acknowledged post or edit of (conv, id) with text. The
// outcomes of earlier writes of unknown outcome stay possible: such a
// write may land after this one (as Event says, and check's writer reads
// allow), so it keeps Maybe and MaybeDeleted.
func (l *Ledger) Acked(conv, id, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.conv(conv)
	st := m[id]
	if st == nil {
		st = &Msg{}
		m[id] = st
	}
	st.Text, st.Deleted = text, false
	l.appendEvent(conv, id, Event{Kind: EventWrite, Acked: true, Text: text})
}

// AckedDelete records an acknowledged delete of (conv, id). A delete is
// terminal (an edit of a deleted message fails, a deleted id is never
// posted again), so no earlier uncertain write can show after it.
func (l *Ledger) AckedDelete(conv, id string) {
	l.set(conv, id, Msg{Deleted: true})
	l.event(conv, id, Event{Kind: EventDelete, Acked: true})
}

// ReadByWriter records what a read of (conv, id) by the message's writer
// returned: found with text, or not found.
func (l *Ledger) ReadByWriter(conv, id string, found bool, text string) {
	l.event(conv, id, Event{Kind: EventRead, Found: found, Text: text})
}

// History returns, for every message of conv that its writer read, its
// events in the writer's order.
func (l *Ledger) History(conv string) map[string][]Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]Event{}
	for id, es := range l.hist[conv] {
		if slices.ContainsFunc(es, func(e Event) bool { return e.Kind == EventRead }) {
			out[id] = slices.Clone(es)
		}
	}
	return out
}

func (l *Ledger) event(conv, id string, e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.appendEvent(conv, id, e)
}

// Uncertain records a post or edit (text) or a delete (deleted) of (conv,
// id) whose outcome is unknown.
func (l *Ledger) Uncertain(conv, id, text string, deleted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.conv(conv)
	st := m[id]
	if st == nil {
		st = &Msg{Deleted: true} // a post that may not have committed: absent is fine
		m[id] = st
	}
	if deleted {
		st.MaybeDeleted = true
		l.appendEvent(conv, id, Event{Kind: EventDelete})
	} else {
		st.Maybe = append(st.Maybe, text)
		l.appendEvent(conv, id, Event{Kind: EventWrite, Text: text})
	}
}

// appendEvent is event with l.mu held.
func (l *Ledger) appendEvent(conv, id string, e Event) {
	if l.hist == nil {
		l.hist = map[string]map[string][]Event{}
	}
	m := l.hist[conv]
	if m == nil {
		m = map[string][]Event{}
		l.hist[conv] = m
	}
	m[id] = append(m[id], e)
}

// Messages returns a copy of what the ledger knows of conv's messages.
func (l *Ledger) Messages(conv string) map[string]Msg {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]Msg, len(l.msgs[conv]))
	for id, m := range l.msgs[conv] {
		c := *m
		c.Maybe = slices.Clone(m.Maybe)
		out[id] = c
	}
	return out
}

// Conversations are the conversations the ledger knows, sorted.
func (l *Ledger) Conversations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(maps.Keys(l.msgs))
}

func (l *Ledger) set(conv, id string, s Msg) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.conv(conv)[id] = &s
}

func (l *Ledger) conv(conv string) map[string]*Msg {
	m := l.msgs[conv]
	if m == nil {
		m = map[string]*Msg{}
		l.msgs[conv] = m
	}
	return m
}

// ReactionKey names one user's emoji reaction to one message.
type ReactionKey struct{ Message, User, Emoji string }

// Reaction is what the clients know of one reaction: its last acknowledged
// state, or Maybe when the last change's outcome is unknown (either state
// is then acceptable). A removed reaction is a physical delete at the
// reactions service (a tombstone only under a hard-delete fence), so a
// reaction that comes back is a resurrection.
type Reaction struct {
	Present, Maybe bool
}

// AckedReaction records an acknowledged add (present) or remove of a
// reaction.
func (l *Ledger) AckedReaction(conv string, k ReactionKey, present bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reactionsOf(conv)[k] = &Reaction{Present: present}
}

// UncertainReaction records a reaction change whose outcome is unknown.
func (l *Ledger) UncertainReaction(conv string, k ReactionKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.reactionsOf(conv)
	if r := m[k]; r != nil {
		r.Maybe = true
		return
	}
	m[k] = &Reaction{Maybe: true}
}

// Reactions returns a copy of what the ledger knows of conv's reactions.
func (l *Ledger) Reactions(conv string) map[ReactionKey]Reaction {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[ReactionKey]Reaction, len(l.reacts[conv]))
	for k, r := range l.reacts[conv] {
		out[k] = *r
	}
	return out
}

func (l *Ledger) reactionsOf(conv string) map[ReactionKey]*Reaction {
	if l.reacts == nil {
		l.reacts = map[string]map[ReactionKey]*Reaction{}
	}
	m := l.reacts[conv]
	if m == nil {
		m = map[ReactionKey]*Reaction{}
		l.reacts[conv] = m
	}
	return m
}
